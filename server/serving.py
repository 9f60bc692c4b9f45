"""Running the app under gunicorn from Python, so `tm-guide serve` is one command.

Concurrency decision. SQLite takes one writer at a time (WAL lets readers go on) and the Whoosh
index has a single-writer lock per directory; several processes writing both would mostly wait on
each other's locks and each keep its own copy of the model. So the default is ONE worker process
with several threads: CTranslate2 releases the GIL while it computes, writes are serialised inside
the process, and the one in-process metrics registry covers the whole server. More workers are
refused on SQLite; on PostgreSQL they are allowed (the database takes concurrent writers) and each
worker loads its own model.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import re
import tempfile
import threading
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from gunicorn import glogging
from gunicorn.app.base import BaseApplication

from tm_guide.errors import InvalidInput
from tm_guide.server import metrics
from tm_guide.server.config import ServerConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    threads: int = 16  # one per concurrent editor: a waiting request costs a thread, not a core
    timeout_s: int = 120
    access_log: bool = False
    warm: bool = True  # open the store and load the model as soon as a worker starts


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_deployment(config: ServerConfig, options: ServeOptions) -> None:
    """Refuse the two unsafe combinations instead of running them quietly."""
    if not config.auth_enabled and not is_loopback_host(options.host):
        raise InvalidInput(
            "authentication is off (TM_GUIDE_AUTH=off) but the server would listen on "
            f"{options.host}; "
            "auth can only be off on a loopback address such as 127.0.0.1",
            field="TM_GUIDE_AUTH",
        )
    if options.workers > 1 and config.settings.db_url.startswith("sqlite"):
        raise InvalidInput(
            "several worker processes need PostgreSQL; "
            "with SQLite use one worker and more --threads",
            field="workers",
        )


MAX_REQUEST_LINE = 8190  # the most gunicorn allows short of "unlimited"
# where a key travels in a URL: the path segment after /key/ (tmserver), and the query
# parameters LibreTranslate (api_key) and DeepL (auth_key) clients put it in
_PATH_KEY = re.compile(r"(/key/)[^/?#\s]+", re.IGNORECASE)
_QUERY_KEY = re.compile(r"((?:^|[?&;\s])(?:api_key|auth_key|key|token)=)[^&;#\s]*", re.IGNORECASE)


class RedactingLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger with API keys cut out of logged request lines, paths and query
    strings."""

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        for name in ("r", "U", "q"):
            if isinstance(atoms.get(name), str):
                atoms[name] = redact_path(atoms[name])
        return atoms


def redact_path(text: str) -> str:
    """`text` (a request line, path or query) with every key replaced by `<redacted>`.

    The keys are looked for where the server finds them, after percent-decoding
    (`/tmserver/%6Bey/TOKEN` and `key%2FTOKEN` reach the key route too). A line that held one
    is logged decoded and redacted; any other is logged as it came."""
    decoded = unquote(text)
    redacted = _QUERY_KEY.sub(r"\1<redacted>", _PATH_KEY.sub(r"\1<redacted>", decoded))
    if redacted == decoded:
        return text
    return redacted.encode("unicode_escape").decode("ascii")  # no control characters in logs


class GunicornServer(BaseApplication):  # type: ignore[misc]
    """gunicorn with our settings; each worker builds its own app (and loads its own model)."""

    def __init__(self, config: ServerConfig, options: ServeOptions) -> None:
        self.server_config = config
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        opts = self.options
        settings: dict[str, Any] = {
            "bind": [
                f"[{opts.host}]:{opts.port}" if ":" in opts.host else f"{opts.host}:{opts.port}"
            ],
            "workers": opts.workers,
            "threads": opts.threads,
            # gunicorn's threaded worker that reads whole requests before a thread takes them, and
            # answers its own errors (414, 431, 400) in JSON (server/worker.py)
            "worker_class": "tm_guide.server.worker.TMGuideWorker",
            "timeout": opts.timeout_s,
            "graceful_timeout": 30,
            "keepalive": 5,
            "proc_name": "tm-guide",
            "accesslog": "-" if opts.access_log else None,
            "logger_class": RedactingLogger,
            # a tmserver URL carries its text in the path: Weblate's 500 characters of a 4-byte
            # script, percent-encoded, are 6,000 bytes; gunicorn's default line limit is 4,094
            "limit_request_line": MAX_REQUEST_LINE,
            "errorlog": "-",
            "loglevel": "info",
        }
        if "control_socket_disable" in self.cfg.settings:
            # gunicorn >= 25.1 opens a control socket at one path per user: two servers on a
            # machine would collide there, and nothing here uses it
            settings["control_socket_disable"] = True
        settings["post_worker_init"] = partial(_start_worker, warm=opts.warm)
        if opts.workers > 1:
            settings["child_exit"] = lambda _arbiter, worker: metrics.worker_exited(worker.pid)
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from tm_guide.server import create_app

        return create_app(self.server_config)


def _start_worker(worker: Any, warm: bool) -> None:
    """In the background of a new worker: take up imports whose process died while aligning,
    and, when `warm`, open the store and load the model so the first editor does not wait."""
    services = worker.wsgi.extensions["tm_guide"]

    def start() -> None:
        from tm_guide.server.api.jobs import resume_alignments

        if warm:
            try:
                services.store()
                services.translator()
                worker.log.info("worker %s: store open, model loaded", worker.pid)
            except Exception as exc:  # /ready reports the same failure to whoever asks
                worker.log.warning(
                    "worker %s: warm-up failed: %s", worker.pid, getattr(exc, "message", exc)
                )
        try:
            for job_id in resume_alignments(services):
                worker.log.info("worker %s: resuming the alignment of job %s", worker.pid, job_id)
        except Exception:
            worker.log.exception("worker %s: resuming interrupted alignments failed", worker.pid)

    threading.Thread(target=start, name="tm-guide-start", daemon=True).start()


def serve(config: ServerConfig, options: ServeOptions) -> None:
    check_deployment(config, options)
    config = dataclasses.replace(config, request_threads=options.threads)
    if options.workers == 1:
        GunicornServer(config, options).run()
        return
    # Several workers: one metrics directory for all of them, so /metrics is the whole server's.
    with tempfile.TemporaryDirectory(prefix="tm-guide-metrics-") as directory:
        metrics.enable_multiprocess(Path(directory))
        GunicornServer(config, options).run()
