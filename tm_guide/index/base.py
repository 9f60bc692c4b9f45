"""The full-text index interface: the database is the source of truth, an index only a fast view.

An index records, per memory, the memory revision it reflects. The store compares that with the
database and catches up or rebuilds, so a stale or missing index is never used silently.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryKey:
    """Identifies one state of one memory: a re-created memory has a new uuid."""

    id: int
    uuid: str
    revision: int


@dataclass(frozen=True)
class IndexDoc:
    segment_id: int
    source: str


@dataclass
class IndexChange:
    """What one committed database transaction did to a memory's source side.

    `base_revision` is the revision the memory had before the transaction; the index only records
    `memory.revision` when it was exactly at `base_revision`, so concurrent writers can never make
    an index claim a revision whose changes it has not seen. `buffered`: the change may wait in
    memory (searchable at once) instead of paying a commit of its own, as single interactive edits
    should; the database revision lets a restarted or other process catch up without it.
    """

    memory: MemoryKey
    base_revision: int
    added: Iterable[IndexDoc] = ()
    updated: Iterable[IndexDoc] = ()
    deleted: Iterable[int] = ()
    buffered: bool = False


@dataclass(frozen=True)
class IndexOptions:
    """Retrieval settings. Only the rarest query words are scored: common words barely change
    BM25 ranks but dominate the cost of a query. At most `max_query_terms` words are used, and
    words are added (rarest first) only while their postings stay within `posting_budget`
    (the `min_query_terms` rarest are always used). This bounds the work per query whatever the
    size of the memory."""

    max_query_terms: int = 16
    min_query_terms: int = 2
    posting_budget: int = 20000
    writer_timeout_s: float = 30.0
    # Small changes wait in memory (searched at once) and reach the disk in one commit when this
    # many documents have gathered; the database revision lets other processes catch up.
    buffer_docs: int = 500
    # While the database revision matches, the disk index is looked at once per interval, not
    # on every query.
    refresh_interval_s: float = 1.0
    # Decoded postings kept per open memory (16 bytes each; 0 = none): a lookup of words seen
    # before reads no whoosh blocks.
    postings_cache: int = 1_000_000


class SourceIndex(ABC):
    """Top-M retrieval over the source side of a memory's segments (BM25 or similar)."""

    @abstractmethod
    def apply(self, change: IndexChange) -> None:
        """Apply the effect of one committed transaction."""

    def add(self, memory: MemoryKey, base_revision: int, docs: Iterable[IndexDoc]) -> None:
        self.apply(IndexChange(memory, base_revision, added=list(docs)))

    def update(self, memory: MemoryKey, base_revision: int, docs: Iterable[IndexDoc]) -> None:
        self.apply(IndexChange(memory, base_revision, updated=list(docs)))

    def delete(self, memory: MemoryKey, base_revision: int, segment_ids: Iterable[int]) -> None:
        self.apply(IndexChange(memory, base_revision, deleted=list(segment_ids)))

    @abstractmethod
    def catch_up(self, memory: MemoryKey, docs: Iterable[IndexDoc]) -> None:
        """(Re)index `docs` (every segment changed since the indexed revision) and record
        `memory.revision`."""

    @abstractmethod
    def rebuild(self, memory: MemoryKey, docs: Iterable[IndexDoc]) -> None:
        """Replace everything indexed for the memory by `docs` and record `memory.revision`."""

    @abstractmethod
    def indexed_revision(self, memory: MemoryKey) -> int | None:
        """The revision the index reflects for this memory, or None when it has none."""

    def is_current(self, memory: MemoryKey) -> bool:
        return self.indexed_revision(memory) == memory.revision

    @abstractmethod
    def search(self, memory: MemoryKey, text: str, limit: int) -> list[tuple[int, float]]:
        """(segment id, score) pairs, best first."""

    def verify(self, memory: MemoryKey) -> str | None:
        """Read everything indexed for the memory; what is wrong with it, or None when all of
        it reads (an index that keeps nothing on disk has nothing to verify)."""
        return None

    @abstractmethod
    def drop(self, memory: MemoryKey) -> None:
        """Forget the memory (it was deleted)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release open files."""
