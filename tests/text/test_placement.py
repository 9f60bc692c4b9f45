"""Stand-ins the model lost, put back beside their aligned neighbours."""

from __future__ import annotations

from collections.abc import Sequence

from tm_guide.text.placement import place_lost


def by_pairs(pairs: dict[str, str]):  # type: ignore[no-untyped-def]
    """An aligner that links a source word to the target word the table gives it."""

    def align(source: Sequence[str], target: Sequence[str]) -> list[tuple[int, int]]:
        return [
            (s, t)
            for s, word in enumerate(source)
            for t, other in enumerate(target)
            if pairs.get(word) == other
        ]

    return align


def test_a_lost_stand_in_goes_after_the_word_its_neighbour_became() -> None:
    source = "create a shallow clone with {0} depth"
    translation = "einen flachen Klon mit Tiefe erzeugen"
    align = by_pairs({"with": "mit", "clone": "Klon", "depth": "Tiefe"})
    placed = place_lost(source, translation, 1, align)
    assert placed.text == "einen flachen Klon mit {0} Tiefe erzeugen"
    # the characters after the insertion moved by its length
    assert placed.moved(translation.index("Tiefe")) == placed.text.index("Tiefe")


def test_without_an_aligned_word_before_it_goes_before_the_one_after() -> None:
    placed = place_lost("{0} is missing", "fehlt", 1, by_pairs({"missing": "fehlt"}))
    assert placed.text == "{0} fehlt"


def test_quotes_around_it_come_along_and_closing_punctuation_stays_last() -> None:
    source = "cannot remove '{0}': {1}"
    translation = "kann nicht entfernen: {1}"
    placed = place_lost(source, translation, 2, by_pairs({"remove": "entfernen:"}))
    assert placed.text == "kann nicht entfernen '{0}': {1}"


def test_repeats_and_unknown_stand_ins_are_removed() -> None:
    placed = place_lost("open {0} now", "{0} jetzt {0} öffnen {7}", 1, by_pairs({}))
    assert placed.text == "{0} jetzt öffnen"


def test_with_nothing_aligned_it_goes_at_the_end() -> None:
    placed = place_lost("see {0}", "siehe.", 1, by_pairs({}))
    assert placed.text == "siehe. {0}"


def test_two_lost_at_one_place_keep_their_source_order() -> None:
    source = "copy {0} {1} to"
    placed = place_lost(source, "kopieren nach", 2, by_pairs({"copy": "kopieren"}))
    assert placed.text == "kopieren {0} {1} nach"
