"""Import and export of translation memories: TMX, XLIFF, gettext PO/MO, TSV and aligned plain
text.

Every reader returns a `RecordReader`: an iterator of `SegmentRecord` whose `stats` (records read,
entries skipped by reason) fill up while it is consumed, for the caller to report.
"""

from __future__ import annotations

import os
from pathlib import Path

from tm_guide.errors import InvalidInput
from tm_guide.formats.common import ReadStats, RecordReader
from tm_guide.formats.parallel import read_parallel, read_tsv
from tm_guide.formats.po import read_mo, read_po
from tm_guide.formats.po_writer import write_po
from tm_guide.formats.tmx import read_tmx
from tm_guide.formats.tmx_writer import ToolInfo, iter_tmx, write_tmx
from tm_guide.formats.xliff import read_xliff

__all__ = [
    "IMPORT_EXTENSIONS",
    "ReadStats",
    "RecordReader",
    "ToolInfo",
    "iter_tmx",
    "open_records",
    "read_mo",
    "read_parallel",
    "read_po",
    "read_tmx",
    "read_tsv",
    "read_xliff",
    "write_po",
    "write_tmx",
]

IMPORT_EXTENSIONS = (".tmx", ".xlf", ".xliff", ".po", ".mo", ".tsv", ".tab", ".txt")


def open_records(
    path: str | os.PathLike[str],
    source_lang: str,
    target_lang: str,
    target_path: str | os.PathLike[str] | None = None,
) -> RecordReader:
    """The reader for a file, chosen by its extension (case-insensitive).

    .tmx, .xlf/.xliff, .po, .mo, .tsv/.tab read one file; .txt is the source side of a pair of
    aligned files and needs `target_path`, the target-language file.
    """
    suffix = Path(path).suffix.lower()
    if target_path is not None and suffix != ".txt":
        raise InvalidInput(
            f"a second (target) file only goes with aligned .txt files, not with {suffix or path}",
            field="target_path",
        )
    if suffix == ".tmx":
        return read_tmx(path, source_lang, target_lang)
    if suffix in (".xlf", ".xliff"):
        return read_xliff(path, source_lang, target_lang)
    if suffix == ".po":
        return read_po(path, source_lang, target_lang)
    if suffix == ".mo":
        return read_mo(path, source_lang, target_lang)
    if suffix in (".tsv", ".tab"):
        return read_tsv(path, source_lang, target_lang)
    if suffix == ".txt":
        if target_path is None:
            raise InvalidInput(
                f"{os.fspath(path)} is plain text: give the aligned target-language file too",
                field="target_path",
            )
        return read_parallel(path, target_path)
    raise InvalidInput(
        f"cannot import {os.fspath(path)}: unknown file type {suffix or '(no extension)'}; "
        f"expected one of {', '.join(IMPORT_EXTENSIONS)} (.txt as an aligned pair)",
        field="path",
    )
