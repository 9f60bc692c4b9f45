r"""What CAT content comes back through Weblate's own machinery classes: placeholders, tags, lines.

Reads the German gettext catalogues installed under /usr/share/locale/de/LC_MESSAGES (Debian
packages' .mo files; --catalogues for others) and builds two sets of msgids with their German
msgstr as reference:

  markup     msgids with c-format or python-format placeholders, brace placeholders or tags
             (at most --per-kind of each kind, spread over the catalogues)
  multiline  msgids of 3 lines or more

Starts `tm-guide serve` (SQLite, the bundled demo model) on a free loopback port with an empty
memory, then translates every msgid through Weblate 5.14.3's LibreTranslate, ModernMT and DeepL
classes (tests/server/weblate_harness: Weblate's own code, which replaces placeholders by its
markers before sending and puts them back after), in batches of 20 as Weblate sends them, and
prints per class:

  kept       msgids whose placeholders and tags all came back exactly once
  lines      multi-line msgids whose line count came back
  edges      msgids whose leading and trailing whitespace came back exactly
  len        median output/reference length (characters) over the multi-line msgids
  U+FFFD     outputs holding a replacement character (broken bytes)
  s          wall time of the class's calls

Example (the PyPI Weblate wheel is fetched once, as the tests fetch it):

  python bench/cat_content_bench.py --per-kind 80
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from local_server import REPO, LocalServer, catalogue_pairs, installed_catalogues

sys.path.insert(0, str(REPO / "tests" / "server"))

KINDS = {
    "c-format": re.compile(r"%(?:\d+\$)?[-+0#]*\d*(?:\.\d+)?(?:l|ll|h|z|j)?[diouxXeEfgcsp]"),
    "python-format": re.compile(r"%\([A-Za-z_]\w*\)[sd]"),
    "brace": re.compile(r"\{[A-Za-z0-9_]*\}"),
    "markup": re.compile(r"</?[A-Za-z][^<>]*>"),
}
NON_TRANSLATABLE = re.compile("|".join(p.pattern for p in KINDS.values()))


def pick(pairs: list[tuple[str, str]], per_kind: int, seed: int) -> dict[str, list]:
    rng = random.Random(seed)
    rng.shuffle(pairs)
    chosen: dict[str, list] = {kind: [] for kind in KINDS}
    multiline: list[tuple[str, str]] = []
    seen: set[str] = set()
    for source, target in pairs:
        if source in seen:
            continue
        if source.count("\n") >= 2 and len(multiline) < per_kind:
            multiline.append((source, target))
            seen.add(source)
            continue
        for kind, pattern in KINDS.items():
            if pattern.search(source) and len(chosen[kind]) < per_kind:
                chosen[kind].append((source, target))
                seen.add(source)
                break
    markup = [pair for kind in KINDS for pair in chosen[kind]]
    return {
        "markup": markup,
        "multiline": multiline,
        "kinds": {k: len(v) for k, v in chosen.items()},
    }


def kept(source: str, output: str) -> bool:
    return Counter(NON_TRANSLATABLE.findall(source)) == Counter(NON_TRANSLATABLE.findall(output))


def edges(text: str) -> tuple[str, str]:
    return text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalogues", type=Path, nargs="*", default=installed_catalogues())
    parser.add_argument("--per-kind", type=int, default=80)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    import weblate_harness

    weblate = weblate_harness.load(Path.home() / ".cache" / "tm-guide-tests")
    pairs = [(s, t) for s, t in catalogue_pairs(args.catalogues) if len(s) < 2000]
    sets = pick(pairs, args.per_kind, args.seed)
    print(
        f"{len(args.catalogues)} catalogues; markup set {len(sets['markup'])} msgids "
        f"({', '.join(f'{k} {n}' for k, n in sets['kinds'].items())}), "
        f"multiline set {len(sets['multiline'])} msgids (3+ lines)\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        server = LocalServer(Path(tmp))
        server.create_memory("bench")
        base, key = server.base, server.key
        try:
            rows = []
            for name, path in (
                ("LibreTranslate", "libretranslate/"),
                ("ModernMT", "modernmt/"),
                ("DeepL", "deepl/v2/"),
            ):
                service = getattr(weblate, name)({"url": f"{base}/{path}", "key": key})
                source, target = service.get_languages(
                    weblate.Language("en"), weblate.Language("de")
                )
                outputs: dict[str, str] = {}
                started = time.perf_counter()
                texts = [s for s, _ in sets["markup"] + sets["multiline"]]
                for i in range(0, len(texts), 20):
                    batch = [(t, weblate_harness.unit()) for t in texts[i : i + 20]]
                    found = service._translate(source, target, batch, threshold=10)
                    outputs.update(
                        {t: found[t][0]["text"] if found.get(t) else "" for t, _ in batch}
                    )
                seconds = time.perf_counter() - started
                weblate_harness.clear_cache()
                markup = sets["markup"]
                multi = sets["multiline"]
                every = markup + multi
                rows.append(
                    (
                        name,
                        sum(kept(s, outputs[s]) for s, _ in markup) / len(markup),
                        sum(outputs[s].count("\n") == s.count("\n") for s, _ in multi) / len(multi),
                        sum(edges(outputs[s]) == edges(s) for s, _ in every) / len(every),
                        statistics.median(len(outputs[s]) / max(1, len(r)) for s, r in multi),
                        sum("\ufffd" in outputs[s] for s, _ in every),
                        seconds,
                    )
                )
        finally:
            server.stop()
    print("| class | kept (markup) | lines (multiline) | edges (all) | len median | U+FFFD | s |")
    print("|---|---|---|---|---|---|---|")
    for name, k, lines, edge, length, fffd, seconds in rows:
        cells = [name, f"{k:.1%}", f"{lines:.1%}", f"{edge:.1%}", f"{length:.2f}", str(fffd)]
        print("| " + " | ".join([*cells, f"{seconds:.0f}"]) + " |")


if __name__ == "__main__":
    main()
