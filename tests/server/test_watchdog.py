"""The request watchdog cancels a request thread that runs past its limit, and only that one."""

from __future__ import annotations

import threading
import time

import pytest

from tm_guide.config import Settings
from tm_guide.errors import RequestTimedOut
from tm_guide.server import create_app
from tm_guide.server.config import Limits, ServerConfig
from tm_guide.server.watchdog import Watchdog


def spin(watchdog: Watchdog, outcome: list[str], seconds: float | None) -> None:
    token = watchdog.start_request("GET /spin")
    lock = threading.Lock()
    try:
        with lock:  # released on the way out, as a memory's lock is
            deadline = None if seconds is None else time.monotonic() + seconds
            while deadline is None or time.monotonic() < deadline:
                pass
        outcome.append("finished")
    except RequestTimedOut:
        outcome.append("cancelled" if not lock.locked() else "cancelled, lock held")
    finally:
        watchdog.end_request(token)


def test_a_spinning_request_is_cancelled_and_its_locks_released(caplog) -> None:
    watchdog = Watchdog(limit_s=0.3, interval_s=0.05)
    outcome: list[str] = []
    thread = threading.Thread(target=spin, args=(watchdog, outcome, None), daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the spinning thread was not stopped"
    assert outcome == ["cancelled"]
    assert "cancelling GET /spin" in caplog.text
    assert watchdog.overdue() == []


def test_requests_within_the_limit_are_left_alone() -> None:
    watchdog = Watchdog(limit_s=1.0, interval_s=0.05)
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=spin, args=(watchdog, outcomes, 0.1), daemon=True) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    time.sleep(0.3)  # the monitor looks again after they ended: nothing is raised late
    assert outcomes == ["finished"] * 4


def test_an_app_answers_a_cancelled_request_with_a_503(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wired into the app: the request thread gets RequestTimedOut, the client a JSON 503, and
    the next request is served."""
    config = ServerConfig(settings=Settings(), limits=Limits(request_timeout_s=0.3))
    app = create_app(config)

    @app.get("/v1/test-spin")
    def endless() -> str:
        while True:
            pass

    client = app.test_client()
    started = time.monotonic()
    reply = client.get("/v1/test-spin")
    assert reply.status_code == 503
    assert reply.get_json()["error"] == "request_timeout"
    assert time.monotonic() - started < 5
    assert client.get("/health").status_code == 200
