"""Corpus scores (sacrebleu BLEU and chrF, length ratio) and paired bootstrap resampling."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

BOOTSTRAP_SEED = 12345  # sacrebleu's own default; fixed so that a rerun gives the same p-values


@dataclass(frozen=True)
class CorpusScore:
    """BLEU, chrF and output length / reference length (Table 3) on one set of sentences."""

    bleu: float
    chrf: float
    length_ratio: float
    sentences: int

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


def corpus_score(hypotheses: Sequence[str], references: Sequence[str]) -> CorpusScore:
    """Score a system output against one reference per sentence with sacrebleu's defaults."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        return CorpusScore(bleu=0.0, chrf=0.0, length_ratio=0.0, sentences=0)
    bleu = BLEU().corpus_score(list(hypotheses), [list(references)])
    chrf = CHRF().corpus_score(list(hypotheses), [list(references)])
    ratio = bleu.sys_len / bleu.ref_len if bleu.ref_len else 0.0
    return CorpusScore(
        bleu=bleu.score, chrf=chrf.score, length_ratio=ratio, sentences=len(hypotheses)
    )


@dataclass(frozen=True)
class Duel:
    """Sentence by sentence, how often a system's output scores higher (win), the same (tie) or
    lower (loss) than a baseline's, by sentence-level chrF against the reference: what a
    translator sees one segment at a time, where a corpus score can hide a few bad losses."""

    wins: int
    ties: int
    losses: int

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


def duel(system: Sequence[str], baseline: Sequence[str], references: Sequence[str]) -> Duel:
    """Wins, ties and losses of `system` against `baseline` (sentence chrF, ties within 1e-9)."""
    chrf = CHRF()
    wins = ties = losses = 0
    for ours, theirs, reference in zip(system, baseline, references, strict=True):
        difference = (
            chrf.sentence_score(ours, [reference]).score
            - chrf.sentence_score(theirs, [reference]).score
        )
        if abs(difference) <= 1e-9:
            ties += 1
        elif difference > 0:
            wins += 1
        else:
            losses += 1
    return Duel(wins, ties, losses)


def subset(items: Sequence[str], indices: Sequence[int]) -> list[str]:
    return [items[i] for i in indices]


def metric_signatures(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, str]:
    """sacrebleu's signature strings for the metrics used, for the reproducibility block.

    sacrebleu only knows a signature once a metric has scored something (it includes nrefs).
    """
    signatures = {}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):
        metric.corpus_score(list(hypotheses), [list(references)])
        signatures[name] = str(metric.get_signature())
    return signatures


@dataclass(frozen=True)
class BootstrapResult:
    """One system against the baseline: score, bootstrap mean +- 95% CI, and the p-value."""

    system: str
    metric: str
    score: float
    mean: float
    ci: float
    p_value: float | None


def paired_bootstrap(
    baseline: tuple[str, Sequence[str]],
    systems: Sequence[tuple[str, Sequence[str]]],
    references: Sequence[str],
    samples: int = 1000,
) -> tuple[list[BootstrapResult], dict[str, str]]:
    """sacrebleu's paired bootstrap resampling (the Moses test) of each system against the baseline.

    Returns the results (baseline first, p_value None) and the test signatures per metric.
    """
    previous = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(BOOTSTRAP_SEED)  # PairedTest reads its seed from here only
    try:
        named: list[tuple[str, Sequence[str]]] = [(baseline[0], list(baseline[1]))]
        named += [(name, list(hyps)) for name, hyps in systems]
        test = PairedTest(
            named,
            {"BLEU": BLEU(), "chrF": CHRF()},
            references=[list(references)],
            test_type="bs",
            n_samples=samples,
        )
        signatures, table = test()
    finally:
        if previous is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = previous
    names = table["System"]
    results = []
    for metric, column in table.items():
        if metric == "System":
            continue
        for name, result in zip(names, column, strict=True):
            assert not isinstance(result, str)  # only the System column holds names
            results.append(
                BootstrapResult(
                    system=str(name),
                    metric=metric,
                    score=float(result.score),
                    mean=float(result.mean) if result.mean is not None else float(result.score),
                    ci=float(result.ci) if result.ci is not None else 0.0,
                    p_value=float(result.p_value) if result.p_value is not None else None,
                )
            )
    return results, {metric: str(sig) for metric, sig in signatures.items()}
