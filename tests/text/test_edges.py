"""The marks at a sentence's edges that the model cannot read, cut off and put back."""

from __future__ import annotations

import pytest

from tm_guide.text.edges import Edges, edges_of, is_mark, with_edges


def _unreadable(character: str) -> bool:
    """The demo vocabulary's verdict on these marks: a pilcrow, an arrow and a check mark
    are spelt in bytes, a colon and an en dash have pieces."""
    return character in "¶🡆✓→"


def test_marks_at_either_end_are_cut_with_their_spaces() -> None:
    assert edges_of("5.12. Package Salvaging¶", _unreadable) == Edges(
        "", "5.12. Package Salvaging", "¶"
    )
    assert edges_of("🡆 Next", _unreadable) == Edges("🡆 ", "Next", "")
    assert edges_of("✓ Done ¶", _unreadable) == Edges("✓ ", "Done", " ¶")


@pytest.mark.parametrize(
    "text",
    [
        "a → b",  # inside the sentence: the model reads around it
        "Documentation:",  # a mark with a piece of its own
        "¶",  # nothing else to translate
        " ¶ ",
        "  Documentation  ",  # spaces alone are no marks
        "",
    ],
)
def test_a_sentence_without_marks_only_at_its_edges_is_not_cut(text: str) -> None:
    edges = edges_of(text, _unreadable)
    assert edges == Edges("", text, "") and not edges.cut


def test_the_marks_come_back_where_they_stood() -> None:
    edges = edges_of("✓ Done ¶", _unreadable)
    put_back = with_edges(edges, "Erledigt ")
    assert put_back.text == "✓ Erledigt ¶"
    assert put_back.edits == ((0, 0, "✓ "), (8, 9, " ¶"))


def test_an_end_that_holds_its_mark_already_stays() -> None:
    """A repaired match whose target ends with the pilcrow writes it itself."""
    edges = edges_of("4.6. The Debian archive¶", _unreadable)
    assert with_edges(edges, "4.6. Das Debian-Archiv¶").edits == ()
    assert with_edges(edges, "").edits == ()  # an empty translation gets nothing
    assert with_edges(edges_of("Next", _unreadable), "Weiter").edits == ()


def test_a_letter_is_no_mark_however_it_is_spelt() -> None:
    assert is_mark("¶") and is_mark("→") and is_mark("−")
    assert not is_mark("ß") and not is_mark("7") and not is_mark(" ") and not is_mark("中")
