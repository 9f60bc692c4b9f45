"""Background import jobs whose state lives in small JSON files, so any worker can answer a poll.

One job = an uploaded file `<id>.upload` plus its state `<id>.json` (rewritten atomically). Jobs of
one worker run one after another on a single thread: imports are write-heavy and the store takes
one transaction per import, so running them side by side would only make them wait on each other.
A worker that dies mid-job leaves its job "running"; the state says when it last made progress.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from tm_guide.errors import NotFound, TMGuideError

log = logging.getLogger(__name__)

JOB_ID_LENGTH = 16


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class CountingReader:
    """A binary file whose read position tells the job how far the parser has got."""

    def __init__(self, raw: IO[bytes], name: str) -> None:
        self._raw = raw
        self.name = name
        self.bytes_read = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.bytes_read += len(data)
        return data


class JobBoard:
    """Creates, runs and reports import jobs for one worker."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _path(self, job_id: str, suffix: str) -> Path:
        if not (len(job_id) == JOB_ID_LENGTH * 2 and all(c in "0123456789abcdef" for c in job_id)):
            raise NotFound(f"no job '{job_id}'")
        return self.directory / f"{job_id}{suffix}"

    def upload_path(self, job_id: str) -> Path:
        return self._path(job_id, ".upload")

    def new_job(self, kind: str, memory: str, owner: str) -> str:
        self.directory.mkdir(parents=True, exist_ok=True)
        job_id = secrets.token_hex(JOB_ID_LENGTH)
        self.write(
            job_id,
            {
                "id": job_id,
                "kind": kind,
                "memory": memory,
                "owner": owner,
                "status": "queued",
                "phase": "queued",
                "progress": {"bytes_read": 0, "bytes_total": 0, "records_read": 0, "fraction": 0.0},
                "result": None,
                "error": None,
                "created_at": _now(),
                "updated_at": _now(),
                "finished_at": None,
            },
        )
        return job_id

    def read(self, job_id: str) -> dict[str, Any]:
        path = self._path(job_id, ".json")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotFound(f"no job '{job_id}'") from None

    def write(self, job_id: str, state: dict[str, Any]) -> None:
        path = self._path(job_id, ".json")
        state["updated_at"] = _now()
        tmp = path.with_suffix(f".tmp{threading.get_ident()}")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, path)

    def update(self, job_id: str, **changes: Any) -> dict[str, Any]:
        state = self.read(job_id)
        state.update(changes)
        self.write(job_id, state)
        return state

    def submit(self, job_id: str, work: Callable[[JobProgress], dict[str, Any]]) -> None:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="tm-guide-job"
                )
            self._executor.submit(self._run, job_id, work)

    def _run(self, job_id: str, work: Callable[[JobProgress], dict[str, Any]]) -> None:
        self.update(job_id, status="running", phase="reading")
        try:
            result = work(JobProgress(self, job_id))
        except TMGuideError as exc:
            self.update(job_id, status="failed", error=exc.to_dict(), finished_at=_now())
        except Exception:
            log.exception("job %s failed", job_id)
            self.update(
                job_id,
                status="failed",
                error={"error": "internal_error", "message": "the job failed; see the server log"},
                finished_at=_now(),
            )
        else:
            self.update(job_id, status="succeeded", phase="done", result=result, finished_at=_now())
        finally:
            self.upload_path(job_id).unlink(missing_ok=True)

    def shutdown(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None


class JobProgress:
    """What a running job reports; writes are throttled so that progress costs next to nothing."""

    INTERVAL_S = 0.5

    def __init__(self, board: JobBoard, job_id: str) -> None:
        self.board = board
        self.job_id = job_id
        self._last = 0.0

    def phase(self, name: str) -> None:
        self.board.update(self.job_id, phase=name)

    def records(
        self, records: Iterator[Any], reader: CountingReader, total_bytes: int
    ) -> Iterator[Any]:
        """Pass records through, recording how many were read and how much of the file that was."""
        count = 0
        for record in records:
            count += 1
            now = time.monotonic()
            if now - self._last >= self.INTERVAL_S:
                self._last = now
                self._report(count, reader.bytes_read, total_bytes)
            yield record
        self._report(count, reader.bytes_read, total_bytes)

    def _report(self, count: int, done: int, total: int) -> None:
        fraction = round(min(1.0, done / total), 4) if total else 1.0
        self.board.update(
            self.job_id,
            progress={
                "bytes_read": done,
                "bytes_total": total,
                "records_read": count,
                "fraction": fraction,
            },
        )
