"""Per-worker resources: the store and the translator, each created once, lazily and thread-safely.

Gunicorn forks workers after the app is built, so nothing heavy happens in `create_app`: the
store (database engine + index) and the model open on first use inside each worker, under a lock
so that concurrent first requests do not load the model twice.
"""

from __future__ import annotations

import threading
from typing import Any

from server.config import ServerConfig
from server.jobs import JobBoard
from server.metrics import Registry


class Services:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.metrics = Registry()
        self.jobs = JobBoard(config.resolved_jobs_dir)
        self._lock = threading.Lock()
        self._store: Any = None
        self._translator: Any = None
        self._model_error: str | None = None

    def store(self) -> Any:
        """The worker's store; its methods open a session per call, so one instance serves all threads."""
        if self._store is None:
            with self._lock:
                if self._store is None:
                    from tm_guide.store import Store

                    settings = self.config.settings
                    self._store = Store.open(settings.db_url, index_dir=settings.index_dir)
        return self._store

    @property
    def model_loaded(self) -> bool:
        return self._translator is not None

    def translator(self) -> Any:
        """The guided translator (bundle + piece builder + engine), loaded once per worker."""
        if self._translator is None:
            store = self.store()
            with self._lock:
                if self._translator is None:
                    from server.translation import load_translator

                    self._translator = load_translator(self.config.settings, store)
        return self._translator

    def close(self) -> None:
        self.jobs.shutdown()
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            self._translator = None
