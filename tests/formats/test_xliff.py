"""XLIFF 1.x/2.x import: confirmed units only, plain text with the codes' text equivalents, notes
and names, the language rule of every importer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.errors import ImportFormatError
from tm_guide.formats import open_records, read_xliff

from .helpers import DATA, write


def rows(reader) -> list[tuple[str, str, str | None]]:
    return [(r.source, r.target, r.context) for r in reader]


def test_xliff_made_by_translate_toolkit_gives_its_confirmed_units() -> None:
    """po2xliff's file (tests/formats/data/po2xliff.xlf, from xliff-source.po): the fuzzy entry
    (needs-translation), the empty one and gettext's header unit are left out and counted."""
    reader = open_records(DATA / "po2xliff.xlf", "en", "de")
    assert rows(reader) == [
        ("Open", "Öffnen", None),
        ("Save the document.", "Speichern Sie das Dokument.", None),
    ]
    assert reader.stats.skipped == {
        "not confirmed": 1,
        "empty source or target": 1,
        "not translatable": 1,
    }
    assert reader.stats.warnings == ["en-US text imported as the memory's en"]


def test_xliff_2_segments_by_state_with_text_equivalents_notes_and_names() -> None:
    reader = read_xliff(DATA / "xliff2.xlf", "en-US", "de-DE")
    records = list(reader)
    assert [(r.source, r.target, r.context) for r in records] == [
        ("Open the file.", "Öffnen Sie die Datei.", "menu.open"),
        ("Press {0} to save.", "Drücken Sie {0} zum Speichern.", "menu.open"),
        ("Print the page.", "Die Seite drucken.", None),
    ]
    assert records[0].props == {"note": "A menu item"}
    assert reader.stats.skipped == {
        "not confirmed": 1,
        "not translatable": 1,
        "a character a TMX cannot hold": 1,
    }
    assert reader.stats.warnings == []


def test_xliff_1_2_seg_source_pairs_segments_by_mid(tmp_path: Path) -> None:
    path = write(
        tmp_path / "segmented.xliff",
        """<?xml version="1.0"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
 <file original="a.html" source-language="en" target-language="de" datatype="html"><body>
  <trans-unit id="1" resname="intro" approved="yes">
   <source>Open the file. Save it.</source>
   <seg-source><mrk mtype="seg" mid="1">Open the <g id="b">file</g>.</mrk>
    <mrk mtype="seg" mid="2">Save it.</mrk></seg-source>
   <target><mrk mtype="seg" mid="1">Öffnen Sie die <g id="b">Datei</g>.</mrk>
    <mrk mtype="seg" mid="2">Speichern Sie sie.</mrk></target>
   <note>Intro paragraph</note>
  </trans-unit>
  <trans-unit id="2"><source>Close.</source>
   <target state="needs-review-translation">Schließen.</target></trans-unit>
 </body></file>
</xliff>""",
    )
    reader = read_xliff(path, "en", "de")
    assert rows(reader) == [
        ("Open the file.", "Öffnen Sie die Datei.", "intro"),
        ("Save it.", "Speichern Sie sie.", "intro"),
    ]
    assert reader.stats.skipped == {"not confirmed": 1}


@pytest.mark.parametrize(
    ("content", "what"),
    [
        ('<xliff version="2.0" srcLang="en" trgLang="zh-CN"><file id="f"/></xliff>', "script"),
        ('<xliff version="1.2"><file source-language="fr" target-language="de"/></xliff>', "fr"),
        ('<xliff version="3.0"/>', "XLIFF version"),
        ("<tmx/>", "not an XLIFF file"),
        ('<xliff version="1.2"><file>', "XML syntax error"),
        (
            '<!DOCTYPE xliff [<!ENTITY a "aaaa">]><xliff version="1.2">&a;</xliff>',
            "entities",
        ),
    ],
)
def test_wrong_xliff_files_are_refused_with_the_reason(
    tmp_path: Path, content: str, what: str
) -> None:
    path = write(tmp_path / "bad.xlf", content)
    with pytest.raises(ImportFormatError, match=what):
        list(read_xliff(path, "en", "zh-TW" if "zh-CN" in content else "de"))
