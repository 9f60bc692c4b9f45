"""Background import jobs whose state lives in small JSON files, so any worker can answer a poll.

One job = an uploaded file `<id>.upload` plus its state `<id>.json` (rewritten atomically). Jobs of
one worker run one after another on a single thread: imports are write-heavy and the store takes
one transaction per import, so running them side by side would only make them wait on each other.

A job names the process running it (`worker`: host, pid and the process's start time, so a reused
pid is not mistaken for it). A queued or running job whose process is gone (a crash, a kill -9, a
restart) reads as "interrupted", with `committed` saying what reached the database: "nothing"
while the file was still being read or committed (an import is one transaction), "all" once it
was committed (only the indexing or alignment after it was cut short: the index catches up with
the database's revision by itself, and the alignment is resumed). An
interrupted job that committed nothing keeps its upload and can be retried; one that committed
all is taken up again by the next worker to start (`alignments_to_resume`, `claim`), which
aligns what the import stored. Finished and interrupted job records are deleted `ttl_s` after
they ended (TM_GUIDE_JOB_TTL_HOURS).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from tm_guide.errors import Conflict, NotFound, TMGuideError

log = logging.getLogger(__name__)

JOB_ID_LENGTH = 16
ACTIVE = ("queued", "running")
ENDED = ("succeeded", "failed", "interrupted")
# An import's phases: queued, reading (records read and written into one open transaction),
# committing (all read; the transaction commits), indexing (committed; the search index takes
# the records in), aligning, done. A job cut short before indexing committed nothing, or, if it
# died in the instant between the commit and the phase's change, all of it: retrying it is safe
# either way, because an import merges the pairs a memory already holds.
UNCOMMITTED_PHASES = ("queued", "reading", "committing")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def process_start_time(pid: int) -> str | None:
    """When process `pid` started (Linux: field 22 of /proc/<pid>/stat), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def this_worker() -> dict[str, Any]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": process_start_time(pid)}


def worker_alive(worker: dict[str, Any] | None) -> bool:
    """Whether the process that ran a job still runs; a job of another host is taken as alive
    (its own server reports it)."""
    if not worker or worker.get("host") != socket.gethostname():
        return True
    started = process_start_time(int(worker.get("pid", -1)))
    return started is not None and started == worker.get("started")


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

    def __init__(self, directory: Path, ttl_s: float = 7 * 24 * 3600) -> None:
        self.directory = directory
        self.ttl_s = ttl_s
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._running: dict[str, Future[None]] = {}

    def _path(self, job_id: str, suffix: str) -> Path:
        if not (len(job_id) == JOB_ID_LENGTH * 2 and all(c in "0123456789abcdef" for c in job_id)):
            raise NotFound(f"no job '{job_id}'")
        return self.directory / f"{job_id}{suffix}"

    def upload_path(self, job_id: str) -> Path:
        return self._path(job_id, ".upload")

    def new_job(
        self,
        kind: str,
        memory: str,
        owner: str,
        file_format: str = "tmx",
        phase: str = "queued",
        **extra: Any,
    ) -> str:
        """A queued job; `phase` "aligning" for records a request already committed."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.expire()
        job_id = secrets.token_hex(JOB_ID_LENGTH)
        self.write(
            job_id,
            {
                "id": job_id,
                "kind": kind,
                "format": file_format,
                "memory": memory,
                "owner": owner,
                "status": "queued",
                "phase": phase,
                "progress": {"bytes_read": 0, "bytes_total": 0, "records_read": 0, "fraction": 0.0},
                "result": None,
                "error": None,
                "created_at": _now(),
                "updated_at": _now(),
                "finished_at": None,
                "worker": this_worker(),
                "committed": None,
                **extra,
            },
        )
        return job_id

    def read(self, job_id: str) -> dict[str, Any]:
        """The job's state; one whose process died is marked interrupted here, once."""
        path = self._path(job_id, ".json")
        try:
            state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotFound(f"no job '{job_id}'") from None
        if state.get("status") in ACTIVE and not worker_alive(state.get("worker")):
            committed = "nothing" if state.get("phase") in UNCOMMITTED_PHASES else "all"
            state.update(
                status="interrupted",
                committed=committed,
                finished_at=_now(),
                error={
                    "error": "interrupted",
                    "message": "the server process running this job stopped before it ended; "
                    + (
                        "nothing was stored, retry it"
                        if committed == "nothing"
                        else "its records were stored; only their indexing or alignment was "
                        "cut short, which is resumed"
                    ),
                },
            )
            self.write(job_id, state)
            if committed == "all":
                self.upload_path(job_id).unlink(missing_ok=True)
        return state

    def alignments_to_resume(self) -> list[str]:
        """Jobs whose records were committed but whose process died while aligning them (read
        as interrupted with `committed` "all"), not yet taken up again by any process."""
        found = []
        for path in sorted(self.directory.glob("*.json")) if self.directory.exists() else []:
            job_id = path.stem
            try:
                state = self.read(job_id)
            except (NotFound, OSError, ValueError):
                continue
            if (
                state.get("kind") == "import"
                and state.get("status") == "interrupted"
                and state.get("committed") == "all"
                and not state.get("resumed_at")
            ):
                found.append(job_id)
        return found

    def claim(self, job_id: str) -> bool:
        """Take job `job_id` up again in this process, unless another process already did (the
        first to create its claim file wins, whichever worker or replica it is)."""
        try:
            fd = os.open(self._path(job_id, ".claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.close(fd)
        self.update(
            job_id, status="running", phase="aligning", worker=this_worker(), resumed_at=_now()
        )
        return True

    def refuse(self, job_id: str, error: dict[str, str]) -> None:
        """End a job before it ran (its upload was unusable): failed, nothing stored."""
        self.update(job_id, status="failed", error=error, committed="nothing", finished_at=_now())

    def retry(self, job_id: str) -> dict[str, Any]:
        """Queue an interrupted job that committed nothing again, with the same upload."""
        with self._lock:
            return self._requeue(job_id)

    def _requeue(self, job_id: str) -> dict[str, Any]:
        state = self.read(job_id)
        if state["status"] != "interrupted" or state.get("committed") != "nothing":
            raise Conflict(
                f"job '{job_id}' is {state['status']}; only an interrupted job that stored "
                "nothing can be retried",
                field="job_id",
            )
        if not self.upload_path(job_id).is_file():
            raise Conflict(f"the upload of job '{job_id}' is gone; start a new import")
        return self.update(
            job_id,
            status="queued",
            phase="queued",
            error=None,
            committed=None,
            finished_at=None,
            worker=this_worker(),
        )

    def expire(self) -> int:
        """Delete the records (and any upload) of jobs that ended more than `ttl_s` ago."""
        cutoff = time.time() - self.ttl_s
        removed = 0
        for path in self.directory.glob("*.json"):
            try:
                state = json.loads(path.read_text(encoding="utf-8"))
                ended = state.get("finished_at")
                if state.get("status") not in ENDED or not ended:
                    continue
                if datetime.fromisoformat(ended).timestamp() >= cutoff:
                    continue
            except (OSError, ValueError):
                continue
            path.unlink(missing_ok=True)
            path.with_suffix(".upload").unlink(missing_ok=True)
            path.with_suffix(".claim").unlink(missing_ok=True)
            removed += 1
        return removed

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
            future = self._executor.submit(self._run, job_id, work)
            self._running[job_id] = future
            future.add_done_callback(lambda _: self._running.pop(job_id, None))

    def wait(self, job_id: str, timeout_s: float) -> dict[str, Any]:
        """The job's state once it ended in this process, or after `timeout_s`, whichever
        comes first: a short job answers its request as if it ran inline."""
        future = self._running.get(job_id)
        if future is not None:
            with contextlib.suppress(FutureTimeout):
                future.result(timeout=timeout_s)
        return self.read(job_id)

    def _run(self, job_id: str, work: Callable[[JobProgress], dict[str, Any]]) -> None:
        if self.read(job_id).get("phase") == "aligning":  # committed already: starts there
            self.update(job_id, status="running", worker=this_worker())
        else:
            self.update(job_id, status="running", phase="reading", worker=this_worker())
        try:
            result = work(JobProgress(self, job_id))
        except TMGuideError as exc:
            self._end(job_id, status="failed", error=exc.to_dict())
        except Exception:
            log.exception("job %s failed", job_id)
            self._end(
                job_id,
                status="failed",
                error={"error": "internal_error", "message": "the job failed; see the server log"},
            )
        else:
            self.update(
                job_id,
                status="succeeded",
                phase="done",
                result=result,
                committed="all",
                finished_at=_now(),
            )
        finally:
            self.upload_path(job_id).unlink(missing_ok=True)

    def _end(self, job_id: str, **changes: Any) -> None:
        """A failed job: what it committed follows from the phase it failed in."""
        phase = self.read(job_id).get("phase")
        committed = "nothing" if phase in UNCOMMITTED_PHASES else "all"
        self.update(job_id, committed=committed, finished_at=_now(), **changes)

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
        self.phase("committing")

    def stage(self, name: str, done: int, total: int) -> None:
        """How far a stage after reading (tokenizing, aligning, storing) got: `progress` gains
        `stage`, `done` and `total`, and its `fraction` is that stage's."""
        now = time.monotonic()
        if done not in (0, total) and now - self._last < self.INTERVAL_S:
            return
        self._last = now
        progress = dict(self.board.read(self.job_id).get("progress") or {})
        progress.update(
            stage=name,
            done=done,
            total=total,
            fraction=round(done / total, 4) if total else 1.0,
        )
        self.board.update(self.job_id, progress=progress)

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
