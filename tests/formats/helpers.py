"""Shared by the import/export tests: the fixture directory and record normalisation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tm_guide.records import SegmentRecord

DATA = Path(__file__).parent / "data"


def without_lines(records: list[SegmentRecord]) -> list[SegmentRecord]:
    """Records compared across files: the import line is about the file, not the record."""
    return [dataclasses.replace(record, line=None) for record in records]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
