"""One suggestion's translation put together from the translations of its sentences.

A segment of several lines or sentences is translated sentence by sentence (tm_guide.text);
each sentence has its own Translation (pieces, repair, scores). The segment's is theirs joined:
the text with the layout put back, every piece with its character span moved to where its
sentence's translation sits in the joined text, and the scores summed. The Translation of one
sentence that is the whole segment is passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from tm_guide.server.results import Translation
from tm_guide.text import Layout


def joined_translation(layout: Layout, units: Sequence[Translation]) -> Translation:
    """The segment's Translation from its units'."""
    if layout.plain:
        return units[0]
    text, starts = layout.join_at([unit.text for unit in units])
    unguided = [unit.unguided for unit in units]
    repaired = [unit.repaired for unit in units if unit.repaired is not None]
    similarities = [
        unit.best_match_similarity for unit in units if unit.best_match_similarity is not None
    ]
    return Translation(
        text=text,
        unguided=(
            layout.join([u for u in unguided if u is not None])
            if all(u is not None for u in unguided)
            else None
        ),
        guided=any(unit.guided for unit in units),
        engine=units[0].engine if units else None,
        model_score=sum(unit.model_score for unit in units),
        reward=sum(unit.reward for unit in units),
        best_match_similarity=max(similarities) if similarities else None,
        repaired=repaired[0] if len(units) == 1 and repaired else None,
        chosen=units[0].chosen if len(units) == 1 else None,
        pieces_used=tuple(
            piece.moved(start)
            for unit, start in zip(units, starts, strict=True)
            for piece in unit.pieces_used
        ),
        glossary=tuple(term for unit in units for term in unit.glossary),
        sentences=len(units),
    )
