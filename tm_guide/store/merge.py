"""Applying a batch of records to a memory: duplicate pairs merge, a known tuid replaces.

The batch is resolved in memory against the rows it can touch (loaded by pair hash and tuid),
then flushed with a few executemany statements, so that bulk imports stay fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, delete, insert, or_, select, update

from tm_guide.errors import InvalidInput
from tm_guide.records import SegmentRecord, text_xml_cannot_hold
from tm_guide.store.convert import pair_hash, utc
from tm_guide.store.models import segments_table
from tm_guide.store.types import ImportReport

segments = segments_table

# Columns a replacement rewrites; the analysis is cleared because the text changed.
ANALYSIS_COLUMNS = ("source_tokens", "target_tokens", "alignment", "tokenizer_id", "aligner_id")
LOADED_COLUMNS = (
    "id", "tuid", "pair_hash", "source", "target", "context", "source_markup", "target_markup",
    "created_at", "created_by", "changed_at", "changed_by", "usage_count", "props",
    "source_lang", "target_lang",
)  # fmt: skip


@dataclass
class BatchOutcome:
    """Effects the caller needs after the batch: which stored rows changed text, which went away,
    and the last row touched (for single adds)."""

    updated_ids: set[int] = field(default_factory=set)
    deleted_ids: list[int] = field(default_factory=list)
    count_delta: int = 0
    last_key: Any = None
    last_hash: str | None = None
    last_tuid: str | None = None


@dataclass
class _Row:
    values: dict[str, Any]
    id: int | None = None  # None: not stored yet
    dirty: bool = False
    text_changed: bool = False


def check_record(record: SegmentRecord, where: str) -> str | None:
    """Why the record cannot be stored, or None. Empty sides are skipped, not fatal."""
    if not isinstance(record.source, str) or not isinstance(record.target, str):
        raise InvalidInput(f"{where}: source and target must be text", field="source")
    if not record.source.strip() or not record.target.strip():
        return "empty"
    for name in ("tuid", "created_by", "changed_by"):  # the store's columns hold 255
        value = getattr(record, name)
        if isinstance(value, str) and len(value) > 255:
            raise InvalidInput(f"{where}: {name} longer than 255 characters", field=name)
    # a segment XML cannot carry could be stored but never exported as TMX: no writer stores it
    found = text_xml_cannot_hold(record)
    if found is not None:
        name, position, char = found
        raise InvalidInput(
            f"{where}: {name} holds U+{ord(char):04X} at character {position}, "
            "which a translation memory cannot store (XML 1.0 does not allow it)",
            field=name,
        )
    return None


def _record_values(record: SegmentRecord, when: datetime) -> dict[str, Any]:
    created = utc(record.created_at) or when
    return {
        "source": record.source,
        "target": record.target,
        "tuid": record.tuid,
        "context": record.context,
        "source_markup": record.source_markup,
        "target_markup": record.target_markup,
        "created_at": created,
        "created_by": record.created_by,
        "changed_at": utc(record.changed_at) or created,
        "changed_by": record.changed_by or record.created_by,
        "usage_count": max(int(record.usage_count or 0), 0),
        "props": dict(record.props or {}),
        "source_lang": record.source_lang,
        "target_lang": record.target_lang,
    }


def apply_batch(
    conn: Connection,
    memory_id: int,
    revision: int,
    records: Sequence[SegmentRecord],
    report: ImportReport,
    outcome: BatchOutcome,
    when: datetime,
    source_name: str = "record",
) -> None:
    """Resolve and write one batch inside the caller's transaction."""
    pending: list[tuple[SegmentRecord, str]] = []
    for record in records:
        where = f"{source_name}:{record.line}" if record.line is not None else source_name
        if check_record(record, where):
            report.skipped += 1
            continue
        pending.append((record, pair_hash(record.source, record.target, record.context)))
    if not pending:
        return

    hashes = {h for _, h in pending}
    tuids = {r.tuid for r, _ in pending if r.tuid is not None}
    condition: ColumnElement[bool] = segments.c.pair_hash.in_(hashes)
    if tuids:
        condition = or_(condition, segments.c.tuid.in_(tuids))
    query = select(*(segments.c[name] for name in LOADED_COLUMNS)).where(
        segments.c.memory_id == memory_id, condition
    )
    rows: dict[Any, _Row] = {}
    by_hash: dict[str, Any] = {}
    by_tuid: dict[str, Any] = {}
    for found in conn.execute(query).mappings():
        values = dict(found)
        row = _Row(values=values, id=values.pop("id"))
        rows[row.id] = row
        by_hash[values["pair_hash"]] = row.id
        if values["tuid"] is not None:
            by_tuid[values["tuid"]] = row.id

    deleted: list[int] = []
    new_key = 0

    def touch(key: Any) -> None:
        row = rows.pop(key)
        row.dirty = True
        rows[key] = row  # keep rows in order of last change: updates are flushed in that order

    for record, h in pending:
        tuid_key = by_tuid.get(record.tuid) if record.tuid is not None else None
        if tuid_key is not None and rows[tuid_key].values["pair_hash"] != h:
            # Same tuid, new content: replace. A row that already holds the new pair is absorbed.
            row = rows[tuid_key]
            other_key = by_hash.get(h)
            usage = row.values["usage_count"]
            if other_key is not None and other_key != tuid_key:
                other = rows.pop(other_key)
                usage += other.values["usage_count"]
                if other.values["tuid"] is not None:
                    by_tuid.pop(other.values["tuid"], None)
                if other.id is not None:
                    deleted.append(other.id)
                    outcome.count_delta -= 1
                else:
                    report.added -= 1
                    outcome.count_delta -= 1
            del by_hash[row.values["pair_hash"]]
            values = _record_values(record, when)
            values["created_at"] = utc(record.created_at) or row.values["created_at"]
            values["changed_at"] = utc(record.changed_at) or when
            values["usage_count"] = max(values["usage_count"], usage)
            row.values.update(values, pair_hash=h)
            row.text_changed = True
            by_hash[h] = tuid_key
            touch(tuid_key)
            report.updated += 1
            key = tuid_key
        elif tuid_key is not None or h in by_hash:
            # The same pair again: merge (one more use, newest change date and author).
            key = tuid_key if tuid_key is not None else by_hash[h]
            row = rows[key]
            row.values["usage_count"] += max(int(record.usage_count or 0), 1)
            changed = utc(record.changed_at) or when
            previous = utc(row.values["changed_at"])
            if previous is None or changed >= previous:
                row.values["changed_at"] = changed
                row.values["changed_by"] = record.changed_by or record.created_by
            if record.tuid is not None and row.values["tuid"] is None:
                row.values["tuid"] = record.tuid
                by_tuid[record.tuid] = key
            row.values["props"] = {**(row.values["props"] or {}), **(record.props or {})}
            touch(key)
            report.merged += 1
        else:
            new_key -= 1
            key = ("new", new_key)
            values = _record_values(record, when)
            values["pair_hash"] = h
            rows[key] = _Row(values=values, dirty=True, text_changed=True)
            by_hash[h] = key
            if record.tuid is not None:
                by_tuid[record.tuid] = key
            report.added += 1
            outcome.count_delta += 1
        outcome.last_key = key
        outcome.last_hash = rows[key].values["pair_hash"]
        outcome.last_tuid = rows[key].values["tuid"]

    _flush(conn, memory_id, revision, rows, deleted, outcome)


def _flush(
    conn: Connection,
    memory_id: int,
    revision: int,
    rows: dict[Any, _Row],
    deleted: list[int],
    outcome: BatchOutcome,
) -> None:
    if deleted:
        conn.execute(delete(segments).where(segments.c.id.in_(deleted)))
        outcome.deleted_ids.extend(deleted)
    changed = [row for row in rows.values() if row.dirty and row.id is not None]
    if changed:
        with_text = [row for row in changed if row.text_changed]
        merged_only = [row for row in changed if not row.text_changed]
        if with_text:
            columns = [*LOADED_COLUMNS[1:]]
            statement = (
                update(segments)
                .where(segments.c.id == bindparam("row_id"))
                .values(
                    {name: bindparam(f"v_{name}") for name in columns}
                    | {"revision": revision}
                    | dict.fromkeys(ANALYSIS_COLUMNS)
                )
            )
            params = [
                {"row_id": row.id} | {f"v_{name}": row.values[name] for name in columns}
                for row in with_text
            ]
            # One statement per row keeps the order of changes (unique pair hashes move).
            for param in params:
                conn.execute(statement, param)
            outcome.updated_ids.update(row.id for row in with_text if row.id is not None)
        if merged_only:
            columns = ["tuid", "usage_count", "changed_at", "changed_by", "props"]
            statement = (
                update(segments)
                .where(segments.c.id == bindparam("row_id"))
                .values({name: bindparam(f"v_{name}") for name in columns})
            )
            conn.execute(
                statement,
                [
                    {"row_id": row.id} | {f"v_{name}": row.values[name] for name in columns}
                    for row in merged_only
                ],
            )
    new_rows = [row.values for row in rows.values() if row.id is None]
    if new_rows:
        for values in new_rows:
            values["memory_id"] = memory_id
            values["revision"] = revision
        conn.execute(insert(segments), new_rows)
