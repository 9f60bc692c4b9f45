"""Lookups while a memory's index cannot answer: from the database, with the index brought up
to date behind them.

The index is a view of the database, rebuildable at will. When reading it fails (files
truncated or damaged under a revision that still looks current), or it is so far behind the
database that catching it up would hold a lookup for long (another process imported thousands
of segments), a lookup must not fail or wait with it: the memory's segments are ranked from the
database instead, by character similarity to the query, and the index is rebuilt or caught up in
a background thread. Until that is done, lookups of the memory take this path, and writes leave
its index alone (the catch-up after it takes them in: the revision says what is missing).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

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


T = TypeVar("T")


@dataclass
class IndexRepair:
    """One memory's index being rebuilt (`damaged`) or caught up (`behind`) in the background,
    and how far it got: `indexed` of about `total` segments (a catch-up's total is the count
    when it started; writes meanwhile add to what it takes in)."""

    memory_id: int
    memory: str
    reason: str
    total: int
    indexed: int = 0
    started: float = field(default_factory=time.monotonic)

    def counted(self, items: Iterable[T]) -> Iterator[T]:
        """Pass `items` (documents on their way into the index) through, counting them."""
        for item in items:
            self.indexed += 1
            yield item

    def as_dict(self) -> dict[str, object]:
        return {
            "memory": self.memory,
            "reason": self.reason,
            "indexed": self.indexed,
            "total": self.total,
            "seconds": round(time.monotonic() - self.started, 1),
        }


class IndexRepairs:
    """The memories whose index is being rebuilt or caught up in the background, one thread
    each."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, IndexRepair] = {}

    def active(self, memory_id: int) -> bool:
        with self._lock:
            return memory_id in self._running

    def memory_ids(self) -> list[int]:
        with self._lock:
            return sorted(self._running)

    def under_way(self) -> list[IndexRepair]:
        with self._lock:
            return [self._running[k] for k in sorted(self._running)]

    def start(
        self,
        memory: Memory,
        work: Callable[[Memory, IndexRepair], None],
        why: str,
        total: int,
        failed: bool = False,
    ) -> None:
        """Run `work` (a rebuild, a catch-up) on `memory`'s index in the background, unless
        something is already under way for it; `why` goes to the log, and `work` counts what it
        indexed through the repair it is given."""
        repair = IndexRepair(memory.id, memory.name, "damaged" if failed else "behind", total)
        with self._lock:
            if memory.id in self._running:
                return
            self._running[memory.id] = repair
        log.log(
            logging.ERROR if failed else logging.INFO,
            "index of memory %r %s (%s): answering from the database meanwhile",
            memory.name,
            "failed; rebuilding it" if failed else "behind; catching it up",
            why,
        )

        def run() -> None:
            try:
                work(memory, repair)
                log.info(
                    "index of memory %r is current again (%d segments indexed in %.1f s)",
                    memory.name,
                    repair.indexed,
                    time.monotonic() - repair.started,
                )
            except Exception:
                log.exception("bringing the index of memory %r up to date failed", memory.name)
            finally:
                with self._lock:
                    self._running.pop(memory.id, None)

        threading.Thread(target=run, name=f"index-upkeep-{memory.id}", daemon=True).start()
