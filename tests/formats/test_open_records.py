"""The dispatcher the CLI and the server use: the reader is chosen by file extension."""

from __future__ import annotations

from pathlib import Path

import polib
import pytest

from tm_guide.errors import InvalidInput
from tm_guide.formats import open_records

from .helpers import DATA, write


def test_each_extension_gets_its_reader(tmp_path: Path) -> None:
    tsv = write(tmp_path / "tm.TAB", "Hello\tHallo\n")
    mo = tmp_path / "de.mo"
    polib.pofile(str(DATA / "de.po")).save_as_mofile(str(mo))
    source = write(tmp_path / "en.txt", "Hello\n")
    target = write(tmp_path / "de.txt", "Hallo\n")
    assert [r.tuid for r in open_records(DATA / "oldlang.tmx", "en", "de")] == ["old-1", "old-2"]
    assert next(open_records(DATA / "de.po", "en", "de")).target == "Datei öffnen"
    assert len(list(open_records(mo, "en", "de"))) == 6
    assert next(open_records(tsv, "en", "de")).target == "Hallo"
    assert next(open_records(source, "en", "de", target_path=target)).target == "Hallo"


def test_unknown_extension_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        open_records(tmp_path / "memory.xlsx", "en", "de")
    assert ".xlsx" in str(caught.value)
    assert caught.value.status == 400


def test_plain_text_needs_its_target_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        open_records(tmp_path / "en.txt", "en", "de")
    assert "target-language file" in str(caught.value)


def test_a_target_file_only_goes_with_plain_text() -> None:
    with pytest.raises(InvalidInput):
        open_records(DATA / "oldlang.tmx", "en", "de", target_path=DATA / "de.po")
