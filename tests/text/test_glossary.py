"""Which glossary entries apply to a sentence, and whether a translation holds their terms."""

from __future__ import annotations

from tm_guide.text.glossary import Glossary, Term, applied


def test_whole_words_any_case_longest_first_once() -> None:
    glossary = Glossary(
        [("file", "Akte"), ("file manager", "Dateiverwaltung"), ("Print", "Ausgeben")]
    )
    found = glossary.terms_in("Open the File Manager, print the file and print it again.")
    assert found == [
        Term("file manager", "Dateiverwaltung"),
        Term("Print", "Ausgeben"),
        Term("file", "Akte"),
    ]
    assert glossary.terms_in("Profiles and printers") == []  # not inside other words


def test_a_term_is_applied_as_written_as_whole_words() -> None:
    term = Term("file", "Akte")
    assert applied(term, "Die Akte ist offen.")
    assert applied(term, "akte öffnen")  # letter case aside (a sentence may open with it)
    assert not applied(term, "Die Datei ist offen.")
    assert applied(Term("column", "Spalte"), "eine ORDER-BY-Spalte")  # closing a compound
    assert applied(Term("element", "Element"), "der Elementtyp")  # opening one
    assert not applied(term, "Die Pakten sind offen.")  # inside a word is no term


def test_an_empty_glossary_is_false() -> None:
    assert not Glossary([]) and not Glossary([("", "x"), ("a", " ")])
