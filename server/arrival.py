"""When the request a thread is answering had fully arrived (time.perf_counter() seconds).

The worker reads each request whole on its main loop before a request thread takes it
(tm_guide.server.worker); under load the request then waits for a free thread. A deadline counted
from when the thread began would leave that wait out, and a CAT tool that gives up after 5 s
would get answers it has already thrown away. The worker marks the arrival here for the thread
it hands the request to; outside that worker (the Flask test server, other WSGI servers) nothing
is marked and the request's own start is used.
"""

from __future__ import annotations

import threading

_local = threading.local()


def mark(arrived: float | None) -> None:
    _local.arrived = arrived


def arrived() -> float | None:
    value: float | None = getattr(_local, "arrived", None)
    return value
