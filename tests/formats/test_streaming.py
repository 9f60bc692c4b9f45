"""Streaming: a large TMX file is read with memory that does not grow with the file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tm_guide.formats import write_tmx
from tm_guide.records import SegmentRecord

resource = pytest.importorskip("resource")  # peak RSS of a child process (POSIX)

REPO_ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter so that the peak RSS measured is the reader's alone.
MEASURE = """
import resource, sys
from tm_guide.formats import read_tmx
reader = read_tmx(sys.argv[1], "en", "de")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
count = sum(1 for _ in reader)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(count, (after - before) * 1024)
"""


def synthetic_records(count: int) -> Iterator[SegmentRecord]:
    for number in range(count):
        yield SegmentRecord(
            source=f"Unit {number}: the quick brown fox jumps over the lazy dog by the river.",
            target=f"Einheit {number}: der schnelle braune Fuchs springt über den faulen Hund.",
            tuid=f"u{number}",
            props={"x-client": "ACME"},
        )


def peak_growth_while_reading(path: Path) -> tuple[int, int]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    count, growth = result.stdout.split()
    return int(count), int(growth)


@pytest.mark.parametrize(
    ("units", "share"),
    [(20_000, 2), pytest.param(200_000, 10, marks=pytest.mark.slow)],
    ids=["20k", "200k"],
)
def test_reading_memory_stays_far_below_the_file_size(
    tmp_path: Path, units: int, share: int
) -> None:
    """Without clearing parsed units the tree of 20k units takes several times the file size;
    cleared, the peak grows by well under a megabyte, and by less still against a larger file
    (at most 1/`share` of its size)."""
    path = tmp_path / "units.tmx"
    write_tmx(path, source_lang="en", target_lang="de", segments=synthetic_records(units))
    size = path.stat().st_size
    count, growth = peak_growth_while_reading(path)
    assert count == units
    assert growth < size / share, f"peak RSS grew by {growth} bytes for a {size}-byte file"
