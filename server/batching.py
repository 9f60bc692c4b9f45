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

Deadlines: a CAT tool waits a few seconds for an answer (Weblate 5 s), after which the work is
thrown away. A request with a deadline is decoded at the first of these levels whose predicted
end meets it: its own beam size, half of it, greedy (beam 1); where none does, it is not
decoded at all (`tm-only`: the caller answers from the translation memory). The prediction is
the work queued ahead plus its own, at the seconds per sentence measured for each beam size on
this worker's own engine calls (nothing is degraded before the first measurement, except a
request whose deadline has passed before it reaches the decoder). A request still queued when
its deadline comes is taken out of the queue and answered tm-only then.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

log = logging.getLogger(__name__)

# decodes prepared sentences with the options they share: one result per item
SearchFn = Callable[[Sequence[Any], Any], list[Any]]


# how a request was decoded to meet its deadline (None: as asked), least cut first: half the
# beam; greedy; some sentences without TM pieces (their retrieval would have ended too late,
# tm_guide.server.pipeline); not decoded (answered from the memory)
DEGRADED_LEVELS = ("beam", "greedy", "unguided", "tm-only")


@dataclass
class _Job:
    items: list[Any]  # one prepared sentence each (GuidedTranslator.prepare)
    options: Any  # TranslateOptions.decoding(): what the engine call reads (the grouping key)
    enqueued: float
    degraded: str | None = None
    done: threading.Event = field(default_factory=threading.Event)
    results: list[Any] | None = None
    error: BaseException | None = None
    started: float = 0.0  # when its engine call began
    batch_sentences: int = 0  # sentences in that call


@dataclass(frozen=True)
class Decoded:
    """The results of one request, with how long it queued and how big its engine call was."""

    results: list[Any]  # None for each sentence of a request answered tm-only
    queued_s: float
    batch_sentences: int
    degraded: str | None = None  # one of DEGRADED_LEVELS, or None


class SentenceCosts:
    """Seconds per sentence of recent engine calls, per beam size (a moving average)."""

    WEIGHT = 0.3

    def __init__(self) -> None:
        self._per_beam: dict[int, float] = {}
        self._lock = threading.Lock()

    def record(self, beam: int, sentences: int, seconds: float) -> None:
        if sentences <= 0:
            return
        value = seconds / sentences
        with self._lock:
            before = self._per_beam.get(beam)
            self._per_beam[beam] = (
                value if before is None else before + self.WEIGHT * (value - before)
            )

    def estimate(self, beam: int) -> float | None:
        """Seconds per sentence at `beam`: measured, else scaled from the nearest wider beam
        measured (work grows about linearly with the beam), else None."""
        with self._lock:
            if beam in self._per_beam:
                return self._per_beam[beam]
            wider = sorted(b for b in self._per_beam if b > beam)
            return self._per_beam[wider[0]] * beam / wider[0] if wider else None


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
        self.costs = SentenceCosts()
        self._running_until = 0.0  # predicted end of the engine calls under way
        self._calls = 0  # engine calls under way

    def translate(
        self, items: Sequence[Any], options: Any, deadline: float | None = None
    ) -> Decoded:
        """Decode one request's prepared sentences and wait for its own results; with a
        `deadline` (time.perf_counter() seconds), degraded as the module says to meet it."""
        job = _Job(list(items), options.decoding(), time.perf_counter())
        with self._cond:
            if self._closed:
                raise RuntimeError("the decoder is shut down")
            if deadline is not None:
                self._fit(job, deadline)
                if job.degraded == "tm-only":
                    return Decoded([None] * len(job.items), 0.0, 0, "tm-only")
            self._queue.append(job)
            self._threads = [t for t in self._threads if t.is_alive()]
            while len(self._threads) < self.decoders:
                thread = threading.Thread(
                    target=self._run, name=f"tm-guide-decoder-{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
            self._cond.notify()
        if deadline is not None and not job.done.wait(max(0.0, deadline - time.perf_counter())):
            with self._cond:
                if job in self._queue:  # never started: answered tm-only now, not decoded late
                    self._queue.remove(job)
                    waited = time.perf_counter() - job.enqueued
                    return Decoded([None] * len(job.items), waited, 0, "tm-only")
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.results is not None
        return Decoded(job.results, job.started - job.enqueued, job.batch_sentences, job.degraded)

    def _fit(self, job: _Job, deadline: float) -> None:
        """Choose the job's level (under the lock): the widest beam whose predicted end meets
        `deadline`, else tm-only (at once where the deadline has passed, whatever is known of
        the speed)."""
        search = job.options.search
        now = time.perf_counter()
        if now >= deadline:  # passed already (retrieval took it): nothing decoded would be read
            job.degraded = "tm-only"
            return
        ahead = (
            max(0.0, self._running_until - now)
            + sum(
                self._cost(queued.options.search.beam_size, len(queued.items))
                for queued in self._queue
            )
            / self.decoders
        )
        levels: list[tuple[str | None, int]] = [(None, search.beam_size)]
        if search.beam_size > 2:
            levels.append(("beam", search.beam_size // 2))
        if search.beam_size > 1:
            levels.append(("greedy", 1))
        for level, beam in levels:
            own = self.costs.estimate(beam)
            if own is None or now + ahead + own * len(job.items) <= deadline:
                if level is not None:
                    job.degraded = level
                    job.options = replace(
                        job.options,
                        search=replace(search, beam_size=beam),
                        return_unguided=False,
                    )
                return
        job.degraded = "tm-only"

    def _cost(self, beam: int, sentences: int) -> float:
        return (self.costs.estimate(beam) or 0.0) * sentences

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
        beam = group[0].options.search.beam_size
        for job in group:
            job.started, job.batch_sentences = started, len(items)
        with self._cond:
            self._calls += 1
            self._running_until = max(self._running_until, started + self._cost(beam, len(items)))
        try:
            results = self._search(items, group[0].options)
            self.costs.record(beam, len(items), time.perf_counter() - started)
        except Exception as exc:
            self._call_ended()
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
        self._call_ended()  # before any request thread wakes and predicts its own end
        offset = 0
        for job in group:
            job.results = results[offset : offset + len(job.items)]
            offset += len(job.items)
            job.done.set()

    def _call_ended(self) -> None:
        with self._cond:
            self._calls = max(0, self._calls - 1)
            if not self._calls:
                self._running_until = 0.0


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

    def translate(
        self, items: Sequence[Any], options: Any, deadline: float | None = None
    ) -> Decoded:
        """Decoded at once in this thread: nothing queues, so no deadline is predicted."""
        return Decoded(self._search(items, options), 0.0, len(items))

    def close(self) -> None:
        """Nothing to stop."""
