"""linked_in_order: a list of names in capitals is linked name by name, in order."""

from tm_guide.pieces.collect import AlignedPair, compare_words
from tm_guide.pieces.identifier_links import linked_in_order
from tm_guide.pieces.repair import RepairOptions, match_template

# "AVERAGE, AVERAGEA, AVEDEV, AVERAGEIF" and its German target as the demo model's
# SentencePiece models cut them
SOURCE = (
    "▁A", "V", "ER", "A", "GE", ",",
    "▁A", "V", "ER", "A", "GE", "A", ",",
    "▁A", "V", "ED", "E", "V", ",",
    "▁A", "V", "ER", "A", "GE", "IF",
)  # fmt: skip
TARGET = (
    "▁", "MI", "T", "TE", "L", "W", "ER", "T", ",",
    "▁", "MI", "T", "TE", "L", "W", "ER", "T", "A", ",",
    "▁", "MI", "T", "TE", "L", "A", "B", "W", ",",
    "▁", "MI", "T", "TE", "L", "W", "ER", "T", "W", "EN", "N",
)  # fmt: skip
# the links eflomal gave this pair: letters of the names linked across one another
EFLOMAL = [
    (0, 0), (1, 1), (2, 6), (4, 3), (5, 27), (7, 33), (8, 34), (9, 15), (10, 16), (11, 17),
    (12, 18), (13, 19), (14, 20), (15, 31), (16, 4), (17, 5), (18, 8), (19, 9), (20, 14),
    (21, 15), (22, 10), (23, 35), (24, 36),
]  # fmt: skip
NAMES_SOURCE = [range(0, 5), range(6, 12), range(13, 18), range(19, 25)]
NAMES_TARGET = [range(0, 8), range(9, 18), range(19, 27), range(28, 39)]


def test_each_name_is_linked_to_the_name_at_its_place() -> None:
    pair = linked_in_order(AlignedPair.build(1, SOURCE, TARGET, EFLOMAL))
    for source, target in zip(NAMES_SOURCE, NAMES_TARGET, strict=True):
        mask = sum(1 << s for s in source)
        assert all(pair.target_links[t] == mask for t in target)
    # and each comma to the comma at its place
    assert [pair.target_links[t] for t in (8, 18, 27)] == [1 << 5, 1 << 12, 1 << 18]


def test_the_repair_keeps_the_names_the_input_keeps() -> None:
    """The input drops the last name: with eflomal's links the repair dropped MITTELWERTA as
    well (it was linked to letters of AVERAGEIF), in order it keeps every other name."""
    query = SOURCE[:18]
    options = RepairOptions.parse("0.5:1:1")
    for pair, kept in [
        (AlignedPair.build(1, SOURCE, TARGET, EFLOMAL), False),
        (linked_in_order(AlignedPair.build(1, SOURCE, TARGET, EFLOMAL)), True),
    ]:
        template = match_template(pair, compare_words(query, SOURCE), options)
        assert template is not None
        assert (set(NAMES_TARGET[1]) <= set(template.positions)) is kept
        assert not set(NAMES_TARGET[3]) & set(template.positions)


def test_pairs_without_as_many_names_are_left_as_they_are() -> None:
    pair = AlignedPair.build(1, SOURCE, TARGET[:28], [(s, t) for s, t in EFLOMAL if t < 28])
    assert linked_in_order(pair) is pair
    one = AlignedPair.build(2, ("▁Use", "▁AVERAGE", "."), ("▁MITTELWERT", "▁nutzen"), [(1, 0)])
    assert linked_in_order(one) is one
    # "TO" is no name: two letters
    short = AlignedPair.build(3, ("▁BACK", "▁TO"), ("▁ZU", "▁DEN"), [(0, 1), (1, 0)])
    assert linked_in_order(short) is short
