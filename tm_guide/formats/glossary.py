"""Glossary files as the protocols upload them: rows of TSV or CSV, each with its line number.

DeepL's glossary entries (TSV `source<TAB>target`, or CSV) and ModernMT's glossary CSV (a header
row of language tags, then one row per entry) differ in what their columns mean, which their
protocol modules decide; reading the rows, skipping blank ones and naming the line of a
malformed one is shared here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from tm_guide.errors import InvalidInput

ROW_FORMATS = ("tsv", "csv")


def glossary_rows(
    text: str, row_format: str, label: str, field: str
) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each row with something besides white space; a CSV that cannot be read
    is an InvalidInput on `field` saying "<label> line N: why"."""
    if row_format not in ROW_FORMATS:
        raise InvalidInput(f"{field} must be one of {', '.join(ROW_FORMATS)}", field=field)
    if row_format == "tsv":
        for line, raw in enumerate(text.splitlines(), 1):
            fields = raw.split("\t")
            if any(value.strip() for value in fields):
                yield line, fields
        return
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InvalidInput(f"{label} line {reader.line_num}: {exc}", field=field) from None
        if any(value.strip() for value in row):
            yield reader.line_num, row
