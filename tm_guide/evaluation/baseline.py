"""The best-match-only baseline: what a CAT tool offers without MT, the best match's target."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """One retrieved TM pair as the baseline sees it."""

    similarity: float
    target: str


def best_match_target(candidates: Sequence[Candidate]) -> str:
    """The target of the most similar retrieved pair (eq. 9 similarity).

    Ties keep the earlier candidate (the search engine's rank), as a CAT tool lists matches in that
    order. With no candidate the suggestion is empty, which is what a translator would get.
    """
    best: Candidate | None = None
    for candidate in candidates:
        if best is None or candidate.similarity > best.similarity:
            best = candidate
    return best.target if best is not None else ""
