"""Helpers the blueprints share: the app's services and JSON shapes of store objects."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import current_app

from tm_guide.server.services import Services


def services() -> Services:
    return current_app.extensions["tm_guide"]


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def memory_json(memory: Any) -> dict[str, Any]:
    return {
        "id": memory.id,
        "name": memory.name,
        "source_lang": memory.source_lang,
        "target_lang": memory.target_lang,
        "description": memory.description,
        "revision": memory.revision,
        "segment_count": memory.segment_count,
        "created_at": iso(memory.created_at),
    }


def segment_json(segment: Any) -> dict[str, Any]:
    return {
        "id": segment.id,
        "memory_id": segment.memory_id,
        "tuid": segment.tuid,
        "source": segment.source,
        "target": segment.target,
        "context": segment.context,
        "created_at": iso(segment.created_at),
        "created_by": segment.created_by,
        "changed_at": iso(segment.changed_at),
        "changed_by": segment.changed_by,
        "usage_count": segment.usage_count,
        "props": dict(segment.props or {}),
        "source_lang": segment.source_lang,
        "target_lang": segment.target_lang,
        "aligned": segment.alignment is not None,
    }
