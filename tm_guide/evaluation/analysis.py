"""From system outputs to the numbers of every table: pure, so it is tested without a model.

The runner (decoding, retrieval, timing) fills a `RunData`; `build_results` turns it into the
dictionary that is written as results.json and rendered as the report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tm_guide.evaluation.ngram_counts import (
    PAPER_GAMMAS,
    bleu_tokenizer,
    correct_ngrams,
    count_gamma,
    occurrences,
)
from tm_guide.evaluation.options import EvalOptions, display_path
from tm_guide.evaluation.repetition import repeated_outputs
from tm_guide.evaluation.scoring import (
    corpus_score,
    duel,
    metric_signatures,
    paired_bootstrap,
    subset,
)
from tm_guide.evaluation.signature import machine, package_versions
from tm_guide.evaluation.similarity import (
    HISTOGRAM_EDGES,
    mean_similarity,
    median_split,
    similarity_histogram,
    similarity_tenth,
)
from tm_guide.evaluation.testset import TestSet

# Systems compared on the test set, in report order; "unguided" is the baseline of the tests.
TEST_SYSTEMS: tuple[str, ...] = ("unguided", "guided", "served", "binary_reward", "best_match")


@dataclass(frozen=True)
class SweepPoint:
    """One retrieval size M of Figures 4-6; times are seconds per sentence."""

    m: int
    hypotheses: list[str]
    retrieval: float
    pieces: float
    guided_decoding: float


@dataclass(frozen=True)
class EngineTiming:
    """Table 8 for one engine: mean seconds per sentence of each stage (None: not measured)."""

    engine: str
    base_decoding: float | None
    retrieval: float | None
    pieces: float | None
    guided_decoding: float | None
    sentences: int


@dataclass
class RunData:
    """Everything the runner measured, before any scoring."""

    options: EvalOptions
    command: str
    test: TestSet
    test_total: int
    test_outputs: dict[str, list[str]]
    similarities: list[float]
    best_lambda: float
    lambda_choice: str
    tm_targets: Callable[[], Iterable[str]]
    tm_info: dict[str, Any]
    model_info: dict[str, Any]
    dev: TestSet | None = None
    dev_total: int = 0
    dev_outputs: dict[str, list[str]] = field(default_factory=dict)
    dev_guided: dict[float, list[str]] = field(default_factory=dict)
    sweep: list[SweepPoint] = field(default_factory=list)
    timings: list[EngineTiming] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _scores(
    outputs: dict[str, list[str]], references: list[str], sources: list[str]
) -> dict[str, dict[str, Any]]:
    """Each system's corpus scores, and how many of its outputs repeat a word or phrase back to
    back more often than their source (tm_guide.evaluation.repetition)."""
    return {
        key: corpus_score(outputs[key], references).to_dict()
        | {"repeated_outputs": repeated_outputs(outputs[key], sources)}
        for key in TEST_SYSTEMS
        if key in outputs
    }


def _set_info(data: TestSet, path: Any, total: int) -> dict[str, Any]:
    return {
        "name": data.name,
        "path": display_path(path) if path is not None else None,
        "sentences": len(data),
        "total": total,
    }


# From this best-match similarity up, the suggestion is held to the best match's target; below
# it, to the unguided model.
CLOSE_MATCH = 0.5


def decile_scores(
    similarities: Sequence[float],
    outputs: dict[str, list[str]],
    references: Sequence[str],
    samples: int = 1000,
) -> list[dict[str, Any]]:
    """BLEU of each system per best-match similarity tenth (Table 5's tenths, with exactly 1 in
    the last): where the TM holds a close match (CLOSE_MATCH) the suggestion has to beat that
    match's target, where it does not, the unguided model. Each tenth also gives the paired
    bootstrap p-value of the served suggestion against that baseline (`against`, `p_value`),
    so that a loss can be told from noise, and the served suggestion's sentence-level wins, ties
    and losses against the best match's target (`versus_best_match`)."""
    tenths = [min(similarity_tenth(s), 9) for s in similarities]
    rows = []
    for tenth in range(10):
        inside = [i for i, t in enumerate(tenths) if t == tenth]
        refs = subset(list(references), inside)
        row: dict[str, Any] = {
            "low": HISTOGRAM_EDGES[tenth],
            "high": HISTOGRAM_EDGES[tenth + 1],
            "sentences": len(inside),
            "bleu": {
                key: corpus_score(subset(hyps, inside), refs).bleu if inside else None
                for key, hyps in outputs.items()
            },
        }
        against = "best_match" if HISTOGRAM_EDGES[tenth] >= CLOSE_MATCH else "unguided"
        if inside and "served" in outputs and against in outputs:
            boot, _ = paired_bootstrap(
                (against, subset(outputs[against], inside)),
                [("served", subset(outputs["served"], inside))],
                refs,
                samples=samples,
            )
            row["against"] = against
            row["p_value"] = next(
                b.p_value for b in boot if b.system == "served" and b.metric == "BLEU"
            )
        if inside and "served" in outputs and "best_match" in outputs:
            row["versus_best_match"] = duel(
                subset(outputs["served"], inside), subset(outputs["best_match"], inside), refs
            ).to_dict()
        rows.append(row)
    return rows


def build_results(run: RunData, progress: bool = False) -> dict[str, Any]:
    """Score every system, split, count and tabulate; returns a JSON-ready dictionary."""
    options = run.options
    refs = run.test.references
    for key, hyps in run.test_outputs.items():
        if len(hyps) != len(refs):
            raise ValueError(f"system {key!r}: {len(hyps)} outputs for {len(refs)} test sentences")
    if len(run.similarities) != len(refs):
        raise ValueError(f"{len(run.similarities)} similarities for {len(refs)} test sentences")

    results: dict[str, Any] = {
        "command": run.command,
        "options": options.to_dict(),
        "best_lambda": run.best_lambda,
        "lambda_choice": run.lambda_choice,
        "reward_rule": options.reward_rule(),
        "notes": list(run.notes),
        "data": {
            "test": _set_info(run.test, options.test, run.test_total),
            "dev": _set_info(run.dev, options.dev, run.dev_total) if run.dev else None,
            "tm": run.tm_info,
        },
    }

    # Tables 2, 3 and 6.
    results["test"] = _scores(run.test_outputs, refs, list(run.test.sources))
    if run.dev is not None and run.dev_outputs:
        dev_refs = run.dev.references
        results["dev_systems"] = _scores(run.dev_outputs, dev_refs, list(run.dev.sources))
        results["dev"] = {
            "unguided": corpus_score(run.dev_outputs["unguided"], dev_refs).to_dict(),
            "guided": {
                str(lam): corpus_score(hyps, dev_refs).to_dict()
                for lam, hyps in sorted(run.dev_guided.items())
            },
        }
    else:
        results["dev_systems"] = None
        results["dev"] = None

    # Significance against the unguided output.
    others = [(key, run.test_outputs[key]) for key in TEST_SYSTEMS[1:] if key in run.test_outputs]
    boot, boot_signatures = paired_bootstrap(
        ("unguided", run.test_outputs["unguided"]), others, refs, samples=options.bootstrap_samples
    )
    results["bootstrap"] = {
        "results": [asdict(item) for item in boot],
        "signatures": boot_signatures,
    }

    # Tables 4 and 5.
    split = median_split(run.similarities)
    ordered = sorted(run.similarities)
    middle = len(ordered) // 2
    median = (
        (ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2)
        if ordered
        else 0.0
    )
    results["similarity"] = {
        "whole": mean_similarity(run.similarities),
        "high": mean_similarity([run.similarities[i] for i in split.high]),
        "low": mean_similarity([run.similarities[i] for i in split.low]),
        "median": median,
        "sentences": {"whole": len(refs), "high": len(split.high), "low": len(split.low)},
        "histogram": [asdict(row) for row in similarity_histogram(run.similarities)],
    }
    results["halves"] = {
        half: {
            key: corpus_score(subset(hyps, indices), subset(refs, indices)).bleu
            for key, hyps in run.test_outputs.items()
        }
        for half, indices in (
            ("whole", list(range(len(refs)))),
            ("high", split.high),
            ("low", split.low),
        )
    }

    results["deciles"] = decile_scores(
        run.similarities, run.test_outputs, refs, samples=options.bootstrap_samples
    )

    # Table 7.
    tokenize = bleu_tokenizer()
    correct = {
        key: correct_ngrams(run.test_outputs[key], refs, tokenize) for key in ("unguided", "guided")
    }
    wanted = set().union(*correct["unguided"], *correct["guided"])
    occur = occurrences(run.tm_targets(), wanted, tokenize, progress=progress)
    results["count_gamma"] = {
        "gammas": list(PAPER_GAMMAS),
        **{
            key: list(count_gamma(grams, occur, PAPER_GAMMAS).values())
            for key, grams in correct.items()
        },
    }

    # Table 8 and Figures 4-6.
    main_engine = run.timings[0] if run.timings else None
    results["timing"] = {
        "base_decoding": main_engine.base_decoding if main_engine else None,
        "engines": {t.engine: asdict(t) for t in run.timings},
    }
    results["m_sweep"] = [
        {
            "m": point.m,
            "retrieval": point.retrieval,
            "pieces": point.pieces,
            "guided_decoding": point.guided_decoding,
            **{
                k: v
                for k, v in corpus_score(point.hypotheses, refs).to_dict().items()
                if k in ("bleu", "chrf")
            },
        }
        for point in sorted(run.sweep, key=lambda p: p.m)
    ]

    results["signature"] = {
        "model": run.model_info,
        "tm": run.tm_info,
        "options": options.to_dict(),
        "packages": package_versions(),
        "sacrebleu": {**metric_signatures(run.test_outputs["unguided"], refs), **boot_signatures},
        "machine": machine(),
    }
    results["sentences"] = [
        {
            "line": line,
            "source": run.test.sources[i],
            "reference": refs[i],
            "similarity": run.similarities[i],
            **{key: hyps[i] for key, hyps in run.test_outputs.items()},
        }
        for i, line in enumerate(run.test.lines)
    ]
    return results
