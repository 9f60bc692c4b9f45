"""Hypotheses as a beam search closes them, before finalizing (the Python and compiled searches
both produce these)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Closed:
    """A finished hypothesis: its ranking score and what the finalization reports."""

    raw_score: float
    token_ids: tuple[int, ...]
    log_prob: float
    reward: float
    length: int
