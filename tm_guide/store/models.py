"""SQLAlchemy tables. Alembic migrations in `migrations/` must mirror these (`alembic check`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Named constraints, so migrations can address them on every backend (and in SQLite batch mode).
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-numbers an INTEGER PRIMARY KEY; elsewhere 64-bit ids.
BigId = BigInteger().with_variant(Integer(), "sqlite")
# The largest id a BigId holds on either database: a larger number names no row (and would make
# the driver fail before the database could say so).
MAX_ID = 2**63 - 1


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class MemoryRow(Base):
    __tablename__ = "memories"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    uuid: Mapped[str] = mapped_column(String(32), nullable=False, unique=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False, unique=True)
    source_lang: Mapped[str] = mapped_column(String(35), nullable=False)
    target_lang: Mapped[str] = mapped_column(String(35), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    # MEMORY_KINDS: a translation memory, or a glossary (its segments are term entries)
    kind: Mapped[str] = mapped_column(String(16), nullable=False, server_default="memory")
    # Bumped by every change of the memory's segments; the full-text index records the revision
    # it reflects, which is how a stale index is detected.
    revision: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    segment_count: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class SegmentRow(Base):
    __tablename__ = "segments"
    __table_args__ = (
        UniqueConstraint("memory_id", "pair_hash"),
        UniqueConstraint("memory_id", "tuid"),
        Index("ix_segments_memory_id_revision", "memory_id", "revision"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    memory_id: Mapped[int] = mapped_column(
        BigId, ForeignKey("memories.id", ondelete="CASCADE"), nullable=False
    )
    source: Mapped[str] = mapped_column(Text, nullable=False)
    target: Mapped[str] = mapped_column(Text, nullable=False)
    tuid: Mapped[str | None] = mapped_column(String(255))
    context: Mapped[str | None] = mapped_column(Text)
    source_markup: Mapped[str | None] = mapped_column(Text)
    target_markup: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str | None] = mapped_column(String(255))
    changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    changed_by: Mapped[str | None] = mapped_column(String(255))
    usage_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    props: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # the unit's own language tags where they differ from the memory's (records.TranslationUnit)
    source_lang: Mapped[str | None] = mapped_column(String(35))
    target_lang: Mapped[str | None] = mapped_column(String(35))
    # Hash of (source, target, context): duplicate detection through a unique index.
    pair_hash: Mapped[str] = mapped_column(String(32), nullable=False)
    # The memory revision at which the indexed text (source) last changed: lets an index catch up.
    revision: Mapped[int] = mapped_column(BigInteger, nullable=False)
    source_tokens: Mapped[list[str] | None] = mapped_column(JSON)
    target_tokens: Mapped[list[str] | None] = mapped_column(JSON)
    alignment: Mapped[list[list[int]] | None] = mapped_column(JSON)
    tokenizer_id: Mapped[str | None] = mapped_column(String(64))
    aligner_id: Mapped[str | None] = mapped_column(String(64))


class ApiKeyRow(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False, unique=True)
    # sha256 hex of the token; the token itself is never stored.
    key_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    scopes: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


# Core handles for bulk statements (executemany) that bypass the ORM unit of work.
memories_table = cast(Table, MemoryRow.__table__)
segments_table = cast(Table, SegmentRow.__table__)
api_keys_table = cast(Table, ApiKeyRow.__table__)
