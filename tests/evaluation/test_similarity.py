"""Median split into half-H / half-L (Table 4) and the similarity histogram (Table 5)."""

import pytest

from tm_guide.evaluation.similarity import (
    mean_similarity,
    median_split,
    similarity_histogram,
    similarity_tenth,
)


def test_median_split_puts_the_more_similar_half_in_high():
    split = median_split([0.9, 0.1, 0.5, 0.7])
    assert split.high == [0, 3]
    assert split.low == [1, 2]


def test_median_split_odd_count_gives_the_median_sentence_to_low():
    split = median_split([0.2, 0.8, 0.5])
    assert split.high == [1]
    assert split.low == [0, 2]


def test_median_split_breaks_ties_by_position_and_covers_every_sentence():
    split = median_split([0.5] * 5 + [0.9])
    assert split.high == [0, 1, 5]
    assert sorted(split.high + split.low) == list(range(6))


def test_halves_have_the_expected_mean_similarity():
    sims = [1.0, 0.8, 0.2, 0.0]
    split = median_split(sims)
    assert mean_similarity([sims[i] for i in split.high]) == pytest.approx(0.9)
    assert mean_similarity([sims[i] for i in split.low]) == pytest.approx(0.1)
    assert mean_similarity(sims) == pytest.approx(0.5)


def test_histogram_bins_tenths_and_keeps_exact_one_apart():
    bins = similarity_histogram([0.0, 0.05, 0.1, 0.3, 0.7, 0.95, 0.999, 1.0])
    counts = {row.label: row.sentences for row in bins}
    assert counts["[0.0,0.1)"] == 2
    assert counts["[0.1,0.2)"] == 1
    assert counts["[0.3,0.4)"] == 1
    assert counts["[0.7,0.8)"] == 1
    assert counts["[0.9,1.0)"] == 2
    assert counts["1"] == 1
    assert sum(counts.values()) == 8
    assert sum(row.percent for row in bins) == pytest.approx(100.0)


def test_histogram_rejects_a_similarity_outside_zero_one():
    with pytest.raises(ValueError, match="1.5"):
        similarity_histogram([1.5])


def test_deciles_bin_as_table_5_does() -> None:
    """A similarity computed as 1 - 8/10 (0.19999999999999996) starts the 0.2 tenth in Table 5's
    histogram and in the decile scores alike; exactly 1 joins the last decile."""
    from tm_guide.evaluation.analysis import decile_scores

    edge = 1 - 8 / 10
    assert edge < 0.2 and similarity_tenth(edge) == 2
    sims = [edge, 0.05, 1.0, 0.95]
    outputs = {"guided": ["a b c d", "e f g h", "i j k l", "m n o p"]}
    rows = decile_scores(sims, outputs, ["a b c d", "x", "i j k l", "m n o p"])
    assert [row["sentences"] for row in rows] == [1, 0, 1, 0, 0, 0, 0, 0, 0, 2]
    assert (rows[2]["low"], rows[2]["high"]) == (0.2, 0.3)
    assert rows[1]["bleu"]["guided"] is None
    assert rows[9]["bleu"]["guided"] == pytest.approx(100.0)
    counts = [b.sentences for b in similarity_histogram(sims)]
    assert counts[2] == 1 and counts[9] + counts[10] == 2


def test_each_decile_counts_wins_ties_and_losses_against_the_best_match() -> None:
    """Sentence by sentence against the best match's target: a better output wins, the same
    output ties, a worse one loses; the report prints the three counts."""
    from tm_guide.evaluation.analysis import decile_scores
    from tm_guide.evaluation.report import _duel

    sims = [0.95, 0.92, 0.91, 0.3]
    references = ["open the file now", "save the page", "close the window", "print it"]
    outputs = {
        "best_match": ["open a file now", "save the page", "close the window", "print"],
        "unguided": ["open file", "save page", "close window", "print"],
        "served": ["open the file now", "save the page", "close window", "print it"],
    }
    rows = decile_scores(sims, outputs, references, samples=50)
    assert rows[9]["versus_best_match"] == {"wins": 1, "ties": 1, "losses": 1}
    assert rows[3]["versus_best_match"] == {"wins": 1, "ties": 0, "losses": 0}
    assert "versus_best_match" not in rows[5]  # no sentence there
    assert _duel(rows[9]["versus_best_match"]) == "1 / 1 / 1" and _duel(None) == "-"
