"""Which glossary entries apply to a sentence, and whether a translation holds their terms."""

from __future__ import annotations

from tm_guide.text.glossary import Glossary, Term, applied, prose


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
    # closing a compound with an ending, after a word, not a prefix
    assert applied(Term("information", "Information"), "Fehlersuchinformationen zu groß")
    assert not applied(Term("value", "Wert"), "Zellen bewerten")
    assert not applied(Term("keys", "Tasten"), "keine Verteidigungstaste")  # not its letters


def test_a_term_that_does_not_inflect_takes_no_ending() -> None:
    name = Term("LibreOffice", "LibreOffice", inflects=False)
    assert applied(name, "Die LibreOffice-Hilfe") and applied(name, "Mit LibreOffice.")
    assert applied(name, "die Writer-LibreOffice")  # closing a compound
    assert not applied(name, "alle LibreOffices")
    glossary = Glossary([name, ("file", "Akte")])
    assert glossary.terms_in("LibreOffice opens the file.") == [name, Term("file", "Akte")]


def test_an_empty_glossary_is_false() -> None:
    assert not Glossary([]) and not Glossary([("", "x"), ("a", " ")])


def test_terms_apply_to_prose_not_to_code_or_non_translatables() -> None:
    glossary = Glossary(
        [("file", "Datei"), ("list", "Liste"), ("copy", "Kopie"), ("changes", "Änderungen")]
    )
    assert glossary.terms_in('use "git add <file>" or --list') == []  # a tag, an option
    assert glossary.terms_in("missing .changes file") == [Term("file", "Datei")]  # a suffix
    assert glossary.terms_in("COPY into table") == []  # a keyword in capitals
    assert glossary.terms_in("Copy the list") == [Term("copy", "Kopie"), Term("list", "Liste")]
    text = "see .git/objects, a_b and x=y"
    assert prose(text) == "see " + " " * len(".git/objects") + ",     and    "


def test_a_quoted_literal_and_a_bracketed_option_are_code() -> None:
    glossary = Glossary([("numeric", "Numerisch"), ("object", "Objekt"), ("save", "Sichern")])
    assert glossary.terms_in('invalid digit in external "numeric" value') == []
    assert glossary.terms_in("git commit-graph verify [--object-dir <dir>]") == []
    # a quoted label is capitalised, and is prose
    assert glossary.terms_in('Click "Save" to keep the object.') == [
        Term("save", "Sichern"),
        Term("object", "Objekt"),
    ]
    assert prose("a non-zero value, don't") == "a non-zero value, don't"
