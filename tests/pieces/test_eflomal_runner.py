"""eflomal runner and priors: shapes, empty sides, priors file round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.pieces.align import AlignOptions, align_token_pairs
from tm_guide.pieces.eflomal_runner import EflomalOptions, run_eflomal
from tm_guide.pieces.priors import AlignmentPriors

SOURCE = [s.split() for s in ["the house is small", "the house is big", "a small car", "the car"]]
TARGET = [
    t.split() for t in ["das Haus ist klein", "das Haus ist groß", "ein kleines Auto", "das Auto"]
]


def test_links_stay_inside_each_pair_and_empty_sides_get_none() -> None:
    source = [*SOURCE, [], ["lonely"]]
    target = [*TARGET, ["leer"], []]
    alignments, links = align_token_pairs(source, target, EflomalOptions(iterations=(4, 4, 4)))
    assert len(alignments) == len(links.forward) == len(links.reverse) == len(source)
    assert alignments[-2:] == [[], []]
    for src, trg, sym in zip(source, target, alignments, strict=True):
        assert all(0 <= s < len(src) and 0 <= t < len(trg) for s, t in sym)
    assert alignments[0], "a four-word pair that recurs gets links"


def test_mismatched_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="2 source sentences but 1 target"):
        run_eflomal([["a"], ["b"]], [["A"]], EflomalOptions())


def canonical(table: dict) -> dict:
    return {key: sorted(entries) for key, entries in table.items()}


def test_priors_round_trip_through_eflomal_format(tmp_path: Path) -> None:
    alignments, links = align_token_pairs(SOURCE * 5, TARGET * 5, EflomalOptions())
    priors = AlignmentPriors.estimate(SOURCE * 5, TARGET * 5, links.forward, links.reverse)
    assert priors.pairs == 20 and not priors.is_empty()
    path = tmp_path / "priors.txt"
    priors.save(path)
    loaded = AlignmentPriors.load(path)
    for table in ("lexical", "fertility_forward", "fertility_reverse"):
        assert canonical(getattr(loaded, table)) == canonical(getattr(priors, table))
    assert (loaded.hmm_forward, loaded.hmm_reverse) == (priors.hmm_forward, priors.hmm_reverse)
    assert loaded.pairs == priors.pairs
    selected = loaded.select(["the house"], ["das Haus"])
    lexical_words = {(s, t) for s, t, _ in selected[0]}
    assert lexical_words <= {(s, t) for s in ("the", "house") for t in ("das", "Haus")}
    assert lexical_words, "the priors link words the memory aligned"


def test_priors_added_batch_by_batch_equal_one_estimate_of_all() -> None:
    alignments, links = align_token_pairs(SOURCE * 3, TARGET * 3, EflomalOptions())
    whole = AlignmentPriors.estimate(SOURCE * 3, TARGET * 3, alignments, alignments)
    grown = AlignmentPriors.estimate(SOURCE, TARGET, alignments[:4], alignments[:4])
    grown.add(AlignmentPriors.estimate(SOURCE * 2, TARGET * 2, alignments[4:], alignments[4:]))
    assert grown.pairs == whole.pairs == 12
    for table in ("lexical", "fertility_forward", "fertility_reverse"):
        assert canonical(getattr(grown, table)) == canonical(getattr(whole, table))
    assert (grown.hmm_forward, grown.hmm_reverse) == (whole.hmm_forward, whole.hmm_reverse)


def test_a_foreign_file_is_not_taken_for_priors(tmp_path: Path) -> None:
    path = tmp_path / "priors.txt"
    path.write_text("LEX\ta\tb\t1\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a tm-guide priors file"):
        AlignmentPriors.load(path)


def test_align_options_are_checked() -> None:
    with pytest.raises(InvalidInput, match="refresh_fraction"):
        AlignOptions(refresh_fraction=-1)
