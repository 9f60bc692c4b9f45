"""The paper's Figure 1 / Table 1 example: which n-grams of the retrieved target are pieces.

The figure itself is an image that the paper's text does not carry; this pair is written to match
its caption and Table 1: the retrieved target 'Vorschriften für die Eignung von Um@@ schlags@@
anlagen' (BPE-split 'Umschlagsanlagen'), whose last three tokens are aligned to source words that
the input edits.
"""

from __future__ import annotations

import pytest

from tm_guide.pieces.collect import AlignedPair, PieceTable, compare, pair_pieces

INPUT = ["requirements", "for", "the", "suitability", "of", "storage", "tanks"]
TM_SOURCE = ["requirements", "for", "the", "suitability", "of", "transhipment", "installations"]
TM_TARGET = ["Vorschriften", "für", "die", "Eignung", "von", "Um@@", "schlags@@", "anlagen"]
ALIGNMENT = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (5, 6), (6, 7)]

FIGURE_1 = AlignedPair.build(1, TM_SOURCE, TM_TARGET, ALIGNMENT)


@pytest.mark.parametrize(
    ("ngram", "collected"),
    [
        ("Vorschriften für die Eignung", True),
        ("die Eignung von", True),
        ("von Um@@ schlags@@ anlagen", False),
        ("Um@@ schlags@@ anlagen", False),
    ],
)
def test_table_1(ngram: str, collected: bool) -> None:
    _, pieces = pair_pieces(INPUT, FIGURE_1)
    assert (tuple(ngram.split()) in pieces) is collected


def test_figure_1_unedited_words_and_similarity() -> None:
    comparison = compare(INPUT, TM_SOURCE)
    unedited = [i for i in range(len(TM_SOURCE)) if comparison.unedited >> i & 1]
    assert unedited == [0, 1, 2, 3, 4]  # the red words of Figure 1
    assert comparison.distance == 2
    assert comparison.similarity == pytest.approx(1 - 2 / 7)  # eq. 9


def test_figure_1_collects_exactly_the_blue_part() -> None:
    _, pieces = pair_pieces(INPUT, FIGURE_1)
    blue = TM_TARGET[:5]
    expected = {
        tuple(blue[i : j + 1]) for i in range(len(blue)) for j in range(i, min(len(blue), i + 4))
    }
    assert pieces == expected


def test_eq_8_keeps_the_best_similarity_and_every_source() -> None:
    closer = AlignedPair.build(
        2,
        ["requirements", "for", "the", "suitability", "of", "storage", "installations"],
        ["Vorschriften", "für", "die", "Eignung", "von", "Lageranlagen"],
        [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 5)],
    )
    table = PieceTable()
    for pair in (FIGURE_1, closer):
        comparison, pieces = pair_pieces(INPUT, pair)
        table.add(pieces, comparison.similarity, pair.segment_id)
    assert table.scores[("die", "Eignung", "von")] == pytest.approx(1 - 1 / 7)
    assert table.provenance[("die", "Eignung", "von")] == [1, 2]
    assert ("Lageranlagen",) not in table.scores  # aligned to the edited 'installations'
    assert "Vorschriften" in table.unigrams()
