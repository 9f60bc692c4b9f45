"""gettext PO/MO import: translated entries become records; the rest is skipped and counted."""

from __future__ import annotations

from pathlib import Path

import polib
import pytest

from tm_guide.errors import ImportFormatError
from tm_guide.formats import read_mo, read_po

from .helpers import DATA, without_lines, write

EXPECTED = [
    ("Open file", "Datei öffnen", None),
    ("Open", "Öffnen", "menu"),
    ("Open", "Offen", "state"),
    ("%d file", "%d Datei", None),
    ("%d files", "%d Dateien", None),
    ("A long message split over lines", "Eine lange Nachricht über mehrere Zeilen", None),
]


def pairs(records: list) -> list[tuple[str, str, str | None]]:
    return [(r.source, r.target, r.context) for r in records]


def test_po_translated_entries_with_context_and_plurals() -> None:
    reader = read_po(DATA / "de.po", "en", "de")
    records = list(reader)
    assert pairs(records) == EXPECTED
    assert reader.stats.skipped == {"fuzzy": 1, "untranslated": 2, "obsolete": 1}


def test_po_records_carry_lines_and_comments() -> None:
    records = list(read_po(DATA / "de.po", "en", "de"))
    first = records[0]
    assert first.line == 11  # the entry starts with its comments
    assert first.props == {
        "note": "Translator: keep it short.",
        "x-po-comment": "Shown in the File menu",
        "x-po-references": "src/menu.c:12 src/toolbar.c:40",
    }
    assert records[3].line == records[4].line  # both plural records come from one entry


def test_mo_gives_the_same_records_as_its_po(tmp_path: Path) -> None:
    mo_path = tmp_path / "de.mo"
    polib.pofile(str(DATA / "de.po")).save_as_mofile(str(mo_path))
    reader = read_mo(mo_path, "en", "de")
    mo_records = list(reader)
    # MO files keep no comments, fuzzy or obsolete entries, and no lines
    po_records = [(r.source, r.target, r.context) for r in read_po(DATA / "de.po", "en", "de")]
    assert sorted(pairs(mo_records), key=str) == sorted(po_records, key=str)
    assert all(r.line is None for r in mo_records)
    assert without_lines(mo_records) == mo_records


def test_language_with_one_plural_form(tmp_path: Path) -> None:
    path = write(
        tmp_path / "ja.po",
        'msgid ""\nmsgstr ""\n"Language: ja\\n"\n"Plural-Forms: nplurals=1; plural=0;\\n"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "%d ファイル"\n',
    )
    assert pairs(list(read_po(path, "en", "ja"))) == [
        ("%d file", "%d ファイル", None),
        ("%d files", "%d ファイル", None),
    ]


def test_extra_plural_forms_are_counted(tmp_path: Path) -> None:
    path = write(
        tmp_path / "pl.po",
        'msgid ""\nmsgstr ""\n"Language: pl\\n"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\n'
        'msgstr[0] "%d plik"\nmsgstr[1] "%d pliki"\nmsgstr[2] "%d plików"\n',
    )
    reader = read_po(path, "en", "pl")
    assert pairs(list(reader)) == [("%d file", "%d plik", None), ("%d files", "%d plików", None)]
    assert reader.stats.skipped == {"plural forms without a source text": 1}


@pytest.mark.parametrize(
    ("language", "plural_forms", "forms", "expected"),
    [
        (
            "ar",
            "nplurals=6; plural=n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 "
            ": n%100>=11 ? 4 : 5;",
            ["لا بايت", "بايت واحد", "بايتان", "%d بايتات", "%d بايتًا", "%d بايت"],
            ("بايت واحد", "%d بايت"),
        ),
        (
            "pl",
            "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 "
            ": 2);",
            ["%d bajt", "%d bajty", "%d bajtów"],
            ("%d bajt", "%d bajtów"),
        ),
        ("ja", "nplurals=1; plural=0;", ["%d バイト"], ("%d バイト", "%d バイト")),
    ],
)
def test_plural_forms_are_paired_by_the_catalogues_rule(
    tmp_path: Path, language: str, plural_forms: str, forms: list[str], expected: tuple[str, str]
) -> None:
    """msgid takes the form for n = 1 and msgid_plural the form for n = 100, as the catalogue's
    Plural-Forms expression picks them: in Arabic msgstr[1] is "one byte" and msgstr[5] the
    general plural, so "%d bytes" is never stored as "one byte"."""
    strings = "".join(f'msgstr[{i}] "{form}"\n' for i, form in enumerate(forms))
    path = write(
        tmp_path / f"{language}.po",
        f'msgid ""\nmsgstr ""\n"Language: {language}\\n"\n"Plural-Forms: {plural_forms}\\n"\n'
        f'"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        f'msgid "%d byte"\nmsgid_plural "%d bytes"\n{strings}',
    )
    reader = read_po(path, "en", language)
    assert pairs(list(reader)) == [("%d byte", expected[0], None), ("%d bytes", expected[1], None)]
    left = len(forms) - len(set(expected) & set(forms)) if len(forms) > 1 else 0
    assert reader.stats.skipped == ({"plural forms without a source text": 1} if left else {})


def test_a_catalogue_without_plural_forms_gets_its_languages_rule_from_cldr(
    tmp_path: Path,
) -> None:
    """No Plural-Forms header: Babel's CLDR-derived rule for the Language (Polish: three forms,
    n = 100 takes the third), as msginit would have written it."""
    path = write(
        tmp_path / "pl.po",
        'msgid ""\nmsgstr ""\n"Language: pl\\n"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\n'
        'msgstr[0] "%d plik"\nmsgstr[1] "%d pliki"\nmsgstr[2] "%d plików"\n',
    )
    records = list(read_po(path, "en", "pl"))
    assert pairs(records) == [("%d file", "%d plik", None), ("%d files", "%d plików", None)]
    assert records[0].props["x-po-plural-forms"].startswith("nplurals=3;")


def test_an_unreadable_plural_forms_header_names_itself(tmp_path: Path) -> None:
    path = write(
        tmp_path / "x.po",
        'msgid ""\nmsgstr ""\n"Language: de\\n"\n"Plural-Forms: nplurals=2; plural=n !! 1;\\n"\n\n'
        'msgid "a"\nmsgstr "b"\n',
    )
    with pytest.raises(ImportFormatError, match="Plural-Forms"):
        list(read_po(path, "en", "de"))


def test_catalogue_for_another_language_is_refused() -> None:
    with pytest.raises(ImportFormatError) as caught:
        list(read_po(DATA / "de.po", "en", "fr"))
    assert "'de'" in str(caught.value) and "'fr'" in str(caught.value)


def test_language_variant_of_the_memory_is_accepted_with_a_warning() -> None:
    reader = read_po(DATA / "de.po", "en-US", "de-AT")
    records = list(reader)
    assert len(records) == len(EXPECTED)
    assert {r.target_lang for r in records} == {"de"}  # kept, and exported as it came
    assert reader.stats.warnings == ["a de catalogue imported as the memory's de-AT"]
    assert "imported as the memory's de-AT" in reader.stats.summary()


@pytest.mark.parametrize(
    ("header", "memory", "accepted"),
    [
        ("zh_CN", "zh-TW", False),
        ("zh_CN", "zh-Hant", False),
        ("zh_TW", "zh-Hant", True),
        ("sr@latin", "sr-Cyrl", False),
        ("pt_BR", "pt-PT", True),
    ],
)
def test_another_script_is_refused_and_another_region_warned(
    tmp_path: Path, header: str, memory: str, accepted: bool
) -> None:
    """One rule for every importer (tm_guide.languages): never across scripts, another region of
    the same language and script with a warning."""
    catalogue = write(
        tmp_path / "c.po",
        f'msgid ""\nmsgstr ""\n"Language: {header}\\n"\n"Content-Type: text/plain; '
        'charset=UTF-8\\n"\n\nmsgid "Open"\nmsgstr "X"\n',
    )
    reader = read_po(catalogue, "en", memory)
    if not accepted:
        with pytest.raises(ImportFormatError, match="another language or script"):
            list(reader)
        return
    assert len(list(reader)) == 1
    assert reader.stats.warnings in (
        [],
        [f"a {header} catalogue imported as the memory's {memory}"],
    )


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ('msgid "a"\nmsgstr "b"\n\nmsgid "c"\nmsgstr "d\n', 5, "unterminated"),
        ('msgid "a"\nmsgstr "b"\n\nmsgid "c"\nmsgtsr "d"\n', 5, "expected msgctxt"),
        ('msgid "a"\nmsgstr "b"\nstray text\n', 3, "expected msgctxt"),
    ],
)
def test_po_syntax_errors_name_the_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = write(tmp_path / "bad.po", text)
    with pytest.raises(ImportFormatError) as caught:
        list(read_po(path, "en", "de"))
    assert caught.value.line == line
    assert f"bad.po:{line}" in str(caught.value)
    assert what in str(caught.value)


def test_po_in_a_wrong_encoding_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.po"
    path.write_bytes(
        b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        b'msgid "a"\nmsgstr "gr\xfc\xdf"\n'
    )
    with pytest.raises(ImportFormatError) as caught:
        list(read_po(path, "en", "de"))
    assert caught.value.line == 6


def test_broken_mo_and_missing_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.mo"
    broken.write_bytes(b"not a catalogue at all")
    with pytest.raises(ImportFormatError) as caught:
        list(read_mo(broken, "en", "de"))
    assert "magic number" in str(caught.value)
    for reader in (read_po, read_mo):
        with pytest.raises(ImportFormatError) as caught:
            list(reader(tmp_path / "missing.po", "en", "de"))
        assert str(caught.value).endswith("missing.po: no such file")


def test_mo_system_dependent_messages_are_read_as_msgunfmt_shows_them() -> None:
    """msgfmt keeps c-format messages with <inttypes.h> macros (%<PRIu64>) apart, where polib
    does not look; they come back as in the PO they were compiled from (tests/formats/data/
    sysdep.po, compiled with msgfmt into sysdep.mo): plain, plural and with a context."""
    from_mo = list(read_mo(DATA / "sysdep.mo", "en", "de"))
    from_po = list(read_po(DATA / "sysdep.po", "en", "de"))
    assert len(polib.mofile(str(DATA / "sysdep.mo"))) == 1  # what polib alone sees
    assert sorted(pairs(from_mo)) == sorted(pairs(from_po))
    assert ("%<PRIdMAX> records", "%<PRIdMAX> Datensätze", None) in pairs(from_mo)
    assert ("%<PRIdMAX>+%<PRIdMAX> records in", "%<PRIdMAX>+%<PRIdMAX> Datensätze ein", "dd") in (
        pairs(from_mo)
    )


def test_an_mo_whose_system_dependent_table_points_outside_it_is_refused(tmp_path: Path) -> None:
    data = bytearray((DATA / "sysdep.mo").read_bytes())
    data[40:44] = (len(data) + 100).to_bytes(4, "little")  # the originals' table offset
    broken = tmp_path / "broken.mo"
    broken.write_bytes(bytes(data))
    with pytest.raises(ImportFormatError, match="outside the file"):
        list(read_mo(broken, "en", "de"))


def test_a_memory_exports_a_catalogue_msgfmt_accepts_with_plurals_flags_and_contexts(
    tmp_path: Path,
) -> None:
    """PO -> TMX-able records -> PO: the plural entry comes back whole (six Arabic forms, in
    order), with its flags, comments and references, the contexts stay apart, and `msgfmt -c`
    accepts the catalogue; reading it again gives the same records."""
    import shutil
    import subprocess

    from tm_guide.formats import write_po

    records = list(read_po(DATA / "ar.po", "en", "ar"))
    out = tmp_path / "out.po"
    told: list[str] = []
    entries = write_po(
        out, source_lang="en", target_lang="ar", segments=records, on_skip=told.append
    )
    assert entries == 5 and told == []
    exported = polib.pofile(str(out))
    assert exported.metadata["Plural-Forms"].startswith("nplurals=6;")
    [plural] = [e for e in exported if e.msgid_plural]
    assert [plural.msgstr_plural[i] for i in range(6)] == [
        "لا بايتات", "بايت واحد", "بايتان", "%d بايتات", "%d بايتًا", "%d بايت",
    ]  # fmt: skip
    assert "c-format" in plural.flags and plural.occurrences == [("src/size.c", "10")]
    assert exported.find("Open %(name)s", msgctxt="menu").flags == ["python-format"]
    if shutil.which("msgfmt"):
        checked = subprocess.run(
            ["msgfmt", "-c", "-o", str(tmp_path / "out.mo"), str(out)],
            capture_output=True,
            text=True,
        )
        assert checked.returncode == 0, checked.stderr
    again = list(read_po(out, "en", "ar"))
    assert [(r.source, r.target, r.context) for r in again] == [
        (r.source, r.target, r.context) for r in records
    ]


def test_a_po_export_leaves_out_what_msgfmt_would_refuse_and_says_so(tmp_path: Path) -> None:
    from tm_guide.formats import write_po
    from tm_guide.records import SegmentRecord

    segments = [
        SegmentRecord(source="Open", target="Öffnen"),
        SegmentRecord(source="Open", target="Aufmachen"),  # a second translation of one msgid
        SegmentRecord(source="Lines\n", target="Zeilen"),  # newline on one side only
    ]
    told: list[str] = []
    out = tmp_path / "de.po"
    assert write_po(out, source_lang="en", target_lang="de", segments=segments,
                    on_skip=told.append) == 1  # fmt: skip
    assert len(told) == 2 and "already holds" in told[0] and "newline" in told[1]
    assert [(e.msgid, e.msgstr) for e in polib.pofile(str(out))] == [("Open", "Öffnen")]
