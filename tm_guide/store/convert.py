"""Row <-> dataclass conversion and the normalisation every stored value goes through."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from tm_guide.store.types import ApiKey, Memory, Segment


def utc(value: datetime | None) -> datetime | None:
    """Stored times are UTC; a naive time is taken as UTC (SQLite hands back naive values)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def now() -> datetime:
    return datetime.now(UTC)


def pair_hash(source: str, target: str, context: str | None) -> str:
    """Identity of a translation pair for duplicate merging (same text in the same context)."""
    key = "\x1f".join((source, target, context or ""))
    return hashlib.blake2b(key.encode("utf-8"), digest_size=16).hexdigest()


def memory_from_row(row: Any) -> Memory:
    return Memory(
        id=row.id,
        name=row.name,
        source_lang=row.source_lang,
        target_lang=row.target_lang,
        description=row.description,
        revision=row.revision,
        segment_count=row.segment_count,
        created_at=utc(row.created_at),  # type: ignore[arg-type]
        uuid=row.uuid,
        kind=row.kind,
    )


def segment_from_row(row: Any) -> Segment:
    alignment = row.alignment
    return Segment(
        id=row.id,
        memory_id=row.memory_id,
        source=row.source,
        target=row.target,
        tuid=row.tuid,
        context=row.context,
        source_markup=row.source_markup,
        target_markup=row.target_markup,
        created_at=utc(row.created_at),
        created_by=row.created_by,
        changed_at=utc(row.changed_at),
        changed_by=row.changed_by,
        usage_count=row.usage_count,
        props=dict(row.props or {}),
        source_lang=row.source_lang,
        target_lang=row.target_lang,
        source_tokens=row.source_tokens,
        target_tokens=row.target_tokens,
        alignment=None if alignment is None else [(int(s), int(t)) for s, t in alignment],
        tokenizer_id=row.tokenizer_id,
        aligner_id=row.aligner_id,
    )


def api_key_from_row(row: Any) -> ApiKey:
    return ApiKey(
        id=row.id,
        name=row.name,
        scopes=dict(row.scopes),
        created_at=utc(row.created_at),  # type: ignore[arg-type]
        revoked_at=utc(row.revoked_at),
    )
