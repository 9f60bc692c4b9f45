"""Brackets a memory-guided translation leaves open, closed as the source closes its own
(tm_guide.text.brackets); the outputs are repairs of the help's dev set."""

from __future__ import annotations

import pytest

from tm_guide.text.brackets import closed_brackets


@pytest.mark.parametrize(
    ("source", "translation", "expected"),
    [
        # closed at the end of the run that opened it
        (
            "=ISOWEEKNUM(DATE(1999;1;1)) returns 53.",
            "=ISOKALENDERWOCHE(DATUM(1999;1;1) gibt 53 zurück.",
            "=ISOKALENDERWOCHE(DATUM(1999;1;1)) gibt 53 zurück.",
        ),
        (
            '=AVERAGEIF(B2:B6;">"&SMALL(B2:B6;1))',
            '=MITTELWERTWENN(B2:B6;">"&SMALL(B2:B6;1)',
            '=MITTELWERTWENN(B2:B6;">"&SMALL(B2:B6;1))',
        ),
        # ... before its sentence punctuation
        ("Use f(x) here.", "Verwenden Sie f(x hier.", "Verwenden Sie f(x) hier."),
        ("See SUM(A1).", "Siehe SUMME(A1.", "Siehe SUMME(A1)."),
        # before the closer of another kind that comes first
        (
            "AVERAGEIF(Range; Criterion [; Average_Range ])",
            "AVERAGEIF(Bereich; Bedingung [; Durchschnitt)",
            "AVERAGEIF(Bereich; Bedingung [; Durchschnitt])",
        ),
    ],
)
def test_a_bracket_left_open_is_closed_where_it_belongs(
    source: str, translation: str, expected: str
) -> None:
    assert closed_brackets(source, translation).text == expected


@pytest.mark.parametrize(
    ("source", "translation"),
    [
        ("Use f(x) here.", "Verwenden Sie f(x) hier."),  # closed already
        ("Open the file.", "Öffnen Sie (die Datei."),  # the source writes no bracket
        ("a) first, b) second", "a) erstens, b (zweitens"),  # nor one opened and closed
        ("Use f(x) here.", "Verwenden Sie f x) hier."),  # a closer without its opener
        # a bracket in prose: where it ends, only the sentence says
        (
            "(see Section 2.7.2, “Packages”) regularly",
            "(siehe Section 2.7.2, »Packages« von gemischten Quellen",
        ),
        ('Type "Heading 1".', "Geben Sie „Überschrift 1 ein."),  # quotation marks
    ],
)
def test_nothing_else_changes(source: str, translation: str) -> None:
    fixed = closed_brackets(source, translation)
    assert fixed.text == translation and not fixed.edits


def test_offsets_after_a_closed_bracket_move_on() -> None:
    fixed = closed_brackets("f(x) y", "f(x y")
    assert fixed.text == "f(x) y"
    assert fixed.moved(4) == 5  # "y"
    assert fixed.moved(2) == 2  # "x"


def test_only_a_memory_guided_translation_is_closed(tiny_bundle) -> None:
    """The model's own translation is left as it wrote it (lambda 0 is native beam search)."""
    source, text = "See SUM(A1).", "Siehe SUMME(A1."
    assert tiny_bundle.set_right(source, text)[-1].text == text
    guided = tiny_bundle.set_right(source, text, ["Siehe SUMME(B1)."])
    assert guided[-1].text == "Siehe SUMME(A1)."
