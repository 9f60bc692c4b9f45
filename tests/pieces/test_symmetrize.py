"""grow-diag-final-and on hand-worked cases and its invariants."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tm_guide.pieces.symmetrize import format_links, grow_diag_final_and, parse_links

# The suite runs on a shared, often busy machine: no per-example deadline or speed check.
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_agreeing_directions_are_kept_as_they_are() -> None:
    links = [(0, 0), (1, 2), (2, 1)]
    assert grow_diag_final_and(links, links, 3, 3) == links


def test_grows_into_diagonal_and_adjacent_union_links() -> None:
    # intersection {(0,0)}; (1,1) is a diagonal neighbour with source 1 unaligned, then (1,2) is
    # next to (1,1) with target 2 unaligned.
    assert grow_diag_final_and([(0, 0), (1, 1)], [(0, 0), (1, 2)], 2, 3) == [(0, 0), (1, 1), (1, 2)]


def test_final_and_needs_both_words_unaligned() -> None:
    # (2,0) is no neighbour of (0,0) and its target word is aligned: grow-diag-final would add
    # it, grow-diag-final-and does not.
    assert grow_diag_final_and([(0, 0), (2, 0)], [(0, 0)], 3, 1) == [(0, 0)]
    # (2,1): both words unaligned, not adjacent to anything: added in the final step.
    assert grow_diag_final_and([(0, 0), (2, 2)], [(0, 0)], 3, 3) == [(0, 0), (2, 2)]


def test_no_growth_from_an_empty_intersection_except_final_and() -> None:
    assert grow_diag_final_and([(0, 1)], [(1, 0)], 2, 2) == [(0, 1), (1, 0)]
    assert grow_diag_final_and([(0, 0)], [(0, 1)], 1, 2) == [(0, 0)]


def test_links_outside_the_sentence_are_ignored() -> None:
    assert grow_diag_final_and([(0, 0), (5, 0)], [(0, 0), (0, 9)], 2, 2) == [(0, 0)]


def test_pharaoh_format_round_trip() -> None:
    assert parse_links("0-0 2-1 1-3") == [(0, 0), (2, 1), (1, 3)]
    assert format_links([(0, 0), (2, 1)]) == "0-0 2-1"
    assert parse_links("") == []


LINKS = st.sets(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=25)


@PROPERTY
@given(LINKS, LINKS)
def test_between_intersection_and_union(forward: set, reverse: set) -> None:
    result = set(grow_diag_final_and(forward, reverse, 8, 8))
    assert forward & reverse <= result <= forward | reverse


@PROPERTY
@given(LINKS, LINKS)
def test_every_union_link_with_two_unaligned_words_is_added(forward: set, reverse: set) -> None:
    result = set(grow_diag_final_and(forward, reverse, 8, 8))
    source = {s for s, _ in result}
    target = {t for _, t in result}
    for s, t in forward | reverse:
        assert s in source or t in target
