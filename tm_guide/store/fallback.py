"""Lookups while a memory's index cannot answer: from the database, and a repair behind them.

The index is a view of the database, rebuildable at will. When reading it fails (files
truncated or damaged under a revision that still looks current), a lookup must not fail with
it: the memory's segments are ranked from the database instead, by character similarity to the
query, and the index is rebuilt in a background thread. Until the rebuild is done, lookups of
that memory keep taking this path.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from rapidfuzz import fuzz, process
from sqlalchemy import Engine, select

from tm_guide.store.models import segments_table
from tm_guide.store.types import Memory

log = logging.getLogger(__name__)

# A database lookup ranks at most this many segments of a memory (its newest): a bound on the
# work of one degraded request, far above what help and UI memories hold.
MAX_SCANNED = 200_000


def database_search(
    engine: Engine, memory: Memory, text: str, limit: int
) -> list[tuple[int, float]]:
    """(segment id, score) of the `limit` segments whose source is most like `text`; the score
    is rapidfuzz's ratio (0-100), which ranks these above any BM25 score of a healthy index, so
    that a degraded memory's candidates are not cut when several memories are searched."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(segments_table.c.id, segments_table.c.source)
            .where(segments_table.c.memory_id == memory.id)
            .order_by(segments_table.c.id.desc())
            .limit(MAX_SCANNED)
        ).all()
    ranked = process.extract(
        text, {row.id: row.source for row in rows}, scorer=fuzz.ratio, limit=limit
    )
    return [(int(segment_id), float(score)) for _, score, segment_id in ranked]


class IndexRepairs:
    """The memories whose index is being rebuilt after it failed, one thread each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[int] = set()

    def active(self, memory_id: int) -> bool:
        with self._lock:
            return memory_id in self._running

    def names(self) -> list[int]:
        with self._lock:
            return sorted(self._running)

    def start(self, memory: Memory, rebuild: Callable[[Memory], None], error: Exception) -> None:
        """Rebuild `memory`'s index in the background, unless that is already under way."""
        with self._lock:
            if memory.id in self._running:
                return
            self._running.add(memory.id)
        log.error(
            "index of memory %r failed (%s: %s): answering from the database and rebuilding it",
            memory.name,
            type(error).__name__,
            error,
        )

        def run() -> None:
            try:
                rebuild(memory)
                log.warning("index of memory %r rebuilt", memory.name)
            except Exception:
                log.exception("rebuilding the index of memory %r failed", memory.name)
            finally:
                with self._lock:
                    self._running.discard(memory.id)

        threading.Thread(target=run, name=f"index-repair-{memory.id}", daemon=True).start()
