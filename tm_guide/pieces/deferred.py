"""Word alignment of confirmed segments after their write was answered, batched across writes.

A translator confirming a segment needs it durable and searchable when the answer comes (the
store's commit and index update give that); its word alignment only serves guided pieces, and
the piece builder aligns any retrieved segment that has none on demand. So the write hands its
segment ids to a `DeferredAligner`, whose one background thread aligns whatever has queued up in
one eflomal run: 24 editors confirming at once cost one run instead of 24, and none of them waits
for it.

What a crash loses is only work: a queued segment is stored unaligned, and the first query that
retrieves it (or `tm-guide align`) aligns it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tm_guide.pieces.align import MemoryAligner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeferredOptions:
    """max_batch: segments aligned per eflomal run (more wait for the next run).
    linger_s:  how long the thread waits after the first queued segment for others to join its
               run; a few milliseconds turn a burst of writes into one run."""

    max_batch: int = 256
    linger_s: float = 0.01

    def __post_init__(self) -> None:
        if self.max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        if self.linger_s < 0:
            raise ValueError("linger_s must not be negative")


Outcome = Callable[[str, int], None]
"""Told what became of each run's segments: ("aligned" | "current" | "gone" | "failed", count)."""


class DeferredAligner:
    """A queue of segment ids and one daemon thread that aligns them in batches.

    The thread starts with the first `submit`, so constructing one has no side effect.
    """

    def __init__(
        self,
        aligner: MemoryAligner,
        options: DeferredOptions | None = None,
        on_outcome: Outcome | None = None,
    ) -> None:
        self.aligner = aligner
        self.options = options or DeferredOptions()
        self._on_outcome = on_outcome or (lambda outcome, count: None)
        self._pending: dict[int, None] = {}  # insertion-ordered set of segment ids
        self._running = 0  # segments taken by the thread and not yet stored
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, segment_ids: Iterable[int]) -> None:
        """Queue segments for alignment; returns at once."""
        with self._cond:
            if self._closed:
                return  # shutting down: the segments stay unaligned until first retrieved
            for segment_id in segment_ids:
                self._pending[int(segment_id)] = None
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="tm-guide-align", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def pending(self) -> int:
        """Segments queued or being aligned."""
        with self._cond:
            return len(self._pending) + self._running

    def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until every queued segment was aligned (or failed); False on timeout."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while self._pending or self._running:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout_s: float = 10.0) -> None:
        """Finish what is queued (up to `timeout_s`), then stop the thread."""
        self.drain(timeout_s)
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)

    # ---- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            try:
                self._align(batch)
            except Exception:
                # Nothing is lost: the segments stay unaligned and are aligned when retrieved.
                log.exception("deferred alignment of %d segments failed", len(batch))
                self._on_outcome("failed", len(batch))
            finally:
                with self._cond:
                    self._running = 0
                    self._cond.notify_all()

    def _next_batch(self) -> list[int] | None:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
        if self.options.linger_s:
            time.sleep(self.options.linger_s)
        with self._cond:
            batch = list(self._pending)[: self.options.max_batch]
            for segment_id in batch:
                del self._pending[segment_id]
            self._running = len(batch)
        return batch

    def _align(self, segment_ids: list[int]) -> None:
        # Re-read: a segment may have been aligned on demand by a query, replaced by an update
        # or deleted since it was queued.
        segments: list[Any] = self.aligner.store.get_segments(segment_ids)
        stale = [segment for segment in segments if not self.aligner.is_current(segment)]
        if stale:
            self.aligner.align_segments(stale)
            self._on_outcome("aligned", len(stale))
        if len(segments) > len(stale):
            self._on_outcome("current", len(segments) - len(stale))
        if len(segment_ids) > len(segments):
            self._on_outcome("gone", len(segment_ids) - len(segments))
