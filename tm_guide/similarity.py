"""Sentence similarity of the paper's eq. 9, shared by match display, pieces and evaluation."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from rapidfuzz.distance import Levenshtein


def similarity_from_distance(distance: int, len_a: int, len_b: int) -> float:
    """simi = 1 - d / max(|a|, |b|); two empty sequences are identical (1.0)."""
    longest = max(len_a, len_b)
    return 1.0 if longest == 0 else 1.0 - distance / longest


def token_similarity(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Eq. 9 on token sequences (word or subword tokens): 1 - edit distance / longer length."""
    return similarity_from_distance(Levenshtein.distance(a, b), len(a), len(b))
