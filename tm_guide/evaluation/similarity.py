"""Test-set similarity to the TM (eqs. 11-12, Tables 4 and 5) and the median split into halves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Table 5's bins: [0, 0.1), [0.1, 0.2), ..., [0.9, 1), and exactly 1.
HISTOGRAM_EDGES: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))


@dataclass(frozen=True)
class MedianSplit:
    """Indices of the test sentences in the more (half-H) and less (half-L) similar half."""

    high: list[int]
    low: list[int]


def mean_similarity(similarities: Sequence[float]) -> float:
    """simi(D_test, D_TM), eq. 12: the mean of the per-sentence best-match similarities."""
    return sum(similarities) / len(similarities) if similarities else 0.0


def median_split(similarities: Sequence[float]) -> MedianSplit:
    """Split the test set into two halves by best-match similarity (eq. 11).

    Sentences are ranked by similarity, ties broken by their position in the test set so that the
    split is deterministic; the top floor(n/2) form half-H and the rest half-L (so with an odd n the
    median sentence goes to half-L).
    """
    order = sorted(range(len(similarities)), key=lambda i: (-similarities[i], i))
    cut = len(order) // 2
    return MedianSplit(high=sorted(order[:cut]), low=sorted(order[cut:]))


@dataclass(frozen=True)
class HistogramBin:
    """One bar of the similarity histogram: a tenth of the range (or exactly 1), its sentences
    and their share of the set in percent."""

    label: str
    sentences: int
    percent: float


def similarity_tenth(value: float) -> int:
    """The bin of a similarity: 0 for [0, 0.1) ... 9 for [0.9, 1), 10 for exactly 1 (a tenth's
    edge computed as 0.30000000000000004 still starts its tenth)."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"similarity {value} outside [0, 1]")
    return 10 if value >= 1.0 else min(int(value * 10 + 1e-9), 9)


def similarity_histogram(similarities: Sequence[float]) -> list[HistogramBin]:
    """Table 5: test sentences per similarity tenth, with exactly 1 on its own row."""
    counts = [0] * 11
    for value in similarities:
        counts[similarity_tenth(value)] += 1
    total = len(similarities)
    labels = [f"[{HISTOGRAM_EDGES[i]:.1f},{HISTOGRAM_EDGES[i + 1]:.1f})" for i in range(10)] + ["1"]
    return [
        HistogramBin(label, count, 100.0 * count / total if total else 0.0)
        for label, count in zip(labels, counts, strict=True)
    ]
