"""The server's Prometheus metrics (prometheus_client), one registry per app.

One worker process: the metrics live in the app's own registry and `/metrics` renders it. Several
gunicorn workers (`tm-guide serve --workers N`): `serve` points PROMETHEUS_MULTIPROC_DIR at a
fresh directory before any worker starts, each worker's values go to files there, and whichever
worker answers `/metrics` sums them all, so the numbers are the whole server's.
"""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def multiprocess_mode() -> bool:
    return bool(os.environ.get(MULTIPROCESS_ENV))


class Registry:
    """The server's metrics; one instance per app."""

    def __init__(self) -> None:
        # In multiprocess mode the values live in files, read back by the collector at render;
        # the metric objects must then belong to no registry.
        self._registry = CollectorRegistry(auto_describe=True)
        own = None if multiprocess_mode() else self._registry
        self.requests = Counter(
            "tm_guide_http_requests",
            "HTTP requests by endpoint and status.",
            ("endpoint", "method", "status"),
            registry=own,
        )
        self.latency = Histogram(
            "tm_guide_http_request_duration_seconds",
            "HTTP request latency by endpoint.",
            ("endpoint", "method"),
            buckets=LATENCY_BUCKETS,
            registry=own,
        )
        self.stages = Histogram(
            "tm_guide_stage_duration_seconds",
            "Time spent per suggestion stage (retrieval, pieces, decoding, ...).",
            ("stage",),
            buckets=LATENCY_BUCKETS,
            registry=own,
        )
        self.batch_sentences = Histogram(
            "tm_guide_decode_batch_sentences",
            "Sentences in the engine call that decoded a suggestion request (micro-batching).",
            buckets=BATCH_BUCKETS,
            registry=own,
        )
        self.segments_added = Counter(
            "tm_guide_segments_written",
            "Segments added, updated or imported through the API.",
            ("kind",),
            registry=own,
        )
        self.degraded = Counter(
            "tm_guide_degraded_requests",
            "Translation requests decoded below their options to meet their protocol's deadline: "
            "beam (half the beam), greedy, or tm-only (answered from the memory, not decoded).",
            ("level",),
            registry=own,
        )
        self.deferred_alignments = Counter(
            "tm_guide_deferred_alignments",
            "Written segments handled by the background aligner: aligned, current (aligned on "
            "demand first), gone (deleted first) or failed (left for on-demand alignment).",
            ("outcome",),
            registry=own,
        )

    def render(self) -> bytes:
        """The text exposition format: this worker's registry, or every worker's files."""
        if multiprocess_mode():
            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self._registry)


def enable_multiprocess(directory: Path) -> None:
    """Keep metric values in files under `directory`, shared by the workers forked after this.

    prometheus_client picks where values live when it is first imported, from the environment;
    the arbiter imported it already (with the app's modules), so the choice is made again here,
    before any worker or metric exists."""
    from prometheus_client import values

    os.environ[MULTIPROCESS_ENV] = str(directory)
    values.ValueClass = values.get_value_class()


def worker_exited(pid: int) -> None:
    """Forget a dead worker's gauges (gunicorn's child_exit hook); its counts stay summed."""
    if multiprocess_mode():
        multiprocess.mark_process_dead(pid)
