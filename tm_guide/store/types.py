"""Plain dataclasses the store hands out, so callers never hold ORM rows or sessions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tm_guide.records import TranslationUnit


@dataclass(frozen=True)
class Memory:
    """A named translation memory for one language pair; `revision` grows with every change."""

    id: int
    name: str
    source_lang: str
    target_lang: str
    description: str
    revision: int
    segment_count: int
    created_at: datetime
    uuid: str = ""
    kind: str = "memory"  # one of MEMORY_KINDS


# what a memory holds: translation units, or glossary entries (one term and its translation)
MEMORY_KINDS = ("memory", "glossary")


@dataclass(kw_only=True)
class Segment(TranslationUnit):
    """A stored translation unit with its analysis (None until the aligner has run)."""

    id: int
    memory_id: int
    source_tokens: list[str] | None = None
    target_tokens: list[str] | None = None
    alignment: list[tuple[int, int]] | None = None
    tokenizer_id: str | None = None
    aligner_id: str | None = None


@dataclass(frozen=True)
class SearchHit:
    segment: Segment
    score: float


@dataclass(frozen=True)
class SegmentAnalysis:
    """Tokenized forms and word alignment of one segment, written by the aligner."""

    segment_id: int
    source_tokens: list[str]
    target_tokens: list[str]
    alignment: list[tuple[int, int]]
    tokenizer_id: str
    aligner_id: str


@dataclass
class ImportReport:
    """What an import (or a single add) did: new rows, merged duplicates, tuid replacements."""

    added: int = 0
    merged: int = 0
    updated: int = 0
    skipped: int = 0
    db_seconds: float = 0.0  # reading records and the database transaction
    index_seconds: float = 0.0  # bringing the full-text index in step after the commit

    @property
    def total(self) -> int:
        return self.added + self.merged + self.updated + self.skipped


@dataclass(frozen=True)
class ApiKey:
    """An API key as listed; the token itself is only shown once, at creation."""

    id: int
    name: str
    scopes: dict[str, str]
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def allows(self, memory_name: str, access: str) -> bool:
        """`write` implies `read`; "*" covers every memory."""
        granted = self.scopes.get(memory_name, self.scopes.get("*"))
        if granted is None or not self.active:
            return False
        return granted == "write" or access == "read"
