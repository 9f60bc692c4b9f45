"""Prometheus text-format metrics, kept in-process (one registry per worker).

Small enough to write here: counters and fixed-bucket histograms with labels, rendered in the
text exposition format 0.0.4. With several gunicorn workers each worker reports its own numbers;
the default deployment runs one worker with threads, so its figures are the whole server's.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)

Labels = tuple[tuple[str, str], ...]


def _labels(labels: Labels, extra: Iterable[tuple[str, str]] = ()) -> str:
    items = list(labels) + list(extra)
    if not items:
        return ""
    escaped = (f'{k}="{_escape(v)}"' for k, v in items)
    return "{" + ",".join(escaped) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    def __init__(self, name: str, help_text: str) -> None:
        self.name, self.help = name, help_text
        self._values: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            for key, value in sorted(self._values.items()):
                lines.append(f"{self.name}{_labels(key)} {_number(value)}")
        return lines


class Histogram:
    def __init__(
        self, name: str, help_text: str, buckets: Sequence[float] = LATENCY_BUCKETS
    ) -> None:
        self.name, self.help = name, help_text
        self.buckets = tuple(sorted(buckets))
        self._counts: dict[Labels, list[int]] = {}
        self._sums: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            counts = self._counts.setdefault(key, [0] * (len(self.buckets) + 1))
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    counts[i] += 1
            counts[-1] += 1
            self._sums[key] = self._sums.get(key, 0.0) + value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            for key in sorted(self._counts):
                counts = self._counts[key]
                for bound, count in zip((*self.buckets, math.inf), counts, strict=True):
                    lines.append(
                        f"{self.name}_bucket{_labels(key, [('le', _number(bound))])} {count}"
                    )
                lines.append(f"{self.name}_sum{_labels(key)} {_number(self._sums[key])}")
                lines.append(f"{self.name}_count{_labels(key)} {counts[-1]}")
        return lines


class Registry:
    """The server's metrics; one instance per app."""

    def __init__(self) -> None:
        self.requests = Counter(
            "tm_guide_http_requests_total", "HTTP requests by endpoint and status."
        )
        self.latency = Histogram(
            "tm_guide_http_request_duration_seconds", "HTTP request latency by endpoint."
        )
        self.stages = Histogram(
            "tm_guide_stage_duration_seconds",
            "Time spent per suggestion stage (retrieval, pieces, decoding, ...).",
        )
        self.batch_sentences = Histogram(
            "tm_guide_decode_batch_sentences",
            "Sentences in the engine call that decoded a suggestion request (micro-batching).",
            buckets=BATCH_BUCKETS,
        )
        self.segments_added = Counter(
            "tm_guide_segments_written_total",
            "Segments added, updated or imported through the API.",
        )
        self.deferred_alignments = Counter(
            "tm_guide_deferred_alignments_total",
            "Written segments handled by the background aligner: aligned, current (aligned on "
            "demand first), gone (deleted first) or failed (left for on-demand alignment).",
        )

    def render(self) -> str:
        lines: list[str] = []
        for metric in (
            self.requests,
            self.latency,
            self.stages,
            self.batch_sentences,
            self.segments_added,
            self.deferred_alignments,
        ):
            lines.extend(metric.render())
        return "\n".join(lines) + "\n"
