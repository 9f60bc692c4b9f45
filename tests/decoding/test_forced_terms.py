"""Glossary terms forced in by a template of the terms alone (tm_guide.pieces.terms)."""

from __future__ import annotations

import pytest

from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
from tm_guide.decoding.search import SearchOptions
from tm_guide.pieces.terms import forced_terms, with_terms

TEXT = "could not set compression worker count to %d: %s"


def _options(engine: str) -> TranslateOptions:
    return TranslateOptions(
        search=SearchOptions(beam_size=5, lam=6.0),
        engine=EngineOptions(engine=engine),
        max_length_ratio=2.0,
    )


def test_the_template_holds_each_term_with_room_around_it(demo) -> None:
    tokens = demo.encode_source(TEXT)
    terms = [demo.encode_target("Anzahl"), demo.encode_target("Komprimierungsprozess")]
    pieces = forced_terms(None, tokens, terms, 1.0, room=12, word_rules=True)
    template = pieces.template
    assert template is not None and template.segment_id is None and template.word_rules
    assert template.tokens == tuple(terms[0]) + tuple(terms[1])
    # a gap before each term, none inside one, and one after the last
    inner = [0] * (len(terms[1]) - 1)
    assert template.gaps == (12, *[0] * (len(terms[0]) - 1), 12, *inner, 12)
    assert pieces.ngrams == with_terms(None, tokens, terms, 1.0).ngrams


@pytest.mark.parametrize("engine", ["fused", "torch"])
def test_the_terms_are_written_once_where_the_model_puts_them(demo, engine) -> None:
    """The model alone writes neither term; forced, it writes each once, with the sentence's
    placeholders, where a search only rewarded for "Akte" writes it over and over."""
    if engine == "torch":
        pytest.importorskip("torch")
    translator = GuidedTranslator(demo, None)
    options = _options(engine)
    for text, term in ((TEXT, "Anzahl"), ("Move the folder to the file.", "Akte")):
        tokens = demo.encode_source(text)
        wanted = [demo.encode_target(term)]
        plain = translator.translate([text], options)[0]
        room = options.output_cap(len(tokens))
        pieces = forced_terms(None, tokens, wanted, 1.0, room)
        forced = translator.translate([text], options, [pieces])[0]
        assert term not in plain.translation, plain.translation
        assert forced.translation.count(term) == 1, forced.translation
        assert all(code in forced.translation for code in ("%d", "%s") if code in text)
        # no TM pair was repaired: the template was the glossary's
        assert forced.repaired_segment is None and forced.guided
    rewarded = with_terms(None, demo.encode_source(text), wanted, 1.0)
    assert translator.translate([text], options, [rewarded])[0].translation.count(term) > 1
