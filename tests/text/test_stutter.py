"""A word written twice over is written once."""

from __future__ import annotations

import pytest

from tm_guide.text.stutter import stutter_passes, without_stutter


def test_a_repeated_word_is_written_once_in_any_case() -> None:
    source = "Click Save to store the file."
    assert without_stutter(source, "können Sie auch auch ändern.").text == "können Sie auch ändern."
    assert without_stutter(source, "Speichern speichern:").text == "Speichern:"
    assert without_stutter(source, "rechts und dann dann dann die").text == "rechts und dann die"
    assert without_stutter(source, "Einfügen einer Text-Datei Datei…").text == (
        "Einfügen einer Text-Datei…"
    )


def test_what_german_writes_twice_or_is_another_word_stays() -> None:
    source = "Click Save to store the file."
    for text in (
        "die die Datei",
        "Haus Hausmeister",
        "Werte.-Werte",
        "/log/installer/installer",
        "1000 1000",
    ):
        assert without_stutter(source, text).edits == (), text
    assert without_stutter(source, "Abschnitt Abschnitt Abschnitte").text == "Abschnitte"
    assert without_stutter(source, "das @reboot-Makro-Makro-Makro").text == "das @reboot-Makro"
    assert without_stutter(source, "Im Dateinamen-Dateinamen geben").text == "Im Dateinamen geben"


def test_a_source_that_repeats_a_word_keeps_the_repeat() -> None:
    assert without_stutter("Cancel Cancel", "Abbrechen Abbrechen").text == "Abbrechen Abbrechen"
    assert without_stutter("a bye-bye note", "eine Tschüss-Tschüss-Notiz").edits == ()


def test_positions_move_with_the_edit() -> None:
    edited = without_stutter("x", "Sie auch auch ändern")
    assert edited.text == "Sie auch ändern"
    assert [edited.moved(p) for p in (0, 4, 8, 13, 14, 20)] == [0, 4, 8, 8, 9, 15]


def test_a_part_written_twice_inside_a_word_is_written_once() -> None:
    source = "Open the setup dialog."
    assert without_stutter(source, "Im Einrichtungsdialogdialog öffnen").text == (
        "Im Einrichtungsdialog öffnen"
    )
    assert without_stutter(source, "Verzeichnisverzeichnis").text == "Verzeichnis"
    assert without_stutter(source, "Serverseitigseitigseitige").text == "Serverseitige"
    # unless the source or the memory writes it so
    assert without_stutter("The choochoo train", "Der Zug choochoo").edits == ()
    assert without_stutter(source, "=ZeileZeile()", ["=ZEILEZEILE(A1)"]).edits == ()


@pytest.mark.parametrize(
    ("written", "once"),
    [  # guided and repaired outputs of the dev sets
        ("Die Übergangsübergang", "Die Übergang"),
        ("chroot-Umgebungsumgebungen", "chroot-Umgebungen"),
        ("FußzeilenFußzeile", "Fußzeile"),
        ("Eingabeaufforderungsaufforderung", "Eingabeaufforderung"),
        ("die globalen Konfigurations-Konfiguration", "die globalen Konfiguration"),
        ("Übergangs-übergang", "Übergang"),
        # real words with a short part twice
        ("Karteikarte", "Karteikarte"),
        ("Festplattenplatz", "Festplattenplatz"),
        ("Tabellenzelle", "Tabellenzelle"),
        # a word between two parts that end alike, a part of four letters twice (the help's
        # own translations)
        ("Beleuchtungsrichtung", "Beleuchtungsrichtung"),
        ("Anzeigeeigenschaften", "Anzeigeeigenschaften"),
    ],
)
def test_a_part_written_twice_with_a_linking_element_is_written_once(
    written: str, once: str
) -> None:
    assert without_stutter("Go to the menu.", written).text == once


def test_a_part_the_memory_writes_twice_stays() -> None:
    targets = ["Die Umgebungsumgebung"]
    assert without_stutter("Go to the menu.", "Umgebungsumgebung", targets).edits == ()


def test_of_two_forms_of_a_word_in_a_row_the_second_is_kept() -> None:
    source = "Copy the selected uploads."
    assert without_stutter(source, "Kopie kopieren nach").text == "Kopieren nach"
    assert without_stutter(source, "NMUs gegenüber Upload-Uploads").text == "NMUs gegenüber Uploads"
    assert without_stutter(source, "den Abschnitt Abschnitte").text == "den Abschnitte"
    assert without_stutter(source, "markiert werden soll sollen.").text == (
        "markiert werden sollen."
    )
    # another word, not a form of the first; a memory that writes the pair so
    assert without_stutter(source, "das Haus Hausmeister").edits == ()
    targets = ["Die Datei Dateien wird geöffnet."]
    assert without_stutter(source, "Die Datei Dateien", targets).edits == ()


def test_a_section_number_with_its_last_part_twice_is_written_as_the_source_writes_it() -> None:
    # repaired and guided outputs of the Debian manuals' dev sets
    assert without_stutter("8.2.2. Wireless Interface", "8.2.2.2. Wire-Schnittstelle").text == (
        "8.2.2. Wire-Schnittstelle"
    )
    assert without_stutter("9.1.3. Navigating around directories", "9.1.3.3 wird").text == (
        "9.1.3. wird"
    )
    # a number the source writes so, or that repeats no part, stays
    assert without_stutter("Version 1.1.1 and 1.1", "Version 1.1.1 und 1.1").edits == ()
    assert without_stutter("See 4.2.", "Siehe 4.2.1.").edits == ()
    assert without_stutter("Chapter 2.2", "Kapitel 2.2").edits == ()


def test_a_range_with_its_first_cell_twice_is_written_as_a_range() -> None:
    # a repaired output of the help dev set
    source = '=AVERAGEIF(B2:B6;"<"&LARGE(B2:B6;2);C2:C6)'
    assert without_stutter(
        source, '=MITTELWERTWENN(B2:B6;"<"&KGRÖSSTE(B2:B6;2);C2:C2:C6)'
    ).text == ('=MITTELWERTWENN(B2:B6;"<"&KGRÖSSTE(B2:B6;2);C2:C6)')
    assert without_stutter("=SUM($A$1:$A$9)", "=SUMME($A$1:$A$1:$A$9)").text == "=SUMME($A$1:$A$9)"
    # a source that writes it so, a cell once, a range of one cell
    assert without_stutter("=F(C2:C2:C6)", "=F(C2:C2:C6)").edits == ()
    assert without_stutter("=F(C2:C6)", "=F(C2:C6)").edits == ()
    assert without_stutter("=F(C2:C2)", "=F(C2:C2)").edits == ()


def test_a_part_written_three_times_over_is_written_once_in_passes() -> None:
    # a guided output of the Debian guides' dev set
    written = "Sie einen Boot-Eingabeaufforderungsaufforderungsaufforderung:"
    passes = stutter_passes("a boot prompt:", written)
    assert [p.text for p in passes] == [
        "Sie einen Boot-Eingabeaufforderungsaufforderung:",
        "Sie einen Boot-Eingabeaufforderung:",
    ]
    assert len(stutter_passes("x", "Sie auch auch ändern")) == 1
    assert stutter_passes("x", "nichts doppelt")[0].edits == ()


def test_german_words_and_the_sources_names_are_not_two_forms() -> None:
    # human translations of the Debian memories, which the rule once shortened
    assert without_stutter("Are you sure that", "Sind Sie sich sicher, dass").edits == ()
    assert without_stutter("Like apt-file list", "Wie apt-file list listet").edits == ()
    source = "the init system systemd"
    assert without_stutter(source, "das Init-System systemd").edits == ()
    # a compound that starts with the word before it
    assert (
        without_stutter("Click Field type in the field", "Klicken Sie im Feld Feldtyp").edits == ()
    )


def test_a_name_echoed_garbled_after_a_hyphen_is_written_once() -> None:
    """The Debian guides' dev set: the model wrote the name the source gives, then a hyphen
    and the name again with a letter left out."""
    source = "4.13.10. December 2008: Thiemo Seufer died"
    fixed = without_stutter(source, "4.13.10. Dezember 2008: Thiemo Seufer-Sufer stirbt")
    assert fixed.text == "4.13.10. Dezember 2008: Thiemo Seufer stirbt"


@pytest.mark.parametrize(
    ("source", "translation"),
    [
        # the second part is a word of its own, not the first with letters left out
        ("Debian GNU/Linux", "Debian-GNU/Linux"),
        ("the Seufer list", "Seufer-Liste"),
        # the source does not write the first part as a word
        ("December 2008: died", "Seufer-Sufer"),
        # the source writes the echo, or a target the pair
        ("Seufer and Sufer", "Seufer-Sufer"),
    ],
)
def test_a_hyphened_pair_that_is_no_echo_stays(source: str, translation: str) -> None:
    assert without_stutter(source, translation).text == translation
    assert without_stutter("Thiemo Seufer", "Seufer-Sufer", ["die Seufer-Sufer"]).text == (
        "Seufer-Sufer"
    )
