"""Plain parallel text: two line-aligned files, or one tab-separated file.

Aligned files: line N of the source file translates line N of the target file. Both are UTF-8
(a BOM is allowed); their line counts must be equal, which is checked before any record is
produced, since a missing line shifts every following pair.

TSV layout (UTF-8, one pair per line, fields separated by one tab, no quoting, so a field cannot
hold a tab or a line break):

    source<TAB>target                 two columns
    tuid<TAB>source<TAB>target        three columns

An optional first line names the columns: "source", "target" and "tuid" in any order, or the
memory's two language codes (e.g. "en<TAB>de", variants match) for the source and target
columns. Every line must have as many fields as the first one; a line with another count is an
error naming the file and line. Blank lines, and pairs with an empty source or target, are
skipped and counted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from tm_guide import languages
from tm_guide.errors import ImportFormatError
from tm_guide.formats.common import ReadStats, RecordReader, language_matches, language_rank
from tm_guide.records import SegmentRecord

SKIP_BLANK = "blank lines"
SKIP_EMPTY = "pairs with an empty side"

_DEFAULT_COLUMNS = {2: ("source", "target"), 3: ("tuid", "source", "target")}


def read_tsv(path: str | os.PathLike[str], source_lang: str, target_lang: str) -> RecordReader:
    """Records of a tab-separated file (layout in the module docstring)."""
    stats = ReadStats()
    return RecordReader(_tsv_records(os.fspath(path), source_lang, target_lang, stats), stats)


def read_parallel(
    source_path: str | os.PathLike[str], target_path: str | os.PathLike[str]
) -> RecordReader:
    """Records of two line-aligned files; `line` is the line number shared by both."""
    stats = ReadStats()
    return RecordReader(
        _parallel_records(os.fspath(source_path), os.fspath(target_path), stats), stats
    )


def _lines(name: str) -> Iterator[tuple[int, str]]:
    """(line number, text without its line break), decoding line by line for exact error lines."""
    try:
        handle = open(name, "rb")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        raise ImportFormatError(name, None, "no such file") from None
    except IsADirectoryError:
        raise ImportFormatError(name, None, "is a directory, not a file") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFormatError(name, number, f"not valid UTF-8: {exc.reason}") from None
            yield number, text.rstrip("\r\n")


def _count_lines(name: str) -> int:
    count = 0
    for count, _ in _lines(name):  # noqa: B007 - the last number is the count
        pass
    return count


def _parallel_records(
    source_name: str, target_name: str, stats: ReadStats
) -> Iterator[SegmentRecord]:
    source_count, target_count = _count_lines(source_name), _count_lines(target_name)
    if source_count != target_count:
        raise ImportFormatError(
            source_name,
            None,
            f"has {source_count} lines but the target file {target_name} has {target_count}; "
            "aligned files need the same number of lines",
        )
    for (number, source), (_, target) in zip(_lines(source_name), _lines(target_name), strict=True):
        if not source.strip() and not target.strip():
            stats.skip(SKIP_BLANK)
        elif not source.strip() or not target.strip():
            stats.skip(SKIP_EMPTY)
        else:
            yield SegmentRecord(source=source, target=target, line=number)


def _tsv_records(
    name: str, source_lang: str, target_lang: str, stats: ReadStats
) -> Iterator[SegmentRecord]:
    columns: tuple[str, ...] | None = None
    for number, line in _lines(name):
        if not line.strip():
            stats.skip(SKIP_BLANK)
            continue
        fields = line.split("\t")
        if columns is None:
            header = _header_columns(fields, source_lang, target_lang)
            if header is not None:
                columns = header
                continue
            columns = _DEFAULT_COLUMNS.get(len(fields))
            if columns is None:
                raise ImportFormatError(
                    name,
                    number,
                    f"{len(fields)} tab-separated fields; expected 2 (source, target) "
                    "or 3 (tuid, source, target)",
                )
        if len(fields) != len(columns):
            raise ImportFormatError(
                name,
                number,
                f"{len(fields)} tab-separated fields, but the file has {len(columns)} columns "
                f"({', '.join(columns)})",
            )
        row = dict(zip(columns, fields, strict=True))
        source, target = row["source"], row["target"]
        if not source.strip() or not target.strip():
            stats.skip(SKIP_EMPTY)
            continue
        yield SegmentRecord(source=source, target=target, tuid=row.get("tuid") or None, line=number)


def _header_columns(
    fields: list[str], source_lang: str, target_lang: str
) -> tuple[str, ...] | None:
    """The column names when `fields` is a header line, else None."""
    names = [field.strip().lower() for field in fields]
    if len(names) in (2, 3) and set(names) == set(_DEFAULT_COLUMNS[len(names)]):
        return tuple(names)
    if len(names) == 2 and language_rank(source_lang, target_lang) != languages.EXACT:
        as_languages = []
        for field in names:
            if language_rank(field, source_lang) == languages.EXACT or (
                language_matches(field, source_lang) and not language_matches(field, target_lang)
            ):
                as_languages.append("source")
            elif language_matches(field, target_lang):
                as_languages.append("target")
        if sorted(as_languages) == ["source", "target"]:
            return tuple(as_languages)
    return None
