"""Marks and hyphens left at the seams of a memory-guided translation are set right."""

from __future__ import annotations

import pytest

from tm_guide.text.seams import set_seams


def test_a_quotation_mark_that_opens_nothing_goes() -> None:
    # a repaired output of the help dev set (match: "The View menu of a database window.")
    source = "The Edit menu of a database window."
    targets = ["Das Menü Ansicht eines Datenbankfensters."]
    assert set_seams(source, "Das Menü „ Bearbeiten eines Datenbankfensters.", targets).text == (
        "Das Menü Bearbeiten eines Datenbankfensters."
    )
    assert set_seams(source, "„ Bearbeiten", targets).text == "Bearbeiten"


def test_quotation_marks_that_quote_stay() -> None:
    targets = ["Das Menü Ansicht"]
    # the source quotes; the mark is closed after it; it is glued to its word
    assert set_seams('The "Edit" menu', "Das Menü „ Bearbeiten“", targets).edits == ()
    assert set_seams("The Edit menu", "Das Menü „ Bearbeiten“", targets).edits == ()
    assert set_seams("The Edit menu", "Das Menü „Bearbeiten", targets).edits == ()


@pytest.mark.parametrize(
    ("source", "written", "set_right"),
    [  # repaired outputs of the Debian manuals' dev sets
        (
            "Here are some Unix file basics.",
            "Hier einige Unix-Datei- Grundzeichen:",
            "Hier einige Unix-Datei-Grundzeichen:",
        ),
        (
            "the Debian GNU/Linux system",
            "das Debian- GNU/Linux-System",
            "das Debian-GNU/Linux-System",
        ),
    ],
)
def test_a_hyphen_hanging_before_a_new_word_joins_it(
    source: str, written: str, set_right: str
) -> None:
    assert set_seams(source, written, ["Hier einige Tipps zu Git:"]).text == set_right


def test_a_hyphen_hanging_before_a_conjunction_stays() -> None:
    for text in (
        "Datei- und Ordnernamen",
        "Ein- oder Ausblenden",
        "Groß- bzw. Kleinbuchstaben",
        "Export- respektive Importfilter",
    ):
        assert set_seams("Files and folders", text, ["Dateien"]).edits == (), text
    # a memory that writes it so
    assert set_seams("x", "Debian- GNU", ["Das Debian- GNU-Projekt"]).edits == ()


def test_an_adjective_hyphened_to_a_noun_is_spaced() -> None:
    # a repaired output of the Debian manuals' dev set (match: "Interpreter-Sprachen")
    source = "12.3. Coding in compiled languages"
    targets = ["12.2. Skriptverarbeitung in Interpreter-Sprachen"]
    assert set_seams(source, "12.3. Bedingte in kompilierte-Sprachen", targets).text == (
        "12.3. Bedingte in kompilierte Sprachen"
    )


def test_a_word_the_source_or_memory_writes_keeps_its_hyphen() -> None:
    targets = ["Die Veröffentlichung"]
    assert set_seams("the unstable release", "die unstable-Veröffentlichung", targets).edits == ()
    assert set_seams("x", "die private-Schlüssel", ["die private-Schlüssel"]).edits == ()
    # a noun, a name, a word ending otherwise
    for text in ("Boot-Bildschirm", "E-Mail-Optionen", "nicht-Git"):
        assert set_seams("x", text, ["y"]).edits == (), text


def test_only_a_memory_guided_translation_is_set_right(tiny_bundle) -> None:
    """The model's own translation is left as it wrote it (lambda 0 is native beam search)."""
    source, text = "Here are some Unix file basics.", "Hier einige Unix-Datei- Grundzeichen:"
    assert tiny_bundle.set_right(source, text)[-1].text == text
    guided = tiny_bundle.set_right(source, text, ["Hier einige Tipps zu Git:"])
    assert guided[-1].text == "Hier einige Unix-Datei-Grundzeichen:"


def test_offsets_after_a_seam_move_on() -> None:
    fixed = set_seams("x", "Das Menü „ Bearbeiten eines", ["y"])
    assert fixed.moved(11) == 9  # "Bearbeiten"
    assert fixed.moved(4) == 4  # "Menü"


def test_a_period_before_a_names_ellipsis_goes_after_it() -> None:
    # a repaired output of the help dev set
    source = "Choose Insert - Text from File."
    targets = ["Wählen Sie Einfügen – Text aus Datei…"]
    assert set_seams(source, "Wählen Sie Einfügen – Text aus Datei.…", targets).text == (
        "Wählen Sie Einfügen – Text aus Datei…."
    )
    assert set_seams(source, "Datei… und Datei….", targets).edits == ()
    assert set_seams("x", "Text.…", ["Text.…"]).edits == ()


def test_a_comma_before_the_last_period_goes() -> None:
    # a repaired output of the help dev set
    source = "Expression1, Expression2: Any numeric expressions for which you want to calculate."
    written = "Ausdruck1, Ausdruck2: Beliebige numerische Ausdrücke zu berechnen,."
    assert set_seams(source, written, ["Ausdruck1, Ausdruck2: Beliebige Ausdrücke."]).text == (
        "Ausdruck1, Ausdruck2: Beliebige numerische Ausdrücke zu berechnen."
    )
    assert set_seams("x", "zu berechnen, .", ["y"]).text == "zu berechnen."
    # inside the sentence, or written so by the memory, it stays
    assert set_seams("x", "1,.5 und 2", ["y"]).edits == ()
    assert set_seams("x", "Wert,.", ["Wert,."]).edits == ()


def test_a_word_starting_with_a_period_is_not_glued_to_the_word_before() -> None:
    # a repaired output of the guides' dev set
    source = "BACK TO BASICS .htaccess file"
    targets = ["ZURÜCK ZU DEN GRUNDLAGEN ICMP"]
    assert set_seams(source, "ZURÜCK ZU DEN GRUNDLAGEN.htaccess Datei", targets).text == (
        "ZURÜCK ZU DEN GRUNDLAGEN .htaccess Datei"
    )
    # written apart already, or a longer name, or glued in the source too: it stays
    assert set_seams(source, "GRUNDLAGEN .htaccess Datei", targets).edits == ()
    assert set_seams(source, "GRUNDLAGEN.htaccess2 Datei", targets).edits == ()
    assert set_seams("the file foo.htaccess", "die Datei foo.htaccess", targets).edits == ()
    assert set_seams("Edit .bashrc", "Bearbeiten Sie ~/.bashrc", targets).edits == ()


@pytest.mark.parametrize(
    "text",
    [  # human translations of the three domains' memories, which no rule may change
        "Mit der Einstellung 1-3, 5; 10- druckt die Seiten 1 bis 3, 5 und ab 10.",
        "Wechselt vom Quer- ins Hochformat.",
        "Der Übergang vom a.out- zum ELF-Format",
        "Wechsel vom Mehrbenutzer- in den Einbenutzermodus",
        "Das Ändern von nice-Prioritäten",
        "der architecture-Wert any",
    ],
)
def test_what_human_translators_write_stays(text: str) -> None:
    assert set_seams("An English source.", text, ["Ein Ziel."]).edits == ()
