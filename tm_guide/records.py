"""The translation unit: the record importers yield and the store and the API accept, and the
fields a stored segment shares with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class TranslationUnit:
    """A source/target pair and the metadata a TM keeps with it: what an imported record and a
    stored segment have in common.

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


@dataclass
class SegmentRecord(TranslationUnit):
    """A unit on its way into the store, independent of where it came from."""

    line: int | None = None  # line in the import file, for error messages; never stored
