"""TSV and aligned plain-text import."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.errors import ImportFormatError
from tm_guide.formats import read_parallel, read_tsv

from .helpers import write


def rows(records: list) -> list[tuple[str | None, str, str, int]]:
    return [(r.tuid, r.source, r.target, r.line) for r in records]


def test_two_columns_without_header(tmp_path: Path) -> None:
    path = write(tmp_path / "tm.tsv", "Hello\tHallo\r\nThank you\tDanke\n")
    assert rows(list(read_tsv(path, "en", "de"))) == [
        (None, "Hello", "Hallo", 1),
        (None, "Thank you", "Danke", 2),
    ]


def test_three_columns_start_with_the_tuid(tmp_path: Path) -> None:
    path = write(tmp_path / "tm.tsv", "id-1\tHello\tHallo\n\tNo id\tKeine ID\n")
    assert rows(list(read_tsv(path, "en", "de"))) == [
        ("id-1", "Hello", "Hallo", 1),
        (None, "No id", "Keine ID", 2),
    ]


def test_a_header_may_name_and_reorder_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "tm.tsv", "Target\ttuid\tSource\nHallo\tx1\tHello\n")
    assert rows(list(read_tsv(path, "en", "de"))) == [("x1", "Hello", "Hallo", 2)]


def test_a_header_of_language_codes(tmp_path: Path) -> None:
    path = write(tmp_path / "tm.tsv", "\ufeffde-DE\ten-US\nHallo\tHello\n")
    assert rows(list(read_tsv(path, "en", "de"))) == [(None, "Hello", "Hallo", 2)]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (
            b"a\tb\nc\td\ne\tf\tg\n",
            3,
            "tm.tsv:3: 3 tab-separated fields, but the file has 2 columns",
        ),
        (b"just one column\n", 1, "expected 2 (source, target) or 3"),
        (b"a\tb\nc\t\xff\n", 2, "UTF-8"),
    ],
    ids=["wrong field count", "a single column", "invalid UTF-8"],
)
def test_a_malformed_file_is_refused_naming_its_line(
    tmp_path: Path, content: bytes, line: int, message: str
) -> None:
    path = tmp_path / "tm.tsv"
    path.write_bytes(content)
    with pytest.raises(ImportFormatError) as caught:
        list(read_tsv(path, "en", "de"))
    assert caught.value.line == line
    assert message in str(caught.value)


def test_blank_lines_and_empty_sides_are_skipped_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "tm.tsv", "a\tb\n\n  \t \nc\t\nd\te\n")
    reader = read_tsv(path, "en", "de")
    assert [r.source for r in reader] == ["a", "d"]
    assert reader.stats.skipped == {"blank lines": 2, "pairs with an empty side": 1}


def test_aligned_files(tmp_path: Path) -> None:
    source = write(tmp_path / "en.txt", "Hello\n\nGood night\nUntranslated\n")
    target = write(tmp_path / "de.txt", "Hallo\n\nGute Nacht\n\n")
    reader = read_parallel(source, target)
    assert rows(list(reader)) == [
        (None, "Hello", "Hallo", 1),
        (None, "Good night", "Gute Nacht", 3),
    ]
    assert reader.stats.skipped == {"blank lines": 1, "pairs with an empty side": 1}


def test_aligned_files_with_different_line_counts_are_refused_before_any_record(
    tmp_path: Path,
) -> None:
    source = write(tmp_path / "en.txt", "one\ntwo\nthree\n")
    target = write(tmp_path / "de.txt", "eins\nzwei\n")
    reader = read_parallel(source, target)
    with pytest.raises(ImportFormatError) as caught:
        next(reader)
    message = str(caught.value)
    assert "en.txt" in message and "de.txt" in message
    assert "has 3 lines" in message and "has 2" in message
    assert reader.stats.records == 0


def test_missing_aligned_file(tmp_path: Path) -> None:
    source = write(tmp_path / "en.txt", "one\n")
    with pytest.raises(ImportFormatError) as caught:
        list(read_parallel(source, tmp_path / "de.txt"))
    assert str(caught.value).endswith("de.txt: no such file")
