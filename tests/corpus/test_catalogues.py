"""Cleaning gettext pairs: what reaches the training corpus and what is kept out."""

from __future__ import annotations

from pathlib import Path

import polib
from catalogues import CleaningOptions, clean_pair, placeholders, read_mo

OPTIONS = CleaningOptions()


def test_accelerators_are_removed_and_placeholders_kept() -> None:
    assert clean_pair("_Open %s file", "Datei %s _öffnen", OPTIONS) == (
        "Open %s file",
        "Datei %s öffnen",
    )
    assert clean_pair("&Save as...", "Speichern &unter …", OPTIONS) == (
        "Save as...",
        "Speichern unter …",
    )


def test_reordered_positional_placeholders_match() -> None:
    assert clean_pair("%1$s of %2$d", "%2$d von %1$s", OPTIONS) is not None
    assert placeholders("%(name)s has {0} and %1") == placeholders("%1, {0}, %(name)s")


def test_placeholder_mismatch_is_dropped() -> None:
    assert clean_pair("Copied %d files", "Dateien kopiert", OPTIONS) is None
    assert clean_pair("Hello {name}", "Hallo {nom}", OPTIONS) is None
    assert clean_pair("%s of %s", "%s von %d", OPTIONS) is None


def test_untranslated_and_letterless_pairs_are_dropped() -> None:
    assert clean_pair("Format", "Format", OPTIONS) is None
    assert clean_pair("OK", "ok", OPTIONS) is None
    assert clean_pair("100%%", "100 %%", OPTIONS) is None


def test_markup_heavy_entries_are_dropped_light_markup_stripped() -> None:
    heavy = "<b>Bold</b> and <i>italic</i> text"
    assert clean_pair(heavy, "<b>Fett</b> und <i>kursiv</i> Text", OPTIONS) is None
    assert clean_pair("<b>Warning</b>", "<b>Warnung</b>", OPTIONS) == ("Warning", "Warnung")


def test_length_limits_and_ratio() -> None:
    assert clean_pair("word " * 90, "Wort " * 90, OPTIONS) is None
    assert clean_pair("Open the file now", "x" * 60, OPTIONS) is None


def test_read_mo_gives_plural_forms_and_skips_credits(tmp_path: Path) -> None:
    catalogue = polib.POFile()
    catalogue.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    catalogue.append(polib.POEntry(msgid="translator-credits", msgstr="Jemand"))
    catalogue.append(polib.POEntry(msgid="Close", msgstr="Schließen"))
    catalogue.append(polib.POEntry(msgid="Untranslated", msgstr=""))
    catalogue.append(
        polib.POEntry(
            msgid="%d file",
            msgid_plural="%d files",
            msgstr_plural={0: "%d Datei", 1: "%d Dateien"},
        )
    )
    path = tmp_path / "de.mo"
    catalogue.save_as_mofile(str(path))
    pairs = sorted(read_mo(path.read_bytes()))
    assert pairs == [("%d file", "%d Datei"), ("%d files", "%d Dateien"), ("Close", "Schließen")]
