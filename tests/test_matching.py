"""The exact-match choice the server and the eval share (tm_guide.matching.exact_match)."""

from __future__ import annotations

from dataclasses import dataclass

from tm_guide.matching import exact_match, match_percentage


@dataclass(frozen=True)
class Segment:
    id: int
    source: str
    target: str


def test_no_exact_match_below_100() -> None:
    assert exact_match([(99, Segment(1, "Reset all", "Alles zurücksetzen"))]) is None
    assert exact_match([]) is None


def test_the_context_match_comes_first_then_a_translation_then_the_majority_then_the_newest():
    copy = Segment(9, "Description", "Description")
    translated = Segment(3, "Description", "Beschreibung")
    assert exact_match([(100, copy), (100, translated)]) == (100, translated)
    older, newer, other = (
        Segment(1, "Reset", "Zurücksetzen"),
        Segment(2, "Reset", "Zurücksetzen"),
        Segment(5, "Reset", "Zurück"),
    )
    assert exact_match([(100, other), (100, older), (100, newer)]) == (100, newer)
    assert exact_match([(100, older), (100, other)]) == (100, other)  # a tie: the newest
    # ... unless the guided translation sides with one of them
    assert exact_match([(100, older), (100, other)], "Zurücksetzen") == (100, older)
    assert exact_match([(100, other), (100, older), (100, newer)], "Zurück") == (100, newer)
    in_context = Segment(0, "Reset", "Zurücksetzen (Kontext)")
    assert exact_match([(100, newer), (101, in_context)]) == (101, in_context)


def test_whitespace_does_not_hide_an_exact_match() -> None:
    assert match_percentage("Reset  the view ", "Reset the view") == 100
