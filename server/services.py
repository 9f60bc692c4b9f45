"""Per-worker resources: store, model bundle, aligner, piece builder and translator.

Gunicorn forks workers after the app is built, so nothing heavy happens in `create_app`: each
resource is created on first use inside the worker, under a lock so that concurrent first requests
do not open the store or load the model twice. The store's methods open a database session per
call, so one store instance serves all threads of the worker.
"""

from __future__ import annotations

import threading
from typing import Any

from tm_guide.server.config import ServerConfig
from tm_guide.server.jobs import JobBoard
from tm_guide.server.metrics import Registry


class Services:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.metrics = Registry()
        self.jobs = JobBoard(config.resolved_jobs_dir, ttl_s=config.job_ttl_hours * 3600)
        self._lock = threading.RLock()
        self._store: Any = None
        self._bundle: Any = None
        self._aligner: Any = None
        self._deferred: Any = None
        self._translator: Any = None
        self._decoder: Any = None
        slots = config.compute.retrieval_slots
        # bounds the request threads collecting TM pieces at once (Compute.retrieval_slots)
        self.retrieval_slots = threading.BoundedSemaphore(slots) if slots else None

    def store(self) -> Any:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    from tm_guide.store import Store, StoreOptions

                    settings = self.config.settings
                    # one connection per request thread, and a few for the decoding, alignment
                    # and job threads
                    options = StoreOptions(
                        pool_size=self.config.request_threads + 4,
                        key_cache_s=self.config.key_cache_s,
                    )
                    self._store = Store.open(
                        settings.db_url, index_dir=settings.index_dir, options=options
                    )
        return self._store

    def bundle(self) -> Any:
        """The model bundle; raises ModelError (and tries again next time) when it cannot load."""
        if self._bundle is None:
            with self._lock:
                if self._bundle is None:
                    from tm_guide.model import Bundle

                    settings = self.config.settings
                    self._bundle = Bundle.load(
                        settings.model_path,
                        device=settings.device,
                        intra_threads=self.config.compute.resolved_threads,
                    )
        return self._bundle

    def aligner(self) -> Any:
        """Word aligner for new segments, with priors per memory kept beside the index."""
        if self._aligner is None:
            bundle = self.bundle()
            store = self.store()
            with self._lock:
                if self._aligner is None:
                    from tm_guide.pieces.align import AlignOptions, MemoryAligner, priors_cache_dir

                    options = AlignOptions(
                        cache_dir=priors_cache_dir(self.config.settings.index_dir)
                    )
                    self._aligner = MemoryAligner(store, bundle, options)
        return self._aligner

    def deferred_aligner(self) -> Any:
        """Aligns written segments after their answer, batched across requests."""
        if self._deferred is None:
            aligner = self.aligner()
            with self._lock:
                if self._deferred is None:
                    from tm_guide.pieces.deferred import DeferredAligner

                    counter = self.metrics.deferred_alignments
                    self._deferred = DeferredAligner(
                        aligner,
                        on_outcome=lambda outcome, n: counter.labels(outcome=outcome).inc(n),
                    )
        return self._deferred

    def translator(self) -> Any:
        """The guided translator (bundle + piece builder + engine), built once per worker."""
        if self._translator is None:
            bundle = self.bundle()
            aligner = self.aligner()
            with self._lock:
                if self._translator is None:
                    from tm_guide.server.translation import load_translator

                    self._translator = load_translator(self.config, bundle, self.store(), aligner)
        return self._translator

    def decoder(self) -> Any:
        """Where suggestion requests decode: the batching decoder threads of this worker, or
        (with batching off) the request's own thread. See server/batching.py."""
        if self._decoder is None:
            translator = self.translator()
            with self._lock:
                if self._decoder is None:
                    from tm_guide.server.batching import DecodeBatcher, DirectDecoder

                    compute = self.config.compute
                    if compute.batching:
                        self._decoder = DecodeBatcher(
                            translator.search,
                            compute.batch_max_sentences,
                            compute.batch_wait_ms / 1000,
                            decoders=compute.decoders,
                        )
                    else:
                        self._decoder = DirectDecoder(translator.search)
        return self._decoder

    def close(self) -> None:
        self.jobs.shutdown()
        with self._lock:
            deferred, self._deferred = self._deferred, None
        if deferred is not None:
            deferred.close()
        with self._lock:
            if self._decoder is not None:
                self._decoder.close()
                self._decoder = None
            if self._store is not None:
                self._store.close()
                self._store = None
            self._translator = self._aligner = self._bundle = None
