"""The request watchdog: a request still running past its time limit is cancelled in its thread.

A request thread that never returns (a loop that does not end, a lock never released) holds a
worker thread and whatever locks it took for good, and other requests pile up behind them. The
watchdog looks at the running requests once per interval; one past the limit is logged and
`RequestTimedOut` is raised inside its thread (CPython's asynchronous exception, delivered at
the thread's next Python instruction), so its `with` blocks release their locks on the way out
and the client gets a 503 in its protocol's shape. A thread inside a long C call (a database
query, a decoding batch) gets it when that call returns. The watch ends when the view returns:
a streamed body (an export) is written after that, for as long as its client reads it.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import threading
import time
from dataclasses import dataclass

from tm_guide.errors import RequestTimedOut

log = logging.getLogger(__name__)


@dataclass
class _Running:
    thread_id: int
    what: str
    started: float
    cancelled: bool = False


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise `exception` in the thread `thread_id` at its next instruction (None: withdraw one
    not raised yet)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None
    )


class Watchdog:
    """Cancels requests that run past `limit_s` seconds, looking every `interval_s`."""

    def __init__(self, limit_s: float, interval_s: float = 1.0) -> None:
        self.limit_s = limit_s
        self.interval_s = min(interval_s, max(limit_s / 4, 0.01))
        self._lock = threading.Lock()
        self._running: dict[int, _Running] = {}
        self._tokens = itertools.count()
        self._monitor: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        return self.limit_s > 0

    def start_request(self, what: str) -> int | None:
        """Watch the calling thread's request; the token ends the watch (None: watchdog off)."""
        if not self.enabled:
            return None
        with self._lock:
            if self._monitor is None or not self._monitor.is_alive():
                # started by the first request, in the process that serves it (after the fork)
                self._monitor = threading.Thread(
                    target=self._watch, name="tm-guide-watchdog", daemon=True
                )
                self._monitor.start()
            token = next(self._tokens)
            self._running[token] = _Running(threading.get_ident(), what, time.monotonic())
            return token

    def end_request(self, token: int | None) -> None:
        if token is None:
            return
        try:
            with self._lock:
                running = self._running.pop(token, None)
                if running is not None and running.cancelled:
                    _raise_in(running.thread_id, None)  # a cancel that came too late is void
        except RequestTimedOut:  # it arrived while this thread was ending the watch
            with self._lock:
                self._running.pop(token, None)

    def overdue(self) -> list[str]:
        """What the running requests past the limit are (for logs and tests)."""
        now = time.monotonic()
        with self._lock:
            return [r.what for r in self._running.values() if now - r.started > self.limit_s]

    def _watch(self) -> None:
        while True:
            time.sleep(self.interval_s)
            now = time.monotonic()
            with self._lock:
                for running in self._running.values():
                    if running.cancelled or now - running.started <= self.limit_s:
                        continue
                    running.cancelled = True
                    log.error(
                        "cancelling %s: still running after %.1f s (limit %.1f s, "
                        "TM_GUIDE_REQUEST_TIMEOUT_S)",
                        running.what,
                        now - running.started,
                        self.limit_s,
                    )
                    _raise_in(running.thread_id, RequestTimedOut)
