"""TMX throughput: write a synthetic TMX of N units, read it back, print units per second.

    python bench/formats_bench.py [--units 200000] [--keep FILE]

Wall time depends on what else runs on the machine; CPU time is the process's own.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tm_guide.formats import read_tmx, write_tmx
from tm_guide.records import SegmentRecord

WORDS = [
    "the",
    "file",
    "server",
    "update",
    "window",
    "printer",
    "network",
    "user",
    "account",
    "password",
    "folder",
    "settings",
    "message",
    "error",
    "report",
    "system",
    "document",
    "table",
    "column",
    "value",
    "screen",
]


@dataclass(frozen=True)
class BenchOptions:
    units: int
    keep: Path | None


@dataclass(frozen=True)
class Row:
    step: str
    units: int
    wall_s: float
    cpu_s: float
    peak_rss_mib: float


def synthetic_records(count: int) -> Iterator[SegmentRecord]:
    """Sentences of 8-20 words, every 10th with inline markup, every 5th with a context."""
    for number in range(count):
        length = 8 + number % 13
        words = [WORDS[(number * 7 + k * 3) % len(WORDS)] for k in range(length)]
        source = " ".join(words) + f" {number}."
        target = " ".join(w.upper() for w in reversed(words)) + f" {number}."
        markup = None
        if number % 10 == 0:
            markup = f'<bpt i="1">&lt;b&gt;</bpt>{source}<ept i="1">&lt;/b&gt;</ept>'
        yield SegmentRecord(
            source=source,
            target=target,
            tuid=f"u{number}",
            context=f"ctx-{number}" if number % 5 == 0 else None,
            source_markup=markup,
            usage_count=number % 3,
        )


def measure(step: str, units: int, work: Callable[[], object]) -> Row:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return Row(step, units, time.perf_counter() - wall, time.process_time() - cpu, peak)


def run(options: BenchOptions) -> list[Row]:
    with tempfile.TemporaryDirectory() as scratch:
        path = options.keep or Path(scratch) / "bench.tmx"
        rows = [
            measure(
                "write_tmx",
                options.units,
                lambda: write_tmx(
                    path,
                    source_lang="en",
                    target_lang="de",
                    segments=synthetic_records(options.units),
                ),
            )
        ]
        size_mib = path.stat().st_size / 2**20
        counted = 0

        def read() -> None:
            nonlocal counted
            counted = sum(1 for _ in read_tmx(path, "en", "de"))

        rows.append(measure("read_tmx", options.units, read))
        if counted != options.units:
            raise SystemExit(f"read {counted} units, wrote {options.units}")
        print(f"file: {size_mib:.1f} MiB, {options.units} units")
        return rows


def print_table(rows: list[Row]) -> None:
    print(
        f"{'step':<10} {'units':>8} {'wall s':>8} {'cpu s':>8} {'units/s (wall)':>15} "
        f"{'units/s (cpu)':>14} {'peak RSS MiB':>13}"
    )
    for row in rows:
        print(
            f"{row.step:<10} {row.units:>8} {row.wall_s:>8.2f} {row.cpu_s:>8.2f} "
            f"{row.units / row.wall_s:>15,.0f} {row.units / row.cpu_s:>14,.0f} "
            f"{row.peak_rss_mib:>13.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=200_000)
    parser.add_argument("--keep", type=Path, default=None, help="write the TMX here and keep it")
    args = parser.parse_args()
    print_table(run(BenchOptions(units=args.units, keep=args.keep)))


if __name__ == "__main__":
    main()
