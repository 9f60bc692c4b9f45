"""Group commit: concurrent single-segment writes to one memory share one transaction.

Writes to a memory are serialized anyway (each takes the memory's row lock, or SQLite's write
lock, with its first statement), so 24 editors confirming at once would otherwise queue for 24
commits, 24 index updates and 24 revisions. Here the first writer to find no commit under way
becomes the leader: it takes every write queued for that memory (up to `max_group`), commits
them in one transaction, applies them to the index once, and hands each writer its segment. The
others wait for that, then return; whoever is still queued leads the next group. Nobody answers
before its segment is committed and indexed.

A group that fails is retried one write at a time, so one bad write fails only its own request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

R = TypeVar("R")  # a write
S = TypeVar("S")  # what the write gives back


class _Ticket(Generic[R, S]):
    __slots__ = ("write", "result", "error", "done")

    def __init__(self, write: R) -> None:
        self.write = write
        self.result: S | None = None
        self.error: BaseException | None = None
        self.done = False


class GroupCommit(Generic[R, S]):
    """Runs `commit(key, writes) -> results` (one result per write, in order) for groups of
    writes made concurrently under the same key."""

    def __init__(self, commit: Callable[[int, Sequence[R]], Sequence[S]], max_group: int) -> None:
        if max_group < 1:
            raise ValueError("max_group must be at least 1")
        self._commit = commit
        self.max_group = max_group
        self._cond = threading.Condition()
        self._queues: dict[int, list[_Ticket[R, S]]] = {}
        self._leading: set[int] = set()

    def write(self, key: int, write: R) -> S:
        """Commit `write` (with whatever else is queued under `key`) and return its result."""
        ticket: _Ticket[R, S] = _Ticket(write)
        with self._cond:
            self._queues.setdefault(key, []).append(ticket)
        while True:
            with self._cond:
                while not ticket.done and key in self._leading:
                    self._cond.wait()
                if ticket.done:
                    break
                self._leading.add(key)
                queue = self._queues[key]
                group = queue[: self.max_group]
                del queue[: len(group)]
            try:
                self._run(key, group)
            finally:
                with self._cond:
                    self._leading.discard(key)
                    if not self._queues.get(key):
                        self._queues.pop(key, None)
                    self._cond.notify_all()
        if ticket.error is not None:
            raise ticket.error
        return ticket.result  # type: ignore[return-value]

    def _run(self, key: int, group: list[_Ticket[R, S]]) -> None:
        try:
            try:
                results = self._commit(key, [t.write for t in group])
            except Exception:
                if len(group) == 1:
                    raise
                for ticket in group:  # find the write that failed; the others go through
                    self._run(key, [ticket])
                return
            for ticket, result in zip(group, results, strict=True):
                ticket.result = result
        except BaseException as exc:
            for ticket in group:
                if not ticket.done:
                    ticket.error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            for ticket in group:
                ticket.done = True
