"""Match percentages: the CAT tools' fuzzy match, and amaGama's quality.

`match_percentage` is what CAT tools show: 100 means the TM source is the request text (ignoring
runs of whitespace), 101 that the context matches as well; anything else is word-level
Levenshtein similarity, floored and capped at 99, so that an editor never sees 100 for a segment
that differs.

`amagama_quality` is what amaGama and translate-toolkit's tmserver answer, and what Weblate's
tmserver threshold (75) is set against: character-level Levenshtein similarity in percent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

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


def exact_match(
    scored: Sequence[tuple[int, Any]], translation: str | None = None
) -> tuple[int, Any] | None:
    """The (percentage, segment) a CAT tool inserts for a source the TM holds verbatim: among
    matches of 100 or more, the highest percentage (101 before 100); then a target that differs
    from its source (a copy is usually a segment nobody translated); then the target the most
    such segments agree on; then, where they disagree, the target closest to `translation` (the
    guided MT, which weighs what the model knows against the TM); then the most recent segment.
    None when no match reaches 100."""
    exact = [(match, segment) for match, segment in scored if match >= 100]
    if not exact:
        return None
    top = max(match for match, _ in exact)
    exact = [(match, segment) for match, segment in exact if match == top]
    votes = Counter(segment.target for _, segment in exact)

    def closeness(target: str) -> float:
        return Levenshtein.normalized_similarity(target, translation) if translation else 0.0

    return max(
        exact,
        key=lambda pair: (
            pair[1].target != pair[1].source,
            votes[pair[1].target],
            closeness(pair[1].target),
            pair[1].id,
        ),
    )


def amagama_quality(query: str, tm_source: str) -> int:
    """100 * (1 - character edit distance / the longer length), floored as Weblate reads it;
    the same float expression as translate-toolkit's LevenshteinComparer, so a pair scores the
    same integer here and there."""
    longest = max(len(query), len(tm_source))
    if not query or not tm_source:
        return 0
    distance = Levenshtein.distance(query, tm_source)
    return int(100 - (distance * 1.0 / longest) * 100)
