"""Rows of an uploaded glossary file: blank rows skipped, each row with its line, a malformed
CSV named by its line."""

from __future__ import annotations

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.formats.glossary import glossary_rows


def test_tsv_and_csv_rows_keep_their_line_numbers() -> None:
    assert list(glossary_rows("file\tAkte\n\n \t \nfolder\tMappe", "tsv", "x", "entries")) == [
        (1, ["file", "Akte"]),
        (4, ["folder", "Mappe"]),
    ]
    text = 'en,de\n"a, b","c"\n\n"multi\nline",d\n'
    assert list(glossary_rows(text, "csv", "csv", "csv")) == [
        (1, ["en", "de"]),
        (2, ["a, b", "c"]),
        (5, ["multi\nline", "d"]),
    ]


def test_a_malformed_csv_names_its_line_and_field() -> None:
    with pytest.raises(InvalidInput) as caught:
        list(glossary_rows('en,de\nok,fine\n"open,quote\n', "csv", "Entries: CSV", "entries"))
    assert caught.value.message.startswith("Entries: CSV line ") and caught.value.field == "entries"
    with pytest.raises(InvalidInput):
        list(glossary_rows("a\tb", "xlsx", "x", "entries_format"))
