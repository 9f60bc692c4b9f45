"""TMX import: what a user importing real TMX files from CAT tools relies on."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tm_guide.errors import ImportFormatError
from tm_guide.formats import read_tmx

from .helpers import DATA, write

TMX_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4">
<header creationtool="t" segtype="sentence" o-tmf="t" adminlang="en" srclang="en" datatype="xml"/>
<body>
"""
TMX_TAIL = "</body>\n</tmx>\n"


def tmx_file(tmp_path: Path, body: str, head: str = TMX_HEAD) -> Path:
    return write(tmp_path / "test.tmx", head + body + TMX_TAIL)


def test_five_entities_and_numeric_references_decode() -> None:
    records = list(read_tmx(DATA / "entities.tmx", "en", "de"))
    assert [r.source for r in records] == [
        "Tom & Jerry <3 > \"quoted\" 'single'",
        "café 😀 été",
    ]
    assert records[0].target == "Tom & Jerry <3 > „zitiert“ 'einfach'"
    assert records[1].target == "Café 😀 Sommer"
    assert records[0].props == {"x-client": "R&D – <core>"}
    assert records[0].source_markup is None  # no inline elements: nothing to keep


def test_old_lang_attribute_and_case_and_underscore_variants() -> None:
    records = list(read_tmx(DATA / "oldlang.tmx", "en", "de"))
    assert [(r.tuid, r.source, r.target) for r in records] == [
        ("old-1", "Hello world", "Hallo Welt"),
        ("old-2", "Goodbye", "Auf Wiedersehen"),
    ]


def test_records_carry_the_line_of_their_tu() -> None:
    records = list(read_tmx(DATA / "oldlang.tmx", "en", "de"))
    assert [r.line for r in records] == [5, 9]


def test_every_target_variant_of_a_base_language_memory_gives_a_record() -> None:
    reader = read_tmx(DATA / "variants.tmx", "en", "de")
    records = list(reader)
    assert [(r.tuid, r.source, r.target) for r in records] == [
        ("v-1", "The color is red.", "Die Farbe ist rot."),
        ("v-1#2", "The color is red.", "Die Farbe ist rot (AT)."),
        ("v-4", "Plain English.", "Schlichtes Deutsch."),
    ]
    assert reader.stats.records == 3
    assert reader.stats.skipped == {
        "without a source-language variant": 1,
        "without a target-language variant": 1,
    }


def test_an_exact_variant_is_preferred_when_the_memory_names_one() -> None:
    records = list(read_tmx(DATA / "variants.tmx", "en-GB", "DE_at"))
    assert [(r.tuid, r.source, r.target) for r in records] == [
        ("v-1", "The colour is red.", "Die Farbe ist rot (AT)."),
        ("v-4", "Plain English.", "Schlichtes Deutsch."),
    ]


def test_a_variant_without_exact_match_falls_back_to_the_language() -> None:
    records = list(read_tmx(DATA / "variants.tmx", "en-AU", "de-CH"))
    assert [r.target for r in records][:2] == ["Die Farbe ist rot.", "Die Farbe ist rot (AT)."]
    assert records[0].source == "The color is red."  # the first English variant


def test_inline_markup_is_kept_and_plain_text_is_indexed() -> None:
    records = {r.tuid: r for r in read_tmx(DATA / "markup.tmx", "en", "de")}
    first = records["m-1"]
    assert first.source == "Click Save to keep  files."
    assert first.target == "Klicken Sie auf Speichern, um  Dateien zu behalten."
    assert first.source_markup == (
        'Click <bpt i="1" type="bold">&lt;b&gt;</bpt>Save<ept i="1">&lt;/b&gt;</ept> to keep '
        '<ph x="2" type="var">{count}</ph> files.'
    )
    # hi keeps its text; the sub-flow inside a code is not part of the sentence
    second = records["m-2"]
    assert second.source == "See  and read this now."
    assert "<sub>the logo</sub>" in (second.source_markup or "")
    third = records["m-3"]
    assert third.source == "Old style code."
    assert third.target_markup is None


def test_props_notes_dates_and_usage_count() -> None:
    records = list(read_tmx(DATA / "meta.tmx", "en", "de"))
    first = records[0]
    assert first.tuid == "p-1"
    assert first.context == "menu.file.open"
    assert first.props == {
        "x-client": "ACME",
        "x-domain": "IT\nSoftware",
        "note": "Checked by the client.",
        "source:x-origin": "source file",
        "target:note": "Verb, not adjective.",
    }
    # the target tuv's own attributes win over the tu's
    assert first.created_at == datetime(2024, 3, 5, 10, 11, 12, tzinfo=UTC)
    assert first.created_by == "carol"
    assert first.changed_at == datetime(2024, 2, 1, 8, 9, 10, tzinfo=UTC)
    assert first.changed_by == "bob"
    assert first.usage_count == 7


def test_neighbour_props_give_the_context_and_stay_in_props() -> None:
    records = list(read_tmx(DATA / "meta.tmx", "en", "de"))
    assert records[1].context == "The file is large.\nPlease wait."
    assert records[1].props == {
        "x-context-pre": "The file is large.",
        "x-context-post": "Please wait.",
    }
    assert records[2].tuid is None
    assert records[2].context == "\nNext only."
    assert records[2].usage_count == 0
    assert records[2].created_at is None


def test_reads_from_an_open_binary_file() -> None:
    payload = (DATA / "oldlang.tmx").read_bytes()
    records = list(read_tmx(io.BytesIO(payload), "en", "de"))
    assert [r.tuid for r in records] == ["old-1", "old-2"]


def test_malformed_xml_names_file_and_line() -> None:
    reader = read_tmx(DATA / "malformed.tmx", "en", "de")
    with pytest.raises(ImportFormatError) as caught:
        list(reader)
    error = caught.value
    assert error.line == 10
    assert error.path.endswith("malformed.tmx")
    assert "malformed.tmx:10" in str(error)
    assert "mismatch" in str(error)


def test_records_before_a_syntax_error_are_yielded_first() -> None:
    """The store imports in one transaction; it must see the error after the good records."""
    reader = read_tmx(DATA / "malformed.tmx", "en", "de")
    assert next(reader).tuid == "ok-1"
    with pytest.raises(ImportFormatError):
        next(reader)


def test_billion_laughs_is_rejected_without_expansion() -> None:
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(DATA / "billion_laughs.tmx", "en", "de"))
    assert "declares entities" in str(caught.value)
    assert "(lol, lol1, lol2, lol3, lol4 and 5 more)" in str(caught.value)


def with_doctype(path: Path, doctype: str, source: str, target: str) -> Path:
    """A one-unit TMX at `path` whose prolog carries `doctype`."""
    return write(
        path,
        f'<?xml version="1.0"?>\n{doctype}\n'
        + TMX_HEAD.split("\n", 1)[1]
        + f'<tu><tuv xml:lang="en"><seg>{source}</seg></tuv>'
        + f'<tuv xml:lang="de"><seg>{target}</seg></tuv></tu>\n'
        + TMX_TAIL,
    )


def test_external_entity_is_rejected_and_never_read(tmp_path: Path) -> None:
    write(tmp_path / "secret.txt", "TOP-SECRET-CONTENT")
    path = with_doctype(
        tmp_path / "xxe.tmx", '<!DOCTYPE tmx [<!ENTITY xxe SYSTEM "secret.txt">]>', "&xxe;", "x"
    )
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(path, "en", "de"))
    assert "declares entities (xxe)" in str(caught.value)
    assert "TOP-SECRET" not in str(caught.value)


def test_a_doctype_naming_the_tmx_dtd_is_read_and_the_dtd_never_loaded(tmp_path: Path) -> None:
    """CAT tools export `<!DOCTYPE tmx SYSTEM "tmx14.dtd">`: such a file imports, and the DTD
    (here one that would declare an entity the file uses) is never read."""
    write(tmp_path / "tmx14.dtd", '<!ENTITY injected "INJECTED">')
    path = with_doctype(
        tmp_path / "doctype.tmx",
        '<!DOCTYPE tmx SYSTEM "tmx14.dtd">',
        "Open the file",
        "Datei öffnen",
    )
    records = list(read_tmx(path, "en", "de"))
    assert [(r.source, r.target) for r in records] == [("Open the file", "Datei öffnen")]


def test_external_parameter_entity_is_rejected(tmp_path: Path) -> None:
    write(tmp_path / "evil.dtd", '<!ENTITY injected "INJECTED">')
    path = with_doctype(
        tmp_path / "pe.tmx",
        '<!DOCTYPE tmx [<!ENTITY % ext SYSTEM "evil.dtd"> %ext;]>',
        "&injected;",
        "x",
    )
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(path, "en", "de"))
    assert "INJECTED" not in str(caught.value)


def test_undefined_entity_names_the_line() -> None:
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(DATA / "undefined_entity.tmx", "en", "de"))
    assert caught.value.line == 7
    assert "&nbsp;" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "line", "what"),
    [
        (
            '<tu creationdate="2024-01-31">\n<tuv xml:lang="en"><seg>a</seg></tuv>'
            '<tuv xml:lang="de"><seg>b</seg></tuv></tu>\n',
            5,
            "bad creationdate '2024-01-31'",
        ),
        (
            '\n<tu usagecount="many"><tuv xml:lang="en"><seg>a</seg></tuv>'
            '<tuv xml:lang="de"><seg>b</seg></tuv></tu>\n',
            6,
            "bad usagecount 'many'",
        ),
        (
            '<tu>\n<tuv xml:lang="en"><seg>a</seg></tuv>\n<tuv xml:lang="de"></tuv></tu>\n',
            7,
            "<tuv> without a <seg>",
        ),
        (
            '<tu><tuv><seg>a</seg></tuv><tuv xml:lang="de"><seg>b</seg></tuv></tu>\n',
            5,
            "<tuv> without an xml:lang attribute",
        ),
        (
            '<tu>\n<tuv xml:lang="de"><seg>b</seg></tuv></tu>\n',
            5,
            "no <tuv> in its source language 'en'",
        ),
        (
            '<tu><tuv xml:lang="en"><seg>a <b>bold</b></seg></tuv>'
            '<tuv xml:lang="de"><seg>b</seg></tuv></tu>\n',
            5,
            "unknown inline element <b>",
        ),
        (
            '<tu><tuv xml:lang="en"><seg>a <sub>x</sub></seg></tuv>'
            '<tuv xml:lang="de"><seg>b</seg></tuv></tu>\n',
            5,
            "<sub> outside an inline code element",
        ),
    ],
)
def test_invalid_units_name_line_and_problem(
    tmp_path: Path, body: str, line: int, what: str
) -> None:
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(tmx_file(tmp_path, body), "en", "de"))
    assert caught.value.line == line
    assert what in str(caught.value)


def test_missing_srclang_is_an_error(tmp_path: Path) -> None:
    head = TMX_HEAD.replace('srclang="en" ', "")
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(tmx_file(tmp_path, "", head=head), "en", "de"))
    assert "no srclang" in str(caught.value)
    assert caught.value.line == 3
    assert "test.tmx:3" in str(caught.value)


def test_a_file_that_is_not_tmx_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "x.tmx", "<html><body>hello</body></html>")
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(path, "en", "de"))
    assert "root element is <html>" in str(caught.value)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ImportFormatError) as caught:
        list(read_tmx(tmp_path / "nope.tmx", "en", "de"))
    assert str(caught.value).endswith("nope.tmx: no such file")


def test_empty_sides_are_skipped_and_counted(tmp_path: Path) -> None:
    body = (
        '<tu><tuv xml:lang="en"><seg>a</seg></tuv><tuv xml:lang="de"><seg>  </seg></tuv></tu>\n'
        '<tu><tuv xml:lang="en"><seg>b</seg></tuv><tuv xml:lang="de"><seg>B</seg></tuv></tu>\n'
    )
    reader = read_tmx(tmx_file(tmp_path, body), "en", "de")
    assert [r.source for r in reader] == ["b"]
    assert reader.stats.skipped == {"with an empty source or target": 1}
    assert reader.stats.summary() == "1 records read; skipped: 1 with an empty source or target"


def test_whitespace_inside_seg_is_kept(tmp_path: Path) -> None:
    body = (
        '<tu><tuv xml:lang="en"><seg> two  spaces </seg></tuv>'
        '<tuv xml:lang="de"><seg>zwei\nZeilen</seg></tuv></tu>\n'
    )
    [record] = read_tmx(tmx_file(tmp_path, body), "en", "de")
    assert record.source == " two  spaces "
    assert record.target == "zwei\nZeilen"


def test_utf16_files_as_some_cat_tools_write_them(tmp_path: Path) -> None:
    text = (DATA / "oldlang.tmx").read_text(encoding="utf-8")
    path = tmp_path / "utf16.tmx"
    path.write_bytes(text.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16"))
    records = list(read_tmx(path, "en", "de"))
    assert [(r.source, r.target, r.line) for r in records] == [
        ("Hello world", "Hallo Welt", 5),
        ("Goodbye", "Auf Wiedersehen", 9),
    ]


def test_two_variants_of_one_language_as_source_and_target() -> None:
    records = list(read_tmx(DATA / "variants.tmx", "en-US", "en-GB"))
    assert [(r.source, r.target) for r in records] == [("The color is red.", "The colour is red.")]


def test_units_of_another_declared_source_language_are_skipped(tmp_path: Path) -> None:
    head = TMX_HEAD.replace('srclang="en"', 'srclang="fr"')
    body = (
        '<tu><tuv xml:lang="fr"><seg>Bonjour</seg></tuv><tuv xml:lang="de"><seg>Hallo</seg>'
        "</tuv></tu>\n"
        '<tu><tuv xml:lang="fr"><seg>Merci</seg></tuv><tuv xml:lang="en"><seg>Thanks</seg></tuv>'
        '<tuv xml:lang="de"><seg>Danke</seg></tuv></tu>\n'
    )
    reader = read_tmx(tmx_file(tmp_path, body, head=head), "en", "de")
    assert [(r.source, r.target) for r in reader] == [("Thanks", "Danke")]
    assert reader.stats.skipped == {"without a source-language variant": 1}


def test_a_memory_takes_its_script_only_and_says_which_region_it_took(tmp_path: Path) -> None:
    """A zh-TW memory takes the Traditional (zh-Hant) variant of a unit, never the Simplified
    one, and warns that zh-Hant text came in as zh-TW; a zh-CN memory takes the other."""
    path = tmx_file(
        tmp_path,
        """<tu><tuv xml:lang="en"><seg>Open</seg></tuv>
           <tuv xml:lang="zh-Hans"><seg>打开</seg></tuv>
           <tuv xml:lang="zh-Hant"><seg>開啟</seg></tuv></tu>""",
    )
    traditional = read_tmx(path, "en", "zh-TW")
    assert [r.target for r in traditional] == ["開啟"]
    assert traditional.stats.warnings == ["zh-Hant text imported as the memory's zh-TW"]
    assert [r.target for r in read_tmx(path, "en", "zh_CN")] == ["打开"]
    assert [r.target for r in read_tmx(path, "en", "sr-Latn")] == []
