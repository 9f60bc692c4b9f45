"""How far to trust a TM match: piece-weight rules and lambdas compared on a dev (or test) set.

Pieces are collected once per sentence (M matches, the model card's reward rule); each rule maps a
piece's eq. 8 score (the best similarity it came from) to the weight the search rewards, and the
lambda grid multiplies it. Printed per configuration: BLEU on the whole set, on its halves split at
the median best-match similarity (the paper's half-H / half-L), and per similarity band, next to
the unguided model, the best TM match's target, and the suggestion as served (a verbatim TM match
gives its target, chosen as the server and `tm-guide eval` choose it).

    python bench/guidance_bench.py --db sqlite:///eval.sqlite --memory eval-tm \
        --set bench/corpus/data/en-de/dev.tsv --rules linear,power:2,power:4 --lambdas 3,6,10

The store must hold the memory aligned (`tm-guide import` then `tm-guide align`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tm_guide.config import BUNDLED_MODEL
from tm_guide.evaluation.baseline import Candidate, best_match_target
from tm_guide.evaluation.repetition import repeated_outputs
from tm_guide.evaluation.runner import served_outputs
from tm_guide.evaluation.scoring import corpus_score, subset
from tm_guide.evaluation.similarity import median_split
from tm_guide.evaluation.testset import read_tsv
from tm_guide.pieces.repair import RepairOptions

BANDS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


@dataclass(frozen=True)
class ScoredSet:
    """A set's sources and references, split into halves and similarity bands."""

    sources: Sequence[str]
    refs: Sequence[str]
    split: Any
    bands: list[list[int]]

    @classmethod
    def of(
        cls, sources: Sequence[str], refs: Sequence[str], similarities: Sequence[float]
    ) -> ScoredSet:
        bands = [[i for i, s in enumerate(similarities) if lo <= s < hi] for lo, hi in BANDS]
        return cls(sources, refs, median_split(similarities), bands)

    def row(self, name: str, outputs: Sequence[str]) -> str:
        """BLEU on the set, its halves and bands; the last cell counts repeated outputs."""
        refs = self.refs
        cells = [corpus_score(outputs, refs).bleu]
        for part in (self.split.high, self.split.low):
            cells.append(corpus_score(subset(outputs, part), subset(refs, part)).bleu)
        for idx in self.bands:
            cells.append(corpus_score(subset(outputs, idx), subset(refs, idx)).bleu if idx else 0.0)
        repeats = repeated_outputs(outputs, self.sources)
        return f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {repeats} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--memory", required=True)
    parser.add_argument("--set", required=True, help="TSV of source<TAB>reference")
    parser.add_argument("--model", default=str(BUNDLED_MODEL))
    parser.add_argument(
        "--rules",
        default="linear",
        help="comma-separated PieceWeighting specs, each optionally with +clipped "
        "(PieceOptions.clipped)",
    )
    parser.add_argument("--lambdas", default="6")
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--engine", default="auto")
    parser.add_argument(
        "--candidates",
        default="",
        help="comma-separated similarities T: also report the guided output chosen against the "
        "TM targets of matches with similarity >= T, by the search's own score",
    )
    parser.add_argument(
        "--repair",
        default="",
        help="comma-separated similarities T: also decode with the best match's target repaired "
        "where its similarity is >= T (PieceOptions.repair)",
    )
    parser.add_argument("--gap", default="1:1", help="repair gaps, SCALE:MARGIN")
    args = parser.parse_args()

    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
    from tm_guide.model import Bundle
    from tm_guide.store import Store

    data = read_tsv(Path(args.set))
    if args.limit:
        data = data.sample(args.limit, 1)
    sources, refs = data.sources, data.references
    bundle = Bundle.load(args.model, intra_threads=1)
    store = Store.open(args.db)
    memory = store.get_memory(args.memory)
    translator = GuidedTranslator(bundle, store)
    card = bundle.card
    plain = TranslateOptions(
        engine=EngineOptions(engine=args.engine, threads=1),
        memory_ids=(memory.id,),
        max_length_ratio=2.0,
    )
    # the card's guidance, unguided: the pieces that give each sentence its best match
    base = Guidance.resolve(card, lam=0.0, repair="off", m=args.m).apply(plain)
    started = time.perf_counter()
    pieces = [translator.collect_pieces(bundle.encode_source(s), base) for s in sources]
    print(f"pieces for {len(sources)} sentences in {time.perf_counter() - started:.1f} s")
    similarities = [
        max((m.similarity for m in p.matches), default=0.0) if p is not None else 0.0
        for p in pieces
    ]
    scored = ScoredSet.of(sources, refs, similarities)
    split, bands = scored.split, scored.bands  # for the header

    def decode(options: Any, found: Sequence[Any]) -> list[str]:
        out: list[str] = []
        for k in range(0, len(sources), 32):
            results = translator.translate(sources[k : k + 32], options, list(found[k : k + 32]))
            out += [r.translation for r in results]
        return out

    header = ["system", "all", "half-H", "half-L"]
    header += [f"{lo:.1f}-{min(hi, 1):.1f}" for lo, hi in BANDS] + ["repeated"]
    threshold = min(similarities[i] for i in split.high) if split.high else 0.0
    print(
        f"\n{len(sources)} sentences; half-H: similarity >= {threshold:.3f}; band sizes "
        + ", ".join(str(len(b)) for b in bands)
        + "\n"
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    unguided = decode(base, pieces)
    print(scored.row("unguided", unguided), flush=True)
    best = [
        best_match_target([Candidate(m.similarity, m.segment.target) for m in p.matches])
        if p is not None
        else ""
        for p in pieces
    ]
    print(scored.row("best TM match", best), flush=True)
    scale, margin = (int(x) for x in args.gap.split(":"))
    repairs = [None] + [float(x) for x in args.repair.split(",") if x]
    for spec, repair in ((spec, r) for spec in args.rules.split(",") for r in repairs):
        rule, *extras = spec.split("+")
        guidance = Guidance.resolve(
            card,
            weighting=rule,
            clipped="clipped" in extras,
            repair=RepairOptions(repair, scale, margin).spec,
            m=args.m,
        )
        options = guidance.apply(plain)
        weighted = [translator.collect_pieces(bundle.encode_source(s), options) for s in sources]
        for lam in (float(x) for x in args.lambdas.split(",")):
            started = time.perf_counter()
            guided = decode(replace(guidance, lam=lam).apply(plain), weighted)
            served = served_outputs(sources, pieces, guided)
            name = f"{spec} lambda {lam:g}"
            if repair is not None:
                name += f", repair >= {repair:g} (gaps {scale}:{margin})"
            print(scored.row(name, guided), flush=True)
            print(
                scored.row(f"{name}, served", served) + f" {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            for t in (float(x) for x in args.candidates.split(",") if x if repair is None):
                chosen = choose_with_tm_targets(
                    translator, sources, guided, weighted, lam, t, base.search
                )
                print(
                    scored.row(f"{name}, TM targets >= {t:g} as candidates", chosen),
                    flush=True,
                )
                both = served_outputs(sources, pieces, chosen)
                print(
                    scored.row(f"{name}, TM targets >= {t:g} as candidates, served", both),
                    flush=True,
                )
    store.close()


def choose_with_tm_targets(
    translator: Any,
    sources: Sequence[str],
    guided: Sequence[str],
    pieces: Sequence[Any],
    lam: float,
    threshold: float,
    search: Any,
) -> list[str]:
    """Per sentence, the guided output or the target of a match with similarity >= threshold,
    whichever the search's objective, (log P + lambda * reward) / length ** length_penalty,
    scores higher: the TM targets are hypotheses the beam may have missed."""
    from tm_guide.decoding.rewards import PieceReward

    bundle = translator.bundle
    out = []
    for source, output, found in zip(sources, guided, pieces, strict=True):
        candidates = [output]
        if found is not None:
            candidates += [m.segment.target for m in found.matches if m.similarity >= threshold]
        if len(candidates) == 1:
            out.append(output)
            continue
        reward = PieceReward.from_tokens(
            found.ngrams, translator.token_to_id, limits=found.limits or None
        )
        targets = [bundle.encode_target(c) for c in candidates]
        source_input = bundle.source_input(bundle.encode_source(source))
        scored = bundle.translator.score_batch([source_input] * len(targets), targets)
        best, best_score = output, float("-inf")
        for text, tokens, result in zip(candidates, targets, scored, strict=True):
            ids = [translator.token_to_id.get(t, -1) for t in tokens]
            bonus = lam * reward.sequence_reward(ids, search.reward_repeats) if -1 not in ids else 0
            length = len(tokens) + 1
            score = (sum(result.log_probs) + bonus) / length**search.length_penalty
            if score > best_score:
                best, best_score = text, score
        out.append(best)
    return out


if __name__ == "__main__":
    main()
