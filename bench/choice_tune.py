"""Tune the choice among a close match's candidates (tm_guide.pieces.choice) on dev sets.

For every dev sentence whose best match reaches --floor, the translator scores the four
candidates (the match as it is, the match repaired, the guided and the unguided translation)
once, with the biases at 0; the candidates and their scores are kept in --cache. A grid of
thresholds and biases is then replayed on them, and each rule is scored by what a translator
gets: BLEU and chrF of the served suggestion per domain against the best match, and the share
of sentences (similarity >= 0.7) whose served suggestion is worse than the match (sentence
chrF). The table's first rows serve no choice, the repair from 0.4 to 0.7 and the guided
translation below; then the best rules by the mean BLEU gain over the domains.

    python bench/choice_tune.py --domains en-de debian-docs-en-de debian-guides-en-de

The domains are folders of bench/corpus/data (bench/corpus/README.md); each TM is imported and
aligned once into <domain>/eval.sqlite, as `tm-guide eval --db` keeps it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sacrebleu.metrics import BLEU, CHRF  # noqa: E402

from tm_guide.pieces.choice import Candidate, ChoiceOptions, choose  # noqa: E402

DATA = REPO / "bench" / "corpus" / "data"
KINDS = ("match", "repaired", "guided", "unguided")


def collect(domain: str, floor: float, repair: str, batch: int) -> list[dict]:
    """Each dev sentence with a best match >= floor: its similarity, reference and candidates."""
    from dev_memory import dev_memory

    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions

    with dev_memory(domain) as (bundle, dev, store, memory):
        translator = GuidedTranslator(bundle, store)
        # the card's guidance, with the repair from the floor and every candidate scored
        guidance = Guidance.resolve(bundle.card, repair=repair, choice=ChoiceOptions(floor).spec)
        options = guidance.apply(
            TranslateOptions(
                engine=EngineOptions(threads=1), memory_ids=(memory.id,), max_length_ratio=2.0
            )
        )
        rows = []
        sources, references = dev.sources, dev.references
        for start in range(0, len(sources), batch):
            part = list(sources[start : start + batch])
            for k, result in enumerate(translator.translate(part, options)):
                if result.choice is None:
                    continue
                best = max(result.choice.candidates, key=lambda c: c.kind == "match")
                rows.append(
                    {
                        "similarity": result.best_match_similarity,
                        "reference": references[start + k],
                        "match": best.text if best.kind == "match" else None,
                        "candidates": {c.kind: [c.text, c.score] for c in result.choice.candidates},
                    }
                )
            print(f"{domain}: {min(start + batch, len(sources))}/{len(sources)}", file=sys.stderr)
        return rows


def served(rows: list[dict], rule: ChoiceOptions | None, repair_from: float = 0.7) -> list[str]:
    """The kind served for each row: without a rule, what a card without a choice serves (the
    repair from `repair_from`, the guided translation below); with one, its choice from its
    threshold."""
    out = []
    for row in rows:
        kinds = row["candidates"]
        if rule is not None and rule.applies(row["similarity"]):
            candidates = [Candidate(k, t, s) for k, (t, s) in kinds.items()]
            out.append(choose(candidates, rule).chosen.kind)
        elif row["similarity"] >= repair_from and "repaired" in kinds:
            out.append("repaired")
        else:
            out.append("guided")
    return out


def match_scores(domains: dict[str, list[dict]]) -> dict[str, tuple[float, float]]:
    """What every rule is measured against, computed once: each domain's corpus BLEU and chrF
    of the best match's target; and, kept in each row, the sentence chrF of its candidates and
    of its match."""
    bleu, chrf = BLEU(), CHRF()
    baselines = {}
    for name, rows in domains.items():
        refs = [[r["reference"] for r in rows]]
        matches = [r["match"] or "" for r in rows]
        baselines[name] = (
            bleu.corpus_score(matches, refs).score,
            chrf.corpus_score(matches, refs).score,
        )
        for row in rows:
            ref = [row["reference"]]
            row["chrf"] = {
                k: chrf.sentence_score(t, ref).score for k, (t, _) in row["candidates"].items()
            }
            row["chrf_match"] = chrf.sentence_score(row["match"] or "", ref).score
    return baselines


def evaluate(
    domains: dict[str, list[dict]],
    baselines: dict[str, tuple[float, float]],
    rule: ChoiceOptions | None,
    repair_from: float = 0.7,
) -> dict:
    bleu, chrf = BLEU(), CHRF()
    gains, chrf_gains, losses, close = [], [], 0, 0
    per_domain = {}
    for name, rows in domains.items():
        kinds = served(rows, rule, repair_from)
        hyps = [row["candidates"][k][0] for row, k in zip(rows, kinds, strict=True)]
        refs = [r["reference"] for r in rows]
        match_bleu, match_chrf = baselines[name]
        gain = bleu.corpus_score(hyps, [refs]).score - match_bleu
        cgain = chrf.corpus_score(hyps, [refs]).score - match_chrf
        gains.append(gain)
        chrf_gains.append(cgain)
        per_domain[name] = round(gain, 2)
        for kind, row in zip(kinds, rows, strict=True):
            if row["similarity"] >= 0.7:
                close += 1
                losses += row["chrf"][kind] < row["chrf_match"]
    return {
        "rule": rule.spec if rule is not None else f"off, repair from {repair_from:g}",
        "bleu_gain": round(sum(gains) / len(gains), 2),
        "chrf_gain": round(sum(chrf_gains) / len(chrf_gains), 2),
        "losses_close": round(100 * losses / max(close, 1), 1),
        "per_domain": per_domain,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--domains", nargs="+", default=["en-de", "debian-docs-en-de", "debian-guides-en-de"]
    )
    parser.add_argument("--floor", type=float, default=0.4, help="lowest threshold tried")
    parser.add_argument("--repair", default="0.4:1:1", help="the repair candidate's RepairOptions")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--cache", type=Path, default=DATA / "choice_candidates.json")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    cached = json.loads(args.cache.read_text()) if args.cache.is_file() else {}
    for domain in args.domains:
        if domain not in cached:
            cached[domain] = collect(domain, args.floor, args.repair, args.batch)
            args.cache.write_text(json.dumps(cached))
    domains = {d: cached[d] for d in args.domains}
    baselines = match_scores(domains)
    grid = itertools.product(
        (0.4, 0.5, 0.6, 0.7),
        (0.0, 4.0, 6.0, 8.0),
        (2.0, 3.0, 4.0, 5.0, 6.0, 8.0),
        (1.0, 2.0, 3.0, 4.0, 5.0, 6.0),
    )
    rules = [ChoiceOptions(t, m, r, g) for t, m, r, g in grid]
    scored = [evaluate(domains, baselines, rule) for rule in rules]
    print(f"dev sentences with a best match >= {args.floor}: ", end="")
    print(", ".join(f"{d} {len(rows)}" for d, rows in domains.items()))
    print()
    print(
        "| rule | mean BLEU gain over the match | mean chrF gain | losses at >= 0.7 (%) | ", end=""
    )
    print(" | ".join(domains) + " |")
    print("|---|---|---|---|" + "---|" * len(domains))
    repairs = [evaluate(domains, baselines, None, t) for t in (0.4, 0.5, 0.6, 0.7)]
    best = sorted(scored, key=lambda r: -r["bleu_gain"])[: args.top]
    for row in repairs + best:
        cells = " | ".join(str(row["per_domain"][d]) for d in domains)
        print(
            f"| {row['rule']} | {row['bleu_gain']} | {row['chrf_gain']} | {row['losses_close']} |"
            f" {cells} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
