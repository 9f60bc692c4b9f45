"""Fuzzy-match similarity of eq. 9 (Zhang et al., 2018) between a sentence and a translation memory.

sim(X, X_m) = 1 - d(X, X_m) / max(|X|, |X_m|), d the word-level edit distance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein
from tqdm import tqdm

WORD = re.compile(r"\w+|[^\w\s]")


def words(text: str) -> list[str]:
    return WORD.findall(text)


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """Eq. 9 on token sequences."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - Levenshtein.distance(a, b) / longest


def best_match_similarities(
    queries: list[str], memory: list[str], candidates: int = 20
) -> list[float]:
    """Best eq. 9 similarity of each query against the memory sources.

    Why two steps: a character-level ratio over all memory strings is cheap in rapidfuzz and
    finds the candidates; the exact word-level score is then computed on those only.
    """
    memory_words = [words(text) for text in memory]
    best = []
    for query in tqdm(queries, desc="best TM match", unit="sent"):
        query_words = words(query)
        hits = process.extract(query, memory, scorer=fuzz.ratio, limit=candidates)
        best.append(
            max((similarity(query_words, memory_words[i]) for _, _, i in hits), default=0.0)
        )
    return best


def shares(values: list[float], thresholds: Sequence[float] = (0.5, 0.7, 0.9)) -> dict[str, float]:
    """Share of values at or above each threshold."""
    total = max(len(values), 1)
    return {f">={t}": sum(v >= t for v in values) / total for t in thresholds}
