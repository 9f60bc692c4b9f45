"""JSON shapes of store objects, one per kind, for every route and protocol that shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _fields(item: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The attributes `names` of `item`, each under its own name."""
    return {name: getattr(item, name) for name in names}


_MEMORY_FIELDS = (
    "id", "name", "source_lang", "target_lang", "description", "kind", "revision", "segment_count"
)  # fmt: skip
_SEGMENT_FIELDS = ("id", "memory_id", "tuid", "source", "target", "context")


def memory_json(memory: Any) -> dict[str, Any]:
    return {**_fields(memory, _MEMORY_FIELDS), "created_at": iso(memory.created_at)}


def _history(segment: Any) -> dict[str, Any]:
    """Who made the segment and when, and how often it was used: what a CAT tool shows beside
    a segment or a match."""
    return {
        "created_at": iso(segment.created_at),
        "created_by": segment.created_by,
        "changed_at": iso(segment.changed_at),
        "changed_by": segment.changed_by,
        "usage_count": segment.usage_count,
    }


def segment_json(segment: Any) -> dict[str, Any]:
    return {
        **_fields(segment, _SEGMENT_FIELDS),
        **_history(segment),
        "props": dict(segment.props or {}),
        "source_lang": segment.source_lang,
        "target_lang": segment.target_lang,
        "aligned": segment.alignment is not None,
    }


def match_json(segment: Any, match: int, memory_name: str | None) -> dict[str, Any]:
    """A fuzzy match: the segment with its CAT match percentage and memory name."""
    return {
        "match": match,
        "source": segment.source,
        "target": segment.target,
        "memory": memory_name,
        "segment_id": segment.id,
        "tuid": segment.tuid,
        "context": segment.context,
        **_history(segment),
    }
