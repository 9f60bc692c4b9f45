"""Fuzzy-match percentages as CAT tools show them.

100 means the TM source is the request text (ignoring runs of whitespace), 101 that the context
matches as well; anything else is word-level Levenshtein similarity, floored and capped at 99, so
that an editor never sees 100 for a segment that differs.
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

_WORDS = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_SPACES = re.compile(r"\s+")


def _normalised(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def words(text: str) -> list[str]:
    return _WORDS.findall(text)


def match_percentage(
    query: str, tm_source: str, query_context: str | None = None, tm_context: str | None = None
) -> int:
    if _normalised(query) == _normalised(tm_source):
        if query_context is not None and tm_context is not None and query_context == tm_context:
            return 101
        return 100
    similarity = Levenshtein.normalized_similarity(words(query), words(tm_source))
    return min(99, int(similarity * 100))
