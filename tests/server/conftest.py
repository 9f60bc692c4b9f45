"""Start the real server (gunicorn via `tm-guide serve`) on a free loopback port per module."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from server_client import Client

from tm_guide.server.config import DEADLINES_MS

REPO = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tm_guide", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@dataclass
class RunningServer:
    client: Client  # carries the admin token ('*:write')
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    def create_memories(self, *names: str) -> dict[str, int]:
        """en->de memories of these names, by name their ids."""
        ids = {}
        for name in names:
            reply = self.client.post(
                "/v1/memories", {"name": name, "source_lang": "en", "target_lang": "de"}
            )
            assert reply.status == 201, reply.body
            ids[name] = reply.json["id"]
        return ids

    def url(self, path: str = "") -> str:
        """The address of `path` (from its first "/") on this server."""
        return f"http://127.0.0.1:{self.client.port}{path}"

    def create_key(self, name: str, *scopes: str) -> str:
        args = ["keys", "create", name]
        for scope in scopes:
            args += ["--scope", scope]
        done = cli(self.env, *args)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return cli(self.env, *args)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def server_env(
    db_url: str, work: Path, model: Path | None, extra: dict[str, str] | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
    env.update(
        {
            "PYTHONPATH": str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
            "TM_GUIDE_DB": db_url,
            "TM_GUIDE_INDEX_DIR": str(work / "index"),
            "TM_GUIDE_JOBS_DIR": str(work / "jobs"),
            "TM_GUIDE_MODEL": str(model if model is not None else work / "no-model"),
            "TM_GUIDE_MAX_BODY_BYTES": str(256 * 1024),
            "OMP_NUM_THREADS": "1",
        }
    )
    # A protocol's deadline makes its answer depend on how loaded the machine is (a late one is
    # answered from the memory alone), so tests that compare texts run without one; the tests
    # of deadlines set their own.
    env.update({f"TM_GUIDE_{name.upper()}_DEADLINE_MS": "0" for name in DEADLINES_MS})
    env.update(extra or {})
    return env


@pytest.fixture(scope="module")
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A function that starts a server and returns it; every server is stopped at module end."""
    started: list[RunningServer] = []

    def start(
        db_url: str | None = None,
        model: Path | None = None,
        threads: int = 8,
        extra_env: dict[str, str] | None = None,
        admin: bool = True,
        serve_args: tuple[str, ...] = (),
    ) -> RunningServer:
        work = tmp_path_factory.mktemp("server")
        env = server_env(db_url or f"sqlite:///{work / 'tm.sqlite'}", work, model, extra_env)
        token = None
        if admin:
            done = cli(env, "keys", "create", "admin", "--scope", "*:write")
            assert done.returncode == 0, done.stderr
            token = done.stdout.strip().splitlines()[-1]
        port = free_port()
        log_path = work / "server.log"
        command = [sys.executable, "-m", "tm_guide", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(port), "--threads", str(threads), "--no-warm", *serve_args]
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT
            )
        server = RunningServer(Client("127.0.0.1", port, token), env, process, log_path)
        started.append(server)
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise AssertionError(f"server exited with {process.returncode}:\n{server.log()}")
            try:
                if server.client.get("/health").status == 200:
                    return server
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"server did not start:\n{server.log()}")
            time.sleep(0.2)

    yield start
    for server in started:
        server.process.terminate()
        try:
            server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@pytest.fixture(scope="module")
def pg_database_url() -> Iterator[str]:
    """A throwaway PostgreSQL database for this module, dropped afterwards."""
    psycopg = pytest.importorskip("psycopg")
    name = f"tm_guide_server_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def weblate():
    """Weblate's machinery classes from its published wheel (weblate_harness; cached under
    ~/.cache), for the modules that talk to the server as Weblate does."""
    import weblate_harness

    return weblate_harness.load(Path.home() / ".cache" / "tm-guide-tests")


@pytest.fixture
def fresh_cache(weblate):
    """Weblate caches languages, translations and rate limits; each test starts without."""
    import weblate_harness

    weblate_harness.clear_cache()
