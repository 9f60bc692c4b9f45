"""GuidedTranslator end to end: a real SQLite store, aligned pieces, both exact engines."""

from __future__ import annotations

import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
from tm_guide.decoding.search import SearchOptions
from tm_guide.errors import InvalidInput

from .helpers import aligned_memory

TM = [
    ("Open the file menu.", "Öffnen das Menü Datei."),
    ("Save the document.", "Speichern das Dokument."),
    ("Insert a table.", "Einfügen Tabelle."),
    ("Print the page.", "Drucken die Seite."),
]


@pytest.fixture(scope="module")
def store_and_memory(tmp_path_factory, tiny_bundle):  # type: ignore[no-untyped-def]
    with aligned_memory(tmp_path_factory.mktemp("decoding-tm"), tiny_bundle, "ui", TM) as found:
        yield found


def _options(memory, engine: str, lam: float, return_unguided: bool = False):  # type: ignore[no-untyped-def]
    return TranslateOptions(
        search=SearchOptions(max_length=20, beam_size=4, lam=lam),
        engine=EngineOptions(engine=engine),
        memory_ids=(memory.id,),
        return_unguided=return_unguided,
    )


def _skip_unless_built(engine: str) -> None:
    if engine == "torch":
        pytest.importorskip("torch")
    if engine == "fused" and not compiled.available():
        pytest.skip("the fused engine was not built (no C++ compiler)")


@pytest.mark.parametrize("engine", ["ct2", "torch", "fused"])
def test_pieces_from_the_memory_appear_with_their_provenance(store_and_memory, tiny_bundle, engine):  # type: ignore[no-untyped-def]
    _skip_unless_built(engine)
    store, memory = store_and_memory
    translator = GuidedTranslator(tiny_bundle, store)
    [result] = translator.translate(
        ["Save the document."], _options(memory, engine=engine, lam=5.0, return_unguided=True)
    )
    assert result.guided and result.engine == engine
    assert result.reward > 0
    assert result.unguided_translation is not None
    assert result.translation != result.unguided_translation
    [saved] = [s for s in store.iter_segments(memory) if s.source == "Save the document."]
    assert result.matched_pieces
    assert all(saved.id in p.segment_ids for p in result.matched_pieces)
    assert set(result.timings) >= {"retrieval", "pieces", "decoding", "total"}
    assert result.best_match_similarity == pytest.approx(1.0)


def test_lambda_zero_and_sentences_without_pieces_use_native_search(store_and_memory, tiny_bundle):  # type: ignore[no-untyped-def]
    store, memory = store_and_memory
    translator = GuidedTranslator(tiny_bundle, store)
    sentences = ["Save the document.", "Chart style paragraph font column."]
    results = translator.translate(sentences, _options(memory, engine="ct2", lam=0.0))
    native = tiny_bundle.translator.translate_batch(
        [tiny_bundle.source_input(tiny_bundle.encode_source(s)) for s in sentences],
        beam_size=4,
        max_decoding_length=20,
    )
    for result, output in zip(results, native, strict=True):
        assert not result.guided and result.engine == "native"
        assert result.tokens == output.hypotheses[0]
        assert result.reward == 0.0


def test_an_engine_ranking_on_its_device_translates_unguided_sentences_itself(  # type: ignore[no-untyped-def]
    store_and_memory, tiny_bundle
):
    """Where the torch engine ranks on its device (a GPU; here the CPU run the same way), the
    sentences without pieces and the unguided alternatives are its own search at lambda 0,
    which is CTranslate2's native search rule for rule: the same translations."""
    pytest.importorskip("torch")
    store, memory = store_and_memory
    translator = GuidedTranslator(tiny_bundle, store)
    sentences = ["Save the document.", "Chart style paragraph font column."]
    on_device = TranslateOptions(
        search=SearchOptions(max_length=20, beam_size=4, lam=1.0),
        engine=EngineOptions(engine="torch", rank_on_device=True),
        memory_ids=(memory.id,),
        return_unguided=True,
    )
    assert translator.step_decoder("torch", on_device).ranks_on_device  # type: ignore[union-attr]
    results = translator.translate(sentences, on_device)
    native = tiny_bundle.translator.translate_batch(
        [tiny_bundle.source_input(tiny_bundle.encode_source(s)) for s in sentences],
        beam_size=4,
        max_decoding_length=20,
    )
    assert not results[1].guided
    for sentence, result, output in zip(sentences, results, native, strict=True):
        text = tiny_bundle.decode_target(output.hypotheses[0])  # as a translator gets it
        assert result.unguided_translation == tiny_bundle.set_right(sentence, text)[-1].text
    assert results[1].tokens == native[1].hypotheses[0]


def test_auto_engine_runs_a_float_model_in_its_own_precision(store_and_memory, tiny_bundle):  # type: ignore[no-untyped-def]
    """The fused engine computes in int8: "auto" gives a float32 model to an engine that does
    not (torch where it is installed), and says so once."""
    store, memory = store_and_memory
    translator = GuidedTranslator(tiny_bundle, store)
    options = _options(memory, engine="auto", lam=5.0)
    choice = translator.engine_choice("cpu")
    assert choice.precision == "float32" and choice.engine in ("torch", "ct2")
    if compiled.available():
        assert "would not be exact" in dict(choice.passed_over)["fused"]
    assert translator.engine_name(options) == choice.engine
    [result] = translator.translate(["Save the document."], options)
    assert result.guided and result.engine == choice.engine and result.reward > 0
    assert translator.engine_choice("cpu") is choice  # chosen once


def test_rerank_engine_returns_a_translation(store_and_memory, tiny_bundle):  # type: ignore[no-untyped-def]
    store, memory = store_and_memory
    translator = GuidedTranslator(tiny_bundle, store)
    [result] = translator.translate(["Print the page."], _options(memory, engine="rerank", lam=1.0))
    assert result.guided and result.engine == "rerank"
    # its tokens' text as a translator gets it (the memory's targets write no such doubled word)
    text = tiny_bundle.decode_target(result.tokens)
    assert (
        result.tokens
        and result.translation == tiny_bundle.set_right("Print the page.", text)[-1].text
    )


def test_bad_options_are_refused_with_the_field_named():
    with pytest.raises(InvalidInput) as error:
        EngineOptions(engine="fast")
    assert error.value.field == "engine"
    with pytest.raises(InvalidInput) as error:
        TranslateOptions(search=SearchOptions(beam_size=0))
    assert error.value.field == "beam_size"


@pytest.mark.parametrize("engine", ["ct2", "fused", "native"])
def test_max_length_ratio_caps_output_at_the_source_length(store_and_memory, tiny_bundle, engine):  # type: ignore[no-untyped-def]
    _skip_unless_built(engine)
    store, memory = store_and_memory
    translator = GuidedTranslator(tiny_bundle, store)
    sentence = "Save the document."
    lam = 0.0 if engine == "native" else 5.0
    options = TranslateOptions(
        search=SearchOptions(lam=lam, beam_size=2, max_length=200),
        engine=EngineOptions(engine="ct2" if engine == "native" else engine),
        memory_ids=(memory.id,),
        max_length_ratio=0.5,
        max_length_margin=1,
    )
    source = tiny_bundle.source_input(tiny_bundle.encode_source(sentence))
    cap = -(-len(source) // 2) + 1  # ceil(0.5 * length) + margin
    [result] = translator.translate([sentence], options)
    assert result.guided == (engine != "native")
    assert 1 <= len(result.tokens) <= cap
    if engine == "native":  # the cap is CTranslate2's max_decoding_length, nothing else
        [output] = tiny_bundle.translator.translate_batch(
            [source], beam_size=2, max_decoding_length=cap
        )
        assert result.tokens == output.hypotheses[0]
