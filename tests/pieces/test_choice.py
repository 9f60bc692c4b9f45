"""The choice among a close match's candidates: its spec, its rule and its refusals."""

from __future__ import annotations

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.pieces.choice import Candidate, ChoiceOptions, choose

CANDIDATES = [
    Candidate("match", "Löscht die Zeile.", -2.0),
    Candidate("repaired", "Kopiert die Zeile.", -1.5),
    Candidate("guided", "Kopiert die Spalte.", -0.9),
    Candidate("unguided", "Kopieren Sie die Zeile.", -0.4),
]


def test_the_best_score_plus_its_bias_is_served():
    assert choose(CANDIDATES, ChoiceOptions(0.5)).chosen.kind == "unguided"
    assert choose(CANDIDATES, ChoiceOptions(0.5, guided=0.6)).chosen.kind == "guided"
    assert choose(CANDIDATES, ChoiceOptions(0.5, 0.0, 1.2, 0.6)).chosen.kind == "repaired"
    assert choose(CANDIDATES, ChoiceOptions(0.5, 2.0, 1.2, 0.6)).chosen.kind == "match"


def test_equal_biased_scores_serve_the_tm_candidate_first():
    tied = [Candidate("unguided", "b", -1.0), Candidate("repaired", "a", -1.5)]
    assert choose(tied, ChoiceOptions(0.5, repaired=0.5)).chosen.kind == "repaired"


def test_the_choice_says_what_it_compared():
    options = ChoiceOptions(0.5, 2.0, 1.2, 0.6)
    report = choose(CANDIDATES, options).to_dict()
    assert report["kind"] == "match"
    assert report["scores"] == {"match": -2.0, "repaired": -1.5, "guided": -0.9, "unguided": -0.4}
    assert report["biases"] == {"match": 2.0, "repaired": 1.2, "guided": 0.6, "unguided": 0.0}


@pytest.mark.parametrize(
    ("spec", "options"),
    [
        ("off", ChoiceOptions()),
        ("0.5:0:8:1", ChoiceOptions(0.5, 0.0, 8.0, 1.0)),
        (" 0.7:1.5:2:-1 ", ChoiceOptions(0.7, 1.5, 2.0, -1.0)),
    ],
)
def test_specs_parse_and_print_back(spec, options):
    assert ChoiceOptions.parse(spec) == options
    assert ChoiceOptions.parse(options.spec) == options


@pytest.mark.parametrize(
    "spec", ["", "0.5", "0.5:1:2", "1.5:0:0:0", "0:0:0:0", "0.5:x:0:0", "0.5:nan:0:0"]
)
def test_a_bad_spec_is_refused_with_its_field(spec):
    with pytest.raises(InvalidInput) as refused:
        ChoiceOptions.parse(spec)
    assert refused.value.field == "choice"


def test_the_threshold_applies_from_its_similarity():
    options = ChoiceOptions(0.5)
    assert options.applies(0.5) and options.applies(0.9)
    assert not options.applies(0.49) and not options.applies(None)
    assert not ChoiceOptions().applies(1.0)


def test_nothing_to_choose_from_is_refused():
    with pytest.raises(InvalidInput):
        choose([], ChoiceOptions(0.5))
