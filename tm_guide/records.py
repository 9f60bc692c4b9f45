"""The translation-unit record that importers yield and that the store and the API accept."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class SegmentRecord:
    """One source/target pair with its metadata, independent of where it came from.

    `source` and `target` are plain text (inline markup removed) and are what gets indexed and
    translated; `source_markup`/`target_markup` keep the original inner XML of a TMX <seg> when it
    had inline tags, so that export restores it.
    """

    source: str
    target: str
    tuid: str | None = None
    context: str | None = None
    source_markup: str | None = None
    target_markup: str | None = None
    created_at: datetime | None = None
    created_by: str | None = None
    changed_at: datetime | None = None
    changed_by: str | None = None
    usage_count: int = 0
    props: dict[str, str] = field(default_factory=dict)
    line: int | None = None  # line in the import file, for error messages; never stored
