"""One suggestion's translation put together from the translations of its sentences.

A segment of several lines or sentences is translated sentence by sentence (tm_guide.text);
each sentence has its own translation record (pieces, repair, scores, timings). The segment's
record is theirs joined: the text with the layout put back, every piece with its character span
moved to where its sentence's translation sits in the joined text, and the scores summed. A
record of one sentence that is the whole segment is passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tm_guide.text import Layout


def joined_translation(layout: Layout, units: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The segment's translation record from its units' records (translations_json's shape)."""
    if layout.plain:
        return {**units[0], "sentences": 1}
    texts = [unit["text"] for unit in units]
    text, starts = layout.join_at(texts)
    pieces = [
        piece
        for unit, start in zip(units, starts, strict=True)
        for piece in moved_pieces(unit["pieces_used"], start)
    ]
    unguided = [unit["unguided"] for unit in units]
    repaired = [unit["repaired"] for unit in units if unit["repaired"] is not None]
    chosen = [unit.get("chosen") for unit in units]
    similarities = [
        unit["best_match_similarity"] for unit in units if unit["best_match_similarity"] is not None
    ]
    return {
        "text": text,
        "unguided": layout.join(unguided) if all(u is not None for u in unguided) else None,
        "guided": any(unit["guided"] for unit in units),
        "engine": units[0]["engine"] if units else None,
        "model_score": round(sum(unit["model_score"] for unit in units), 4),
        "reward": round(sum(unit["reward"] for unit in units), 4),
        "best_match_similarity": max(similarities) if similarities else None,
        "repaired": repaired[0] if len(units) == 1 and repaired else None,
        "chosen": chosen[0] if len(units) == 1 else None,
        "pieces_used": pieces,
        "glossary": [term for unit in units for term in unit.get("glossary", [])],
        "sentences": len(units),
    }


def moved_pieces(pieces: Sequence[dict[str, Any]], offset: int) -> list[dict[str, Any]]:
    """The pieces with their character spans `offset` further on (a sentence's translation
    placed in a longer text)."""
    return [
        {**piece, "span": [piece["span"][0] + offset, piece["span"][1] + offset]}
        if piece["span"] is not None
        else piece
        for piece in pieces
    ]


def verbatim_translation(text: str) -> dict[str, Any]:
    """The record of a text with nothing to translate (no letter or digit, or non-translatables
    only): itself."""
    return {
        "text": text,
        "unguided": text,
        "guided": False,
        "engine": None,
        "model_score": 0.0,
        "reward": 0.0,
        "best_match_similarity": None,
        "repaired": None,
        "chosen": None,
        "pieces_used": [],
        "glossary": [],
        "sentences": 0,
    }
