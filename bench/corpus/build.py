"""Build the LibreOffice-help benchmark (TM/dev/test) and the training corpus (gettext, KDE).

Usage (from the repository root):
    python3 bench/corpus/build.py                    # en-de benchmark + training corpus
    python3 bench/corpus/build.py --langs fr es --no-train

Everything comes from Debian packages fetched with `apt-get download` into bench/corpus/cache/
and unpacked with dpkg-deb (nothing is installed). Outputs go to bench/corpus/data/.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parents[1]))  # the repository root, for tm_guide (TMX writer)

from catalogues import CleaningOptions, clean_pairs, read_mo  # noqa: E402
from debs import download, extract, iter_members  # noqa: E402
from doc_pairs import GUIDES, MANUALS, Manual, pair_manual  # noqa: E402
from help_pairs import pair_pages  # noqa: E402
from kde_docs import KDOCTOOLS_PACKAGE, entity_tables, is_docbook, is_entity_file  # noqa: E402
from kde_docs import PACKAGES as KDE_PACKAGES  # noqa: E402
from kde_docs import collect as collect_docbooks  # noqa: E402
from kde_docs import pair_all as pair_handbooks  # noqa: E402
from similarity import best_match_similarities, shares  # noqa: E402

HELP_PACKAGES = {
    "en": ("libreoffice-help-en-us", "en-US"),
    "de": ("libreoffice-help-de", "de"),
    "fr": ("libreoffice-help-fr", "fr"),
    "es": ("libreoffice-help-es", "es"),
}

# Debian bookworm packages whose German gettext catalogues make the training corpus.
# Never the LibreOffice help or UI catalogues (the domain under test), gimp-help or gnome-user-docs.
CATALOGUE_PACKAGES = sorted(
    [
        "abiword-common",
        "aisleriot",
        "alsa-utils",
        "apt",
        "aptitude-common",
        "audacity-data",
        "balsa",
        "bash",
        "binutils-common",
        "bison",
        "brasero-common",
        "caja-common",
        "cinnamon-l10n",
        "claws-mail-i18n",
        "clamav",
        "coreutils",
        "cups-common",
        "darktable",
        "debconf-i18n",
        "dia-common",
        "diffutils",
        "digikam-data",
        "dolphin",
        "dpkg",
        "e2fsprogs-l10n",
        "epiphany-browser-data",
        "evince-common",
        "evolution-common",
        "evolution-data-server-common",
        "evolution-plugins",
        "filezilla-common",
        "findutils",
        "fontforge-common",
        "freeciv-data",
        "gcc-12-locales",
        "gdm3",
        "geany-common",
        "gedit-common",
        "gettext",
        "gettext-base",
        "gimp",
        "gimp-data",
        "git",
        "glade",
        "gnome-boxes",
        "gnome-builder",
        "gnome-calendar",
        "gnome-commander-data",
        "gnome-control-center-data",
        "gnome-disk-utility",
        "gnome-maps",
        "gnome-online-accounts",
        "gnome-shell-common",
        "gnome-software-common",
        "gnome-terminal-data",
        "gnucash-common",
        "gnumeric-common",
        "gnupg-l10n",
        "gparted",
        "gramps",
        "grep",
        "grub-common",
        "gthumb-data",
        "gucharmap",
        "gwenview",
        "hexchat-common",
        "inkscape",
        "k3b-i18n",
        "kate",
        "kdenlive-data",
        "kdevelop-l10n",
        "kmail",
        "kmymoney",
        "konsole",
        "korganizer",
        "krusader",
        "ktexteditor-data",
        "libc-l10n",
        "libglib2.0-data",
        "libgphoto2-l10n",
        "libgtk-3-common",
        "libgtk-4-common",
        "libgtk2.0-common",
        "libgweather-4-common",
        "libsane-common",
        "lxde-common",
        "lynx-common",
        "make",
        "mate-desktop-common",
        "mc-data",
        "meld",
        "mousepad",
        "mutt",
        "nano",
        "nautilus-data",
        "nemo-data",
        "network-manager",
        "okular",
        "pcmanfm",
        "pidgin-data",
        "plasma-workspace-data",
        "pluma-common",
        "poedit-common",
        "postgresql-15",
        "pulseaudio",
        "quodlibet",
        "r-base-core",
        "rhythmbox-data",
        "sed",
        "shotwell-common",
        "simple-scan",
        "skrooge-common",
        "sylpheed-i18n",
        "synaptic",
        "system-config-printer-common",
        "tar",
        "tellico-data",
        "texinfo",
        "thunar-data",
        "totem-common",
        "transmission-common",
        "util-linux-locales",
        "vim-runtime",
        "vlc-l10n",
        "wget",
        "xfce4-panel",
        "xfce4-settings",
        "xfdesktop4-data",
        "xournal",
        "xscreensaver-data",
        "zim",
    ]
)
GERMAN_MO = re.compile(r"/de(?:_DE)?(?:\.UTF-8)?/LC_MESSAGES/[^/]+\.mo$")


@dataclass(frozen=True)
class SplitOptions:
    """How help pages are divided between test, dev and the TM."""

    seed: int = 13
    test_share: float = 0.05
    dev_share: float = 0.025


@dataclass
class Split:
    tm: list[tuple[str, str]] = field(default_factory=list)
    dev: list[tuple[str, str]] = field(default_factory=list)
    test: list[tuple[str, str]] = field(default_factory=list)
    pages: dict[str, int] = field(default_factory=dict)


def unique(pairs: list[tuple[str, str]], by_source: bool) -> list[tuple[str, str]]:
    """Drop repeated pairs (or repeated sources), keeping the first occurrence."""
    seen: set[object] = set()
    kept = []
    for pair in pairs:
        key = pair[0] if by_source else pair
        if key not in seen:
            seen.add(key)
            kept.append(pair)
    return kept


def split_pages(pages: list, options: SplitOptions) -> Split:
    """Seeded split by whole page; dev and test keep unique sources and real translations."""
    order = list(pages)
    random.Random(options.seed).shuffle(order)
    n_test = round(len(order) * options.test_share)
    n_dev = round(len(order) * options.dev_share)
    split = Split(pages={"test": n_test, "dev": n_dev, "tm": len(order) - n_test - n_dev})
    for index, page in enumerate(order):
        part = split.test if index < n_test else split.dev if index < n_test + n_dev else split.tm
        part.extend(page.pairs)
    split.tm = unique(split.tm, by_source=False)
    split.test = unique([p for p in split.test if p[0] != p[1]], by_source=True)
    test_sources = {source for source, _ in split.test}
    split.dev = unique(
        [p for p in split.dev if p[0] != p[1] and p[0] not in test_sources], by_source=True
    )
    return split


def write_tsv(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for source, target in pairs:
            out.write(f"{source}\t{target}\n")


def read_tsv(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [tuple(line.rstrip("\n").split("\t", 1)) for line in handle]  # type: ignore[misc]


def write_tmx_if_available(path: Path, pairs: list[tuple[str, str]], target_lang: str) -> bool:
    """Write the TM as TMX through tm_guide.formats (skipped where tm_guide is not importable)."""
    try:
        from tm_guide.formats import write_tmx
        from tm_guide.records import SegmentRecord
    except ImportError as error:
        print(f"TMX not written ({error}); the TSV files hold the same data")
        return False
    records = (SegmentRecord(source=s, target=t) for s, t in pairs)
    write_tmx(path, source_lang="en", target_lang=target_lang, segments=records)
    return True


def build_help(lang: str, cache: Path, out: Path, options: SplitOptions, stats: bool) -> dict:
    packages = [HELP_PACKAGES["en"][0], HELP_PACKAGES[lang][0]]
    debs = download(packages, cache / "debs")
    roots = {}
    for code in ("en", lang):
        package, folder = HELP_PACKAGES[code]
        unpacked = extract(debs[package], cache / "unpacked" / package)
        roots[code] = unpacked / "usr/share/libreoffice/help" / folder
    print(f"pairing help pages en-{lang} ...")
    pages = pair_pages(roots["en"], roots[lang])
    split = split_pages(pages, options)
    folder = out / f"en-{lang}"
    for name in ("tm", "dev", "test"):
        write_tsv(folder / f"{name}.tsv", getattr(split, name))
    report = {
        "pair": f"en-{lang}",
        "split_options": asdict(options),
        "pages": split.pages,
        "segments": {name: len(getattr(split, name)) for name in ("tm", "dev", "test")},
        "tmx": write_tmx_if_available(folder / "tm.tmx", split.tm, lang),
    }
    stats_file = folder / "stats.json"
    if stats:
        best = best_match_similarities([s for s, _ in split.test], [s for s, _ in split.tm])
        report["test_best_match_share"] = shares(best)
    elif stats_file.exists():  # same split as before: keep the shares measured then
        previous = json.loads(stats_file.read_text())
        if previous.get("segments") == report["segments"] and "test_best_match_share" in previous:
            report["test_best_match_share"] = previous["test_best_match_share"]
    stats_file.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


def build_manuals(
    manuals: tuple[Manual, ...],
    name: str,
    cache: Path,
    out: Path,
    options: SplitOptions,
    stats: bool,
) -> dict:
    """A domain of Debian manuals (doc_pairs.py) into data/<name>, split by section like the
    help, and then with every dev and test source that the TM holds removed, so that no test
    sentence has a verbatim match and the guided translation has to earn every point."""
    packages = sorted({package for manual in manuals for package in manual.packages})
    debs = download(packages, cache / "debs")
    roots = {p: extract(debs[p], cache / "unpacked" / p) for p in packages}
    sections, skipped = [], []
    for manual in manuals:
        found, missed = pair_manual(manual, roots)
        sections += found
        skipped += missed
    split = split_pages(sections, options)
    in_tm = {source for source, _ in split.tm}
    split.test = [p for p in split.test if p[0] not in in_tm]
    split.dev = [p for p in split.dev if p[0] not in in_tm]
    folder = out / name
    for part in ("tm", "dev", "test"):
        write_tsv(folder / f"{part}.tsv", getattr(split, part))
    report = {
        "domain": "Debian manuals: " + ", ".join(m.name for m in manuals),
        "split_options": asdict(options),
        "sections": split.pages,
        "pages_skipped": skipped,
        "segments": {part: len(getattr(split, part)) for part in ("tm", "dev", "test")},
        "tmx": write_tmx_if_available(folder / "tm.tmx", split.tm, "de"),
    }
    if stats:
        best = best_match_similarities([s for s, _ in split.test], [s for s, _ in split.tm])
        report["test_best_match_share"] = shares(best)
    (folder / "stats.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


def catalogue_pairs(cache: Path, options: CleaningOptions) -> tuple[list, int, dict]:
    """Cleaned gettext pairs of the catalogue packages, the raw count and the count per package."""
    debs = download(CATALOGUE_PACKAGES, cache / "debs")
    pairs: list[tuple[str, str]] = []
    raw_count = 0
    per_package = {}
    for package in tqdm(CATALOGUE_PACKAGES, desc="catalogues", unit="pkg"):
        before = len(pairs)
        for _, data in iter_members(debs[package], lambda name: bool(GERMAN_MO.search(name))):
            raw = list(read_mo(data))
            raw_count += len(raw)
            pairs.extend(clean_pairs(raw, options))
        per_package[package] = len(pairs) - before
    return pairs, raw_count, per_package


def handbook_pairs(cache: Path, options: CleaningOptions) -> tuple[list, int, dict]:
    """Cleaned block pairs of the KDE handbooks, the raw count and the sections skipped."""
    debs = download([*KDE_PACKAGES, KDOCTOOLS_PACKAGE], cache / "debs")
    entities = entity_tables(iter_members(debs[KDOCTOOLS_PACKAGE], is_entity_file))
    docbooks: dict[str, dict[str, bytes]] = {"en": {}, "de": {}}
    for package in tqdm(KDE_PACKAGES, desc="handbooks", unit="pkg"):
        for lang, found in collect_docbooks(iter_members(debs[package], is_docbook)).items():
            docbooks[lang].update(found)
    pairs: list[tuple[str, str]] = []
    raw_count = skipped = pages = 0
    for _, page_pairs, page_skipped in pair_handbooks(docbooks, entities):
        pages += 1
        raw_count += len(page_pairs)
        skipped += page_skipped
        pairs.extend(clean_pairs(page_pairs, options))
    return pairs, raw_count, {"pages": pages, "sections_skipped": skipped}


def build_training(cache: Path, out: Path, seed: int, held_out: set[str]) -> dict:
    """The training TSV: UI catalogues and KDE handbooks, cleaned, deduplicated, shuffled."""
    options = CleaningOptions()
    catalogues, raw_count, per_package = catalogue_pairs(cache, options)
    handbooks, handbook_raw, handbook_report = handbook_pairs(cache, options)
    pairs = catalogues + handbooks
    cleaned = len(pairs)
    pairs = unique(pairs, by_source=False)
    deduped = len(pairs)
    pairs = [p for p in pairs if p[0].lower() not in held_out]
    random.Random(seed).shuffle(pairs)
    write_tsv(out / "train" / "en-de.tsv", pairs)
    report = {
        "description": (
            f"German gettext catalogues (.mo) of {len(CATALOGUE_PACKAGES)} Debian bookworm "
            f"packages and the KDE handbooks (DocBook) of {len(KDE_PACKAGES)}, cleaned "
            "(bench/corpus/build.py); no LibreOffice help or UI text"
        ),
        "packages": len(CATALOGUE_PACKAGES),
        "raw_pairs": raw_count,
        "handbook_packages": len(KDE_PACKAGES),
        "handbook_pages": handbook_report["pages"],
        "handbook_sections_skipped": handbook_report["sections_skipped"],
        "handbook_raw_pairs": handbook_raw,
        "handbook_after_cleaning": len(handbooks),
        "after_cleaning": cleaned,
        "unique_pairs": deduped,
        "after_removing_dev_test_sources": len(pairs),
        "per_package": per_package,
    }
    (out / "train" / "stats.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "per_package"}, indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langs", nargs="+", default=["de"], choices=["de", "fr", "es"])
    parser.add_argument(
        "--docs",
        action="store_true",
        help="also build the second domain (Debian manuals, en-de) into data/debian-docs-en-de",
    )
    parser.add_argument(
        "--guides",
        action="store_true",
        help="also build the third domain (Debian guides, en-de) into data/debian-guides-en-de",
    )
    parser.add_argument("--no-train", action="store_true", help="skip the training corpus")
    parser.add_argument("--no-stats", action="store_true", help="skip the TM match statistics")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--out", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    options = SplitOptions(seed=args.seed)
    for lang in args.langs:
        build_help(lang, args.cache, args.out, options, stats=not args.no_stats)
    if args.docs:
        # the manuals hold a fifth of the help's segments: three times the shares give a test set
        # of a useful size
        docs = SplitOptions(seed=args.seed, test_share=0.15, dev_share=0.075)
        build_manuals(MANUALS, "debian-docs-en-de", args.cache, args.out, docs, not args.no_stats)
    if args.guides:  # the same shares as the manuals': the guides are of a similar size
        guides = SplitOptions(seed=args.seed, test_share=0.15, dev_share=0.075)
        build_manuals(
            GUIDES, "debian-guides-en-de", args.cache, args.out, guides, not args.no_stats
        )
    if not args.no_train:
        held_out = {
            source.lower()
            for name in ("dev", "test")
            for source, _ in read_tsv(args.out / "en-de" / f"{name}.tsv")
        }
        build_training(args.cache, args.out, args.seed, held_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
