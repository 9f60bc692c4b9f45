"""How source text becomes index terms: lowercased words, no stemming (fits many languages)."""

from __future__ import annotations

import re

WORD_PATTERN = r"\w+"
_WORD = re.compile(WORD_PATTERN)


def index_terms(text: str) -> list[str]:
    """The words of `text`, as the index sees them (the same analysis at index and query time)."""
    return _WORD.findall(text.lower())
