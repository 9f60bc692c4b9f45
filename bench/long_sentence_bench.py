"""Long single sentences translated whole or clause by clause (tm_guide.text.layout).

Takes every sentence of the corpus's dev (or test) sets that sentencex leaves whole and that has
at least --min-words words, translates it with the bundled model alone (beam 5), whole and cut
into clauses of at most N words for each N of --max-words, and prints a table: BLEU, chrF, the
median output/reference length and the share of outputs shorter than 0.7 of their reference
(content dropped).

    python bench/long_sentence_bench.py --set dev --max-words 0 40 30 20

The domains are folders of bench/corpus/data (bench/corpus/README.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sacrebleu.metrics import BLEU, CHRF  # noqa: E402
from sentencex import segment  # noqa: E402

from tm_guide.config import BUNDLED_MODEL  # noqa: E402
from tm_guide.evaluation.testset import read_tsv  # noqa: E402
from tm_guide.model import Bundle  # noqa: E402
from tm_guide.text.layout import layout_of  # noqa: E402

DATA = REPO / "bench" / "corpus" / "data"


def long_sentences(domains: list[str], part: str, min_words: int) -> list[tuple[str, str]]:
    """(source, reference) of every single sentence of at least `min_words` words."""
    found = []
    for domain in domains:
        data = read_tsv(DATA / domain / f"{part}.tsv")
        for source, reference in zip(data.sources, data.references, strict=True):
            if len(source.split()) >= min_words and len(list(segment("en", source))) == 1:
                found.append((source, reference))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--domains", nargs="+", default=["debian-docs-en-de", "debian-guides-en-de", "en-de"]
    )
    parser.add_argument("--set", dest="part", choices=("dev", "test"), default="dev")
    parser.add_argument("--min-words", type=int, default=35)
    parser.add_argument("--max-words", type=int, nargs="+", default=[0, 40, 30, 20])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    bundle = Bundle.load(BUNDLED_MODEL, intra_threads=args.threads)

    def translate(texts: list[str]) -> list[str]:
        inputs = [bundle.source_input(bundle.encode_source(text)) for text in texts]
        outputs = bundle.translator.translate_batch(
            inputs, beam_size=5, max_decoding_length=bundle.decoding_length(256)
        )
        return [bundle.decode_target(output.hypotheses[0]) for output in outputs]

    rows = long_sentences(args.domains, args.part, args.min_words)
    references = [reference for _, reference in rows]
    print(f"{len(rows)} single {args.part} sentences of {args.min_words} words or more\n")
    print("| clauses of at most | BLEU | chrF | median length | shorter than 0.7 |")
    print("|---|---|---|---|---|")
    for max_words in args.max_words:
        outputs = []
        for source, _ in rows:
            layout = layout_of(source, "en", max_words)
            outputs.append(layout.join(translate(list(layout.units))))
        ratios = [len(o) / len(r) for o, r in zip(outputs, references, strict=True)]
        bleu = BLEU().corpus_score(outputs, [references]).score
        chrf = CHRF().corpus_score(outputs, [references]).score
        short = sum(r < 0.7 for r in ratios) / max(len(ratios), 1)
        label = f"{max_words} words" if max_words else "whole"
        print(
            f"| {label} | {bleu:.2f} | {chrf:.2f} | {statistics.median(ratios):.3f} |"
            f" {100 * short:.1f}% |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
