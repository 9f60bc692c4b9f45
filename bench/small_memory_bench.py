"""Close matches in a new memory: its alignment with and without the bundle's priors.

A translator's memory starts small, and the suggestion for the next segment repairs a match
from its first segments. Such a memory holds too few pairs for word-alignment priors of its own
(tm_guide.pieces.align: fewer than min_prior_pairs), so its alignment, and the repair that
trusts it, depends on the bundle's `alignment_priors.txt` (tm_guide.model.priors).

For each domain, the dev sentences whose best match in the domain's TM reaches --floor are
taken, up to --size; their best matches make a memory of their own, which is aligned twice:
alone (as before bundles shipped priors) and with the bundle's priors. Each dev sentence is then
translated against it with the model card's guidance. The table gives BLEU and chrF of the
best match's target and of each served translation against the references, and the sentences
whose served text is worse than the match (sentence chrF), each the mean over --runs
alignments (eflomal samples). Example:

    python bench/small_memory_bench.py --domains en-de debian-docs-en-de debian-guides-en-de

The domains are folders of bench/corpus/data (bench/corpus/README.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rapidfuzz import fuzz, process  # noqa: E402
from sacrebleu.metrics import BLEU, CHRF  # noqa: E402

from tm_guide.decoding.guidance import Guidance  # noqa: E402
from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions  # noqa: E402
from tm_guide.decoding.search import SearchOptions  # noqa: E402
from tm_guide.evaluation.testset import read_tsv  # noqa: E402
from tm_guide.model import Bundle  # noqa: E402
from tm_guide.pieces.align import AlignOptions, MemoryAligner  # noqa: E402
from tm_guide.records import SegmentRecord  # noqa: E402
from tm_guide.similarity import token_similarity  # noqa: E402
from tm_guide.store import Store  # noqa: E402

DATA = REPO / "bench" / "corpus" / "data"
MODEL = REPO / "tm_guide" / "models" / "demo-en-de"


def close_pairs(
    bundle: Bundle, domain: str, floor: float, size: int
) -> list[tuple[str, str, str, str, float]]:
    """(dev source, reference, match source, match target, similarity) of the first `size` dev
    sentences whose best TM match (eq. 9 over the model's source tokens) reaches `floor`."""
    tm = read_tsv(DATA / domain / "tm.tsv")
    dev = read_tsv(DATA / domain / "dev.tsv")
    tm_sources = tm.sources
    out = []
    for source, reference in zip(dev.sources, dev.references, strict=True):
        tokens = bundle.encode_source(source)
        best = None
        for _, _, index in process.extract(source, tm_sources, scorer=fuzz.ratio, limit=20):
            match_source, match_target = tm.sources[index], tm.references[index]
            score = token_similarity(tokens, bundle.encode_source(match_source))
            if best is None or score > best[4]:
                best = (source, reference, match_source, match_target, score)
        if best is not None and best[4] >= floor and best[2] != source:
            out.append(best)
        if len(out) == size:
            break
    return out


def served(
    bundle: Bundle, pairs: list[tuple[str, str, str, str, float]], base_priors: bool
) -> list[str]:
    """The dev sentences translated against a memory of their best matches alone."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{tmp}/tm.sqlite", index_dir=Path(tmp) / "index")
        try:
            card = bundle.card
            memory = store.create_memory("new", card.source_lang, card.target_lang)
            unique = sorted({(p[2], p[3]) for p in pairs})
            records = [SegmentRecord(source=s, target=t) for s, t in unique]
            store.import_records(memory, records)
            memory = store.get_memory(memory.id)
            aligner = MemoryAligner(store, bundle, AlignOptions(base_priors=base_priors))
            aligner.align_memory(memory, mode="full")
            translator = GuidedTranslator(bundle, store)
            options = Guidance.resolve(card).apply(
                TranslateOptions(
                    search=SearchOptions(beam_size=5, max_length=256),
                    memory_ids=(memory.id,),
                    max_length_ratio=2.0,
                )
            )
            results = translator.translate([p[0] for p in pairs], options)
            return [result.translation for result in results]
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=["en-de"])
    parser.add_argument("--floor", type=float, default=0.5)
    parser.add_argument("--size", type=int, default=150)
    parser.add_argument("--runs", type=int, default=3, help="alignments per memory (averaged)")
    args = parser.parse_args()
    bundle = Bundle.load(MODEL)
    if bundle.alignment_priors_path is None:
        raise SystemExit(f"{MODEL} ships no alignment_priors.txt (tm-guide model priors)")
    bleu, chrf = BLEU(), CHRF()
    print(
        "| domain | sentences | memory | match BLEU / chrF | served BLEU / chrF"
        " | worse than match |"
    )
    print("|---|---|---|---|---|---|")
    for domain in args.domains:
        pairs = close_pairs(bundle, domain, args.floor, args.size)
        references = [[p[1] for p in pairs]]
        matches = [p[3] for p in pairs]
        base = f"{bleu.corpus_score(matches, references).score:.2f} / "
        base += f"{chrf.corpus_score(matches, references).score:.2f}"
        for label, use in (("aligned alone", False), ("with bundle priors", True)):
            # eflomal samples: each alignment is a draw, so the scores are means over --runs
            bleus, chrfs, worse = [], [], []
            for _ in range(args.runs):
                outputs = served(bundle, pairs, use)
                bleus.append(bleu.corpus_score(outputs, references).score)
                chrfs.append(chrf.corpus_score(outputs, references).score)
                worse.append(
                    sum(
                        chrf.sentence_score(out, [p[1]]).score
                        < chrf.sentence_score(p[3], [p[1]]).score
                        for out, p in zip(outputs, pairs, strict=True)
                    )
                )
            mean_worse = sum(worse) / len(worse)
            print(
                f"| {domain} | {len(pairs)} | {label} | {base} | "
                f"{sum(bleus) / len(bleus):.2f} / {sum(chrfs) / len(chrfs):.2f} | "
                f"{mean_worse:.1f} ({mean_worse / len(pairs):.1%}) |"
            )


if __name__ == "__main__":
    main()
