"""Served outputs that hold a word found nowhere in the domain's German text.

    python bench/unknown_words.py REPORT_DIR [--domain en-de] [--list]

A word glued across a seam ("desinhalts"), cut ("Zeichenspezif") or made up in a repair gap
("Arbeitensbilder") is rarely a word of the domain: it is in no TM target, dev or test reference.
So counting the outputs that hold such a word, among those that differ from the best match,
gives a number to compare two runs of `tm-guide eval` by before the outputs are read. It is a
proxy: a new compound the model writes rightly counts too, so read the list (--list). The
report is a `tm-guide eval --output` folder (its results.json); the domain is a folder of
bench/corpus/data (bench/corpus/README.md). A word of the input (a name, an identifier) is not
counted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "corpus" / "data"
WORD = re.compile(r"[^\W_]+")
BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.01))


def lexicon(folder: Path) -> set[str]:
    """Every word (lower-cased) of the domain's TSV files: the TM, dev and test sets."""
    words: set[str] = set()
    for name in ("tm.tsv", "dev.tsv", "test.tsv"):
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            words.update(w.lower() for w in WORD.findall(line))
    return words


def unknown(sentence: dict[str, object], known: set[str]) -> list[str]:
    """The served output's words found neither in the domain nor among the input's words (a
    part of one is not: "LibreOffi" cut from the source's "LibreOffice" counts)."""
    source = set(WORD.findall(str(sentence["source"])))
    return [
        w
        for w in WORD.findall(str(sentence["served"]))
        if w.lower() not in known and w not in source
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a `tm-guide eval --output` folder")
    parser.add_argument("--domain", default="en-de", help="a folder of bench/corpus/data")
    parser.add_argument("--list", action="store_true", help="print each output counted")
    args = parser.parse_args(argv)

    folder = DATA / args.domain
    if not (folder / "tm.tsv").exists():
        raise SystemExit(f"no domain at {folder}: build it (bench/corpus/README.md)")
    known = lexicon(folder)
    sentences = json.loads((args.report / "results.json").read_text(encoding="utf-8"))["sentences"]
    rows = []
    for low, high in BANDS:
        changed = flagged = 0
        for sentence in sentences:
            if (
                not low <= sentence["similarity"] < high
                or sentence["served"] == sentence["best_match"]
            ):
                continue
            changed += 1
            words = unknown(sentence, known)
            flagged += bool(words)
            if words and args.list:
                where = f"{sentence['line']}\t{sentence['similarity']:.2f}"
                print(f"{where}\t{', '.join(words)}\t{sentence['served']}")
        rows.append((f"{low:.1f}-{min(high, 1.0):.1f}", changed, flagged))
    print("\n| similarity | served differs from the match | with an unknown word | share |")
    print("|---|---|---|---|")
    for band, changed, flagged in rows:
        share = f"{100 * flagged / changed:.1f}%" if changed else "-"
        print(f"| {band} | {changed} | {flagged} | {share} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
