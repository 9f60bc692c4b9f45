"""Micro-batching: the guided decoding of concurrent suggestion requests runs as one beam search.

Why: on a few CPU cores, one beam search per request thread makes the searches compete for the
same cores, and each step of a small batch is mostly per-call overhead. One decoding thread that
takes every request waiting and decodes their sentences together does the same work in little
more than the time of one search, and never runs more engine threads than there are cores.

Each request keeps its own semantics:
- retrieval, pieces and their rewards are prepared in the request's own thread before it is
  queued (and its output is shaped there afterwards), so a segment added just before the request
  is used by it, each request's memories, M, minimum similarity and reward type shape only its
  own pieces, and the decoding thread runs nothing but searches;
- only requests whose decoding options are equal (lambda, beam size, unguided twin, ...) share an
  engine call; the others are decoded in separate calls of the same round;
- when a shared call fails, its requests are decoded again one by one, so a bad request fails
  alone and the others get their results.

The output cap (a multiple of the source length) is one value per engine call, taken from the
longest sentence of the call, as for the segments of one multi-segment request.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

# decodes prepared sentences with the options they share: one result per item
SearchFn = Callable[[Sequence[Any], Any], list[Any]]


@dataclass
class _Job:
    items: list[Any]  # one prepared sentence each (GuidedTranslator.prepare)
    options: Any  # TranslateOptions.decoding(): what the engine call reads (the grouping key)
    enqueued: float
    done: threading.Event = field(default_factory=threading.Event)
    results: list[Any] | None = None
    error: BaseException | None = None
    started: float = 0.0  # when its engine call began
    batch_sentences: int = 0  # sentences in that call


@dataclass(frozen=True)
class Decoded:
    """The results of one request, with how long it queued and how big its engine call was."""

    results: list[Any]
    queued_s: float
    batch_sentences: int


class DecodeBatcher:
    """Collects decoding jobs from request threads and runs them on `decoders` decoding threads.

    The decoding threads take their rounds from one queue, so that while one decodes a batch the
    next can gather and decode the requests that arrived meanwhile: with one thread per core the
    engine calls run side by side (TorchScript and CTranslate2 release the GIL), and the load is
    shared by arrival, not by which connection a client happened to open."""

    def __init__(
        self, search: SearchFn, max_sentences: int, max_wait_s: float, decoders: int = 1
    ) -> None:
        self._search = search
        self.max_sentences = max(1, max_sentences)
        self.max_wait_s = max(0.0, max_wait_s)
        self.decoders = max(1, decoders)
        self._queue: collections.deque[_Job] = collections.deque()
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def translate(self, items: Sequence[Any], options: Any) -> Decoded:
        """Decode one request's prepared sentences and wait for its own results."""
        job = _Job(list(items), options.decoding(), time.perf_counter())
        with self._cond:
            if self._closed:
                raise RuntimeError("the decoder is shut down")
            self._queue.append(job)
            self._threads = [t for t in self._threads if t.is_alive()]
            while len(self._threads) < self.decoders:
                thread = threading.Thread(
                    target=self._run, name=f"tm-guide-decoder-{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
            self._cond.notify()
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.results is not None
        return Decoded(job.results, job.started - job.enqueued, job.batch_sentences)

    def close(self) -> None:
        """Finish what is queued, then stop the decoding threads."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=60)

    # -- decoding thread ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            jobs = self._next_round()
            if not jobs:
                return
            try:
                for group in _groups(jobs):
                    self._decode(group)
            finally:  # whatever happened, no request thread waits forever
                for job in jobs:
                    if not job.done.is_set():
                        job.error = job.error or RuntimeError("decoding was interrupted")
                        job.done.set()

    def _next_round(self) -> list[_Job]:
        """The jobs of the next round: wait for the first, then until `max_sentences` sentences
        are waiting or the oldest job has waited `max_wait_s`. Another decoding thread may take
        the waiting jobs meanwhile; then wait for new ones."""
        with self._cond:
            while True:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return []
                deadline = self._queue[0].enqueued + self.max_wait_s
                while not self._closed and self._queue and _count(self._queue) < self.max_sentences:
                    remaining = deadline - time.perf_counter()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                if self._queue:
                    break
            jobs = [self._queue.popleft()]
            total = len(jobs[0].items)
            while self._queue and total + len(self._queue[0].items) <= self.max_sentences:
                job = self._queue.popleft()
                jobs.append(job)
                total += len(job.items)
            return jobs

    def _decode(self, group: list[_Job]) -> None:
        items = [item for job in group for item in job.items]
        started = time.perf_counter()
        for job in group:
            job.started, job.batch_sentences = started, len(items)
        try:
            results = self._search(items, group[0].options)
        except Exception as exc:
            if len(group) == 1:
                group[0].error = exc
                group[0].done.set()
                return
            log.warning(
                "a batch of %d requests failed (%s); decoding them one by one", len(group), exc
            )
            for job in group:
                self._decode([job])
            return
        offset = 0
        for job in group:
            job.results = results[offset : offset + len(job.items)]
            offset += len(job.items)
            job.done.set()


def _count(queue: collections.deque[_Job]) -> int:
    return sum(len(job.items) for job in queue)


def _groups(jobs: list[_Job]) -> list[list[_Job]]:
    """Jobs with equal decoding options, in order of their first arrival."""
    groups: dict[Any, list[_Job]] = {}
    for job in jobs:
        groups.setdefault(job.options, []).append(job)
    return list(groups.values())


class DirectDecoder:
    """No batching: each request decodes in its own thread (TM_GUIDE_BATCH_MAX_SENTENCES=1)."""

    def __init__(self, search: SearchFn) -> None:
        self._search = search

    def translate(self, items: Sequence[Any], options: Any) -> Decoded:
        return Decoded(self._search(items, options), 0.0, len(items))

    def close(self) -> None:
        """Nothing to stop."""
