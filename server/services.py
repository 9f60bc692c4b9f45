"""Per-worker resources: store, model bundle, aligner, piece builder and translator.

Gunicorn forks workers after the app is built, so nothing heavy happens in `create_app`: each
resource is created on first use inside the worker, under a lock so that concurrent first requests
do not open the store or load the model twice. The store's methods open a database session per
call, so one store instance serves all threads of the worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
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
        self._word_aligner: Any = None
        self._deferred: Any = None
        self._translator: Any = None
        self._decoder: Any = None
        slots = config.compute.retrieval_slots
        # bounds the request threads collecting TM pieces at once (Compute.retrieval_slots)
        self.retrieval_slots = threading.BoundedSemaphore(slots) if slots else None

    def _once(self, name: str, make: Callable[[], Any]) -> Any:
        """The resource kept in attribute `name`, made by `make` on first use. Under the lock,
        so that concurrent first requests make it once; the lock is re-entrant, so `make` may
        ask for the resources it is built on."""
        value = getattr(self, name)
        if value is None:
            with self._lock:
                value = getattr(self, name)
                if value is None:
                    value = make()
                    setattr(self, name, value)
        return value

    def store(self) -> Any:
        return self._once("_store", self._open_store)

    def _open_store(self) -> Any:
        from tm_guide.store import Store, StoreOptions

        settings = self.config.settings
        # one connection per request thread, and a few for the decoding, alignment and job
        # threads
        options = StoreOptions(
            pool_size=self.config.request_threads + 4, key_cache_s=self.config.key_cache_s
        )
        return Store.open(settings.db_url, index_dir=settings.index_dir, options=options)

    def bundle(self) -> Any:
        """The model bundle; raises ModelError (and tries again next time) when it cannot load."""
        return self._once("_bundle", self._load_bundle)

    def _load_bundle(self) -> Any:
        from tm_guide.model import Bundle

        settings = self.config.settings
        return Bundle.load(
            settings.model_path,
            device=settings.device,
            intra_threads=self.config.compute.resolved_threads,
        )

    def aligner(self) -> Any:
        """Word aligner for new segments, with priors per memory kept beside the index."""
        return self._once("_aligner", self._make_aligner)

    def _make_aligner(self) -> Any:
        from tm_guide.pieces.align import AlignOptions, MemoryAligner, priors_cache_dir

        options = AlignOptions(cache_dir=priors_cache_dir(self.config.settings.index_dir))
        return MemoryAligner(self.store(), self.bundle(), options)

    def word_aligner(self) -> Any:
        """Aligner of one sentence's words with the model's own priors (None for a model
        without them), which puts back a non-translatable a translation lost."""
        return self._once("_word_aligner", self._make_word_aligner)

    def _make_word_aligner(self) -> Any:
        from tm_guide.pieces.align import WordAligner

        priors = self.aligner().base_priors()
        return WordAligner(self.bundle(), priors) if priors is not None else None

    def deferred_aligner(self) -> Any:
        """Aligns written segments after their answer, batched across requests."""
        return self._once("_deferred", self._make_deferred_aligner)

    def _make_deferred_aligner(self) -> Any:
        from tm_guide.pieces.deferred import DeferredAligner

        counter = self.metrics.deferred_alignments
        return DeferredAligner(
            self.aligner(), on_outcome=lambda outcome, n: counter.labels(outcome=outcome).inc(n)
        )

    def translator(self) -> Any:
        """The guided translator (bundle + piece builder + engine), built once per worker."""
        return self._once("_translator", self._make_translator)

    def _make_translator(self) -> Any:
        from tm_guide.server.translation import load_translator

        return load_translator(self.config, self.bundle(), self.store(), self.aligner())

    def decoder(self) -> Any:
        """Where suggestion requests decode: the batching decoder threads of this worker, or
        (with batching off) the request's own thread. See server/batching.py."""
        return self._once("_decoder", self._make_decoder)

    def _make_decoder(self) -> Any:
        from tm_guide.server.batching import DecodeBatcher, DirectDecoder

        compute = self.config.compute
        search = self.translator().search
        if not compute.batching:
            return DirectDecoder(search)
        return DecodeBatcher(
            search,
            compute.batch_max_sentences,
            compute.batch_wait_ms / 1000,
            decoders=compute.decoders,
        )

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
