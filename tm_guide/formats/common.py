"""What every importer shares: the reader with its skip counters, and language-tag matching."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import IO, Union

from tm_guide.records import SegmentRecord

# A path, or an open binary file (the server hands uploaded files over without saving them first).
Source = Union[str, "os.PathLike[str]", IO[bytes]]


def source_name(source: Source) -> str:
    """The name used in error messages: the path, or the name an open file carries."""
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    return str(getattr(source, "name", "<stream>"))


@dataclass
class ReadStats:
    """What a reader did with the input; the CLI and the import job report it to the user."""

    records: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """One line such as '120 records read; skipped: 3 fuzzy, 2 untranslated'."""
        text = f"{self.records} records read"
        if self.skipped:
            parts = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
            text += f"; skipped: {parts}"
        return text


class RecordReader(Iterator[SegmentRecord]):
    """A single-pass iterator of records with `stats` that fill up while it is consumed.

    Readers are lazy: nothing is opened until the first record is asked for, and errors surface
    as `ImportFormatError` at the record where they occur (so a store importing in one transaction
    rolls back everything read before the error).
    """

    def __init__(self, records: Iterator[SegmentRecord], stats: ReadStats) -> None:
        self._records = records
        self.stats = stats

    def __iter__(self) -> RecordReader:
        return self

    def __next__(self) -> SegmentRecord:
        record = next(self._records)
        self.stats.records += 1
        return record


@lru_cache(maxsize=1024)  # a file uses a handful of tags, each on every unit
def normalize_lang(tag: str) -> str:
    """'de_DE' and 'DE-de' both become 'de-de' (BCP 47 tags compare case-insensitively)."""
    return tag.strip().replace("_", "-").lower()


@lru_cache(maxsize=1024)
def primary_subtag(tag: str) -> str:
    return normalize_lang(tag).split("-", 1)[0]


def language_matches(candidate: str, wanted: str) -> bool:
    """True when both tags name the same language (a variant such as de-AT matches de and de-DE)."""
    return primary_subtag(candidate) == primary_subtag(wanted)


def pick_language(candidates: list[tuple[str, object]], wanted: str) -> list[object]:
    """The items whose tag matches `wanted`; exact tag matches win over other variants.

    A memory asking for de-DE takes a de-DE variant when there is one, else any de variant;
    a memory asking for de takes a plain de variant when there is one, else all de-* variants.
    """
    wanted_norm = normalize_lang(wanted)
    same_language = [
        (normalize_lang(tag), item) for tag, item in candidates if language_matches(tag, wanted)
    ]
    exact = [item for tag, item in same_language if tag == wanted_norm]
    return exact if exact else [item for _, item in same_language]
