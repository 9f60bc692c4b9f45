"""Import jobs survive the death of the process running them: reported, retried, expired."""

from __future__ import annotations

import json
import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from server_client import Client
from server_scenarios import create_memory, wait_for_job

from tm_guide.server.jobs import JobBoard

UNITS = 40_000


def big_tmx(units: int) -> bytes:
    body = "".join(
        f'<tu tuid="u{i}"><tuv xml:lang="en"><seg>Sentence number {i} about the file menu.</seg>'
        f'</tuv><tuv xml:lang="de"><seg>Satz Nummer {i} über das Dateimenü.</seg></tuv></tu>\n'
        for i in range(units)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en" '
        'datatype="plaintext" segtype="sentence" adminlang="en" creationtool="t" '
        f'creationtoolversion="1" o-tmf="t"/><body>\n{body}</body></tmx>\n'
    ).encode()


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(extra_env={"TM_GUIDE_MAX_IMPORT_BYTES": str(64 * 1024 * 1024)})


def test_a_killed_import_reads_interrupted_stored_nothing_and_can_be_retried(server) -> None:
    client: Client = server.client
    create_memory(client, "big")
    started = client.post(
        "/v1/memories/big/imports", raw=big_tmx(UNITS), headers={"Content-Type": "application/xml"}
    )
    assert started.status == 202, started.body
    status_url = started.headers["location"]
    deadline = time.monotonic() + 60
    while True:  # kill the worker while it is reading and writing the records
        job = client.get(status_url).json
        if job["status"] == "running" and job["progress"]["records_read"] > 0:
            break
        assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
        time.sleep(0.05)
    os.kill(job["worker"]["pid"], signal.SIGKILL)

    deadline = time.monotonic() + 60
    while True:  # gunicorn starts a new worker, which reads the job
        try:
            job = client.get(status_url).json
            if job["status"] != "running":
                break
        except OSError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job["status"] == "interrupted" and job["committed"] == "nothing", job
    memory = client.get("/v1/memories/big").json
    assert memory["segment_count"] == 0 and memory["revision"] == 0

    retried = client.post(status_url + "/retry")
    assert retried.status == 202, retried.body
    job = wait_for_job(client, status_url, timeout_s=300)
    assert job["status"] == "succeeded" and job["committed"] == "all", job
    assert client.get("/v1/memories/big").json["segment_count"] == UNITS
    again = client.post(status_url + "/retry")
    assert again.status == 409 and again.json["error"] == "conflict"


def test_ended_job_records_expire_and_running_ones_stay(tmp_path: Path) -> None:
    board = JobBoard(tmp_path, ttl_s=3600)
    old, running = board.new_job("import", "m", "k"), board.new_job("import", "m", "k")
    long_ago = (datetime.now(UTC) - timedelta(hours=2)).isoformat()
    board.update(old, status="succeeded", finished_at=long_ago)
    board.upload_path(old).write_bytes(b"x")
    board.update(running, status="running")
    assert board.expire() == 1
    assert not board.upload_path(old).exists()
    assert json.loads((tmp_path / f"{running}.json").read_text())["status"] == "running"
