"""JSON shapes of store objects, one per kind, for every route and protocol that shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def memory_json(memory: Any) -> dict[str, Any]:
    return {
        "id": memory.id,
        "name": memory.name,
        "source_lang": memory.source_lang,
        "target_lang": memory.target_lang,
        "description": memory.description,
        "kind": memory.kind,
        "revision": memory.revision,
        "segment_count": memory.segment_count,
        "created_at": iso(memory.created_at),
    }


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
        "id": segment.id,
        "memory_id": segment.memory_id,
        "tuid": segment.tuid,
        "source": segment.source,
        "target": segment.target,
        "context": segment.context,
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
