"""The text rules run over human translations, which they should leave as they are.

    python bench/text_rules_on_references.py [--domain en-de ...] [--list N]

Bundle.set_right edits what the search wrote: a word written twice over (tm_guide.text.stutter),
a bracket left open (brackets.py), the marks and hyphens at a gap's seam (seams.py). Each rule is
written for model outputs, but a translator writes the same German: "vom Quer- ins Hochformat",
"Sind Sie sich sicher", "Beleuchtungsrichtung". So every pair of a domain's TM, dev and test sets
is run through each rule as if its target were a model's output guided by some other target;
each edit counted is one the rule would make to a correct translation, unless the translator
erred ("oder oder"). --list prints the first N edits of each rule. The domains are folders of
bench/corpus/data (bench/corpus/README.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tm_guide.evaluation.testset import read_tsv  # noqa: E402
from tm_guide.text.brackets import closed_brackets  # noqa: E402
from tm_guide.text.edits import Edited  # noqa: E402
from tm_guide.text.seams import set_seams  # noqa: E402
from tm_guide.text.stutter import stutter_passes  # noqa: E402

DATA = REPO / "bench" / "corpus" / "data"
# a target that guided the "output" and writes none of its words
OTHER = ("Ein anderer Satz.",)
RULES: dict[str, Callable[[str, str], Edited]] = {
    "stutter": lambda source, text: stutter_passes(source, text, OTHER)[0],
    "brackets": closed_brackets,
    "seams": lambda source, text: set_seams(source, text, OTHER),
}


def pairs(domain: str) -> list[tuple[str, str]]:
    """(source, target) of every line of the domain's TM, dev and test sets."""
    out: list[tuple[str, str]] = []
    for name in ("tm.tsv", "dev.tsv", "test.tsv"):
        found = read_tsv(DATA / domain / name)
        out += zip(found.sources, found.references, strict=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", action="append", help="a folder of bench/corpus/data")
    parser.add_argument("--list", type=int, default=0, help="print N edits of each rule")
    args = parser.parse_args(argv)
    domains = args.domain or ["en-de", "debian-docs-en-de", "debian-guides-en-de"]
    for domain in domains:
        if not (DATA / domain / "tm.tsv").exists():
            raise SystemExit(f"no domain at {DATA / domain}: build it (bench/corpus/README.md)")
    print("| domain | translations | " + " | ".join(RULES) + " |")
    print("|---|---|" + "---|" * len(RULES))
    listed: dict[str, list[str]] = {rule: [] for rule in RULES}
    for domain in domains:
        found = pairs(domain)
        counts = dict.fromkeys(RULES, 0)
        for source, target in found:
            for rule, apply in RULES.items():
                edited = apply(source, target)
                if edited.edits:
                    counts[rule] += 1
                    start, end, _ = edited.edits[0]
                    listed[rule].append(f"{target[max(0, start - 30) : end + 20]!r}")
        cells = " | ".join(str(counts[rule]) for rule in RULES)
        print(f"| {domain} | {len(found):,} | {cells} |")
    for rule, lines in listed.items():
        for line in lines[: args.list]:
            print(f"{rule}: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
