"""What every importer shares: the reader with its skip counters and warnings, and the language
rule of tm_guide.languages as files spell their tags."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Union

from tm_guide import languages
from tm_guide.errors import InvalidInput
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
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def warn(self, message: str) -> None:
        """Something imported as asked but not exactly as found (once per message)."""
        if message not in self.warnings:
            self.warnings.append(message)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """One line such as '120 records read; skipped: 3 fuzzy, 2 untranslated'."""
        text = f"{self.records} records read"
        if self.skipped:
            parts = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
            text += f"; skipped: {parts}"
        if self.warnings:
            text += "; " + "; ".join(self.warnings)
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


def language_rank(candidate: str, wanted: str) -> int | None:
    """tm_guide.languages.match_rank of a tag as a file spells it: EXACT, SAME_SCRIPT (another
    region), or None (another language or script, or no tag at all)."""
    return languages.match_rank(candidate.strip(), wanted)


def language_matches(candidate: str, wanted: str) -> bool:
    """Whether a translation in `candidate` serves `wanted` (de-AT serves de-DE; zh-CN never
    serves zh-TW)."""
    return language_rank(candidate, wanted) is not None


def own_tag(tag: str | None, memory_tag: str) -> str | None:
    """The tag a unit keeps (records.TranslationUnit.source_lang/target_lang): the file's, in
    BCP 47 form, where it is not exactly the memory's; None where it is, or where there is none."""
    if not tag or language_rank(tag, memory_tag) == languages.EXACT:
        return None
    try:
        return languages.normalize(tag.strip())
    except InvalidInput:
        return None


def pick_language(
    candidates: list[tuple[str, object]], wanted: str, stats: ReadStats | None = None
) -> list[object]:
    """The items whose tag serves `wanted`: those with its exact tag when there are any, else
    those of the same language and script in other regions, which `stats` warns about.

    A memory asking for de-DE takes a de-DE variant when there is one, else any de variant;
    a memory asking for de takes a plain de variant when there is one, else all de-* variants.
    """
    ranked = [(language_rank(tag, wanted), tag, item) for tag, item in candidates]
    exact = [item for rank, _, item in ranked if rank == languages.EXACT]
    if exact:
        return exact
    near = [(tag, item) for rank, tag, item in ranked if rank == languages.SAME_SCRIPT]
    if stats is not None:
        for tag in dict.fromkeys(tag.strip() for tag, _ in near):
            stats.warn(f"{tag} text imported as the memory's {wanted}")
    return [item for _, item in near]
