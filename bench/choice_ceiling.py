"""How far choosing among a sentence's candidates could take half-H, against its references.

    python bench/choice_ceiling.py REPORT_DIR [REPORT_DIR ...]

Issue #39 asks the served suggestion to beat the best match by 5 BLEU on the half of a test
set with the closest matches (half-H). Where the served text is already one of the candidates a
sentence has (the match's target, the repaired or guided translation, the unguided one), no
rule that chooses among them can do better than an oracle that takes, for each sentence, the
candidate closest to its reference (sentence chrF). This prints, per report (a `tm-guide eval
--output` folder), half-H's BLEU for the served text, the best match, and the oracles over
the served text and the match, and over all four systems the report holds, with each one's
difference from the best match: the head room a better choice has before the candidates
themselves must get better.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SYSTEMS = ("served", "best_match", "guided", "unguided")


def main(argv: list[str] | None = None) -> int:
    from sacrebleu.metrics import BLEU, CHRF

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+", help="`tm-guide eval --output` folders")
    args = parser.parse_args(argv)
    bleu, chrf = BLEU(), CHRF()

    def corpus(texts: list[str], refs: list[str]) -> float:
        return float(bleu.corpus_score(texts, [refs]).score)

    def oracle(sentence: dict[str, object], systems: tuple[str, ...]) -> str:
        reference = [str(sentence["reference"])]
        texts = [str(sentence[s]) for s in systems]
        return max(texts, key=lambda t: chrf.sentence_score(t, reference).score)

    print("| report | half-H | served | best match | oracle served/match | oracle of 4 |")
    print("|---|---|---|---|---|---|")
    for folder in args.reports:
        sentences = json.loads((folder / "results.json").read_text(encoding="utf-8"))["sentences"]
        ranked = sorted(sentences, key=lambda s: -float(s["similarity"]))
        high = ranked[: len(ranked) // 2]
        refs = [str(s["reference"]) for s in high]
        match = corpus([str(s["best_match"]) for s in high], refs)
        cells = [
            corpus([str(s["served"]) for s in high], refs),
            match,
            corpus([oracle(s, SYSTEMS[:2]) for s in high], refs),
            corpus([oracle(s, SYSTEMS) for s in high], refs),
        ]
        shown = [f"{c:.2f} ({c - match:+.2f})" for c in cells]
        print(f"| {folder.name} | {len(high)} | " + " | ".join(shown) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
