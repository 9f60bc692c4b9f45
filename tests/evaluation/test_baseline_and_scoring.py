"""The best-match baseline, corpus scores and paired bootstrap resampling."""

import pytest

from tm_guide.evaluation.baseline import Candidate, best_match_target
from tm_guide.evaluation.scoring import corpus_score, metric_signatures, paired_bootstrap


def test_best_match_is_the_target_of_the_most_similar_pair():
    candidates = [
        Candidate(0.5, "A"),
        Candidate(0.8, "B"),
        Candidate(0.8, "C"),
        Candidate(0.2, "D"),
    ]
    assert best_match_target(candidates) == "B"  # tie: the earlier (better ranked) one


def test_best_match_without_candidates_is_empty():
    assert best_match_target([]) == ""


REFS = [
    "Das ist ein kleiner Test .",
    "Klicken Sie auf die Schaltfläche OK .",
    "Die Datei wurde gespeichert .",
]


def test_perfect_output_scores_100_with_length_ratio_one():
    score = corpus_score(REFS, REFS)
    assert score.bleu == pytest.approx(100.0)
    assert score.chrf == pytest.approx(100.0)
    assert score.length_ratio == pytest.approx(1.0)


def test_length_ratio_is_output_over_reference_tokens():
    short = ["Das ist", "Klicken Sie", "Die Datei"]  # 6 tokens against 6 + 7 + 5
    assert corpus_score(short, REFS).length_ratio == pytest.approx(6 / 18)


def test_mismatched_lengths_are_rejected():
    with pytest.raises(ValueError):
        corpus_score(["x"], REFS)


def test_paired_bootstrap_finds_a_clear_win_significant():
    refs = REFS * 10
    bad = ["Etwas ganz anderes hier"] * len(refs)
    results, signatures = paired_bootstrap(("unguided", bad), [("guided", refs)], refs, samples=200)
    by_key = {(r.system, r.metric): r for r in results}
    assert by_key[("unguided", "BLEU")].p_value is None
    assert by_key[("guided", "BLEU")].score == pytest.approx(100.0)
    assert by_key[("guided", "BLEU")].p_value < 0.05
    assert "bs:200" in signatures["BLEU"] and "seed:12345" in signatures["BLEU"]


def test_signatures_name_tokenizer_and_version():
    sigs = metric_signatures(REFS, REFS)
    assert "tok:13a" in sigs["bleu"]
    assert "nc:6" in sigs["chrf"]
