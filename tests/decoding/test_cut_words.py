"""A word the search cuts short is served whole where the search's own objective prefers it.

The input, its pieces and its repair template are those Debian's manuals give it
(data/cut_word.json): the pieces of another pair spell "Sicherheit s maß nahme n", the model
finds "nahme" after "maß" so unlikely that a beam of 5 prunes it before the reward of the
word's last piece comes, and the search writes "Sicherheitsmaß".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.guidance import Guidance
from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
from tm_guide.pieces.builder import FuzzyMatch, TranslationPieces
from tm_guide.pieces.repair import MatchTemplate

CASE = json.loads((Path(__file__).parent / "data" / "cut_word.json").read_text("utf-8"))
CUT = "4.6.3. Zusätzliche Sicherheitsmaß für das Internet"
WHOLE = "4.6.3. Zusätzliche Sicherheitsmaßnahmen für das Internet"


@dataclass(frozen=True)
class _Segment:
    """What the translator reads of a matched TM pair."""

    id: int
    target: str


def _pieces(demo, without: str | None = None) -> TranslationPieces:  # type: ignore[no-untyped-def]
    """The case's pieces; `without`: less every piece that holds this token."""
    ngrams = {tuple(g["piece"]): g["score"] for g in CASE["ngrams"]}
    limits = {tuple(g["piece"]): g["limit"] for g in CASE["ngrams"]}
    if without is not None:
        ngrams = {g: s for g, s in ngrams.items() if without not in g}
    matches = [
        FuzzyMatch(_Segment(m["id"], m["target"]), m["similarity"], 0, 0.0, 0)
        for m in CASE["matches"]
    ]
    template = MatchTemplate(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in CASE["template"].items()}
    )
    tokens = demo.encode_source(CASE["source"])
    return TranslationPieces(tokens, frozenset(), ngrams, {}, limits, matches, {}, template)


def _options(demo, engine: str, complete: bool) -> TranslateOptions:  # type: ignore[no-untyped-def]
    options = Guidance.resolve(demo.card).apply(TranslateOptions())
    return replace(options, engine=EngineOptions(engine=engine), complete_cut_words=complete)


@pytest.mark.parametrize("engine", ["fused", "ct2"])
def test_a_cut_word_is_served_whole(demo, engine):  # type: ignore[no-untyped-def]
    if engine == "fused" and not compiled.available():
        pytest.skip("the fused engine was not built (no C++ compiler)")
    translator = GuidedTranslator(demo, None)
    pieces = [_pieces(demo)]
    cut = translator.translate([CASE["source"]], _options(demo, engine, False), pieces)[0]
    whole = translator.translate([CASE["source"]], _options(demo, engine, True), pieces)[0]
    assert cut.translation == CUT
    assert whole.translation == WHOLE
    # served because the search's objective, (log P + reward) / length, is higher
    assert whole.log_prob < cut.log_prob and whole.reward > cut.reward
    cut_score = (cut.log_prob + cut.reward) / (len(cut.tokens) + 1)
    assert (whole.log_prob + whole.reward) / (len(whole.tokens) + 1) > cut_score
    assert whole.repaired_segment == cut.repaired_segment == CASE["template"]["segment_id"]
    assert whole.offsets is not None and whole.offsets[-1] == len(WHOLE)


def test_a_completion_the_objective_scores_lower_is_not_served(demo):  # type: ignore[no-untyped-def]
    """Without the pieces that hold "nahme", the whole word earns no more reward than the cut
    one and costs log-probability: the search's output stays."""
    translator = GuidedTranslator(demo, None)
    pieces = [_pieces(demo, without="nahme")]
    outputs = [
        translator.translate([CASE["source"]], _options(demo, "ct2", complete), pieces)[0]
        for complete in (False, True)
    ]
    assert outputs[0].translation == outputs[1].translation == CUT
