"""Import jobs survive the death of the process running them: reported, retried, expired."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

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


def refused_post(  # type: ignore[no-untyped-def]
    client: Client, path: str, chunks, content_type: str, length: int | None = None
) -> tuple[int, bytes]:
    """A POST of `chunks`, with a Content-Length of `length`, or chunked without one; the server
    may answer and close before the whole body is sent, as it does when it refuses one."""
    conn = http.client.HTTPConnection(client.host, client.port, timeout=120)
    try:
        conn.putrequest("POST", path)
        headers = {"Authorization": f"Bearer {client.token}", "Content-Type": content_type}
        if length is None:
            headers["Transfer-Encoding"] = "chunked"
        else:
            headers["Content-Length"] = str(length)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        try:
            for chunk in chunks:
                conn.send(chunk if length else f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            if length is None:
                conn.send(b"0\r\n\r\n")
        except OSError:  # answered and closed before the whole body was sent
            pass
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_refused_uploads_leave_no_job_and_no_file(server) -> None:
    """An upload over the limit, by Content-Length or chunked, is a 413 that leaves no job queued
    and no partial upload on disk; a chunked JSON body over the body limit is a 413 too, not a
    body cut at the limit."""
    client: Client = server.client
    create_memory(client, "refused")
    jobs_dir = Path(server.env["TM_GUIDE_JOBS_DIR"])
    limit = 64 * 1024 * 1024
    piece = b"<!-- padding -->" * 65536  # 1 MiB
    too_big = limit // len(piece) + 2
    for length in (too_big * len(piece), None):
        status, body = refused_post(
            client,
            "/v1/memories/refused/imports",
            (piece for _ in range(too_big)),
            "application/xml",
            length,
        )
        assert status == 413, (length, body[:300])
    states = [json.loads(p.read_text()) for p in jobs_dir.glob("*.json")]
    assert [s["status"] for s in states if s["memory"] == "refused"] in ([], ["failed"] * 2)
    assert not [s for s in states if s["status"] in ("queued", "running")]
    assert list(jobs_dir.glob("*.upload")) == []
    # the JSON body limit (256 KiB on these test servers), chunked, padded with spaces
    padded = b'{"source": "a", "target": "b"' + b" " * (300 * 1024) + b"}"
    status, body = refused_post(
        client,
        "/v1/memories/refused/segments",
        (padded[i : i + 65536] for i in range(0, len(padded), 65536)),
        "application/json",
    )
    assert status == 413, body[:300]
    assert client.get("/v1/memories/refused").json["segment_count"] == 0


def test_a_job_killed_while_indexing_reads_committed_and_is_resumed(server) -> None:
    """kill -9 once the import committed, while the index takes its records in: the job reads
    committed "all" and the next worker takes it up again; the memory holds every unit once,
    and a lookup finds one (the index caught up with the database by itself)."""
    client: Client = server.client
    create_memory(client, "indexed")
    started = client.post(
        "/v1/memories/indexed/imports",
        raw=big_tmx(UNITS),
        headers={"Content-Type": "application/xml"},
    )
    assert started.status == 202, started.body
    status_url = started.headers["location"]
    deadline = time.monotonic() + 120
    phases = []
    while True:
        job = client.get(status_url).json
        phases.append(job["phase"])
        if job["phase"] == "indexing":
            break
        assert job["status"] in ("queued", "running") and time.monotonic() < deadline, job
        time.sleep(0.02)
    os.kill(job["worker"]["pid"], signal.SIGKILL)
    assert "reading" in phases

    deadline = time.monotonic() + 120
    while True:  # the next worker reads the job as interrupted, then resumes and ends it
        try:
            job = client.get(status_url).json
            if job["status"] == "succeeded":
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["committed"] == "all" and job["result"]["resumed"] is True, job
    memory = client.get("/v1/memories/indexed").json
    assert memory["segment_count"] == UNITS
    found = client.get(
        "/tmserver/en/de/unit/" + quote("Sentence number 39998 about the file menu.")
    )
    assert found.status == 200, found.body
    assert found.json[0]["target"] == "Satz Nummer 39998 über das Dateimenü."


def test_a_retried_job_that_had_committed_changes_nothing(server) -> None:
    """A job that died in the instant between its commit and the phase's change reads as
    having stored nothing, and may be retried: the retry merges every unit into what the first
    run committed, so that the memory ends exactly as one import leaves it."""
    client: Client = server.client
    create_memory(client, "twice")
    tmx = big_tmx(50)
    first = client.post(
        "/v1/memories/twice/imports", raw=tmx, headers={"Content-Type": "application/xml"}
    )
    assert wait_for_job(client, first.headers["location"])["status"] == "succeeded"
    before = client.get("/v1/memories/twice").json
    board = JobBoard(Path(server.env["TM_GUIDE_JOBS_DIR"]))
    job_id = board.new_job("import", "twice", "admin")
    board.upload_path(job_id).write_bytes(tmx)
    dead = {"host": socket.gethostname(), "pid": 2**22 + 1, "started": "0"}
    board.update(job_id, status="running", phase="committing", worker=dead)
    job = client.get(f"/v1/jobs/{job_id}").json
    assert (job["status"], job["committed"]) == ("interrupted", "nothing"), job
    retried = client.post(f"/v1/jobs/{job_id}/retry")
    assert retried.status == 202, retried.body
    job = wait_for_job(client, f"/v1/jobs/{job_id}")
    assert job["status"] == "succeeded" and job["result"]["added"] == 0, job
    assert job["result"]["merged"] + job["result"]["updated"] == 50, job
    after = client.get("/v1/memories/twice").json
    assert after["segment_count"] == before["segment_count"] == 50
