"""The engine registry (tm_guide.decoding.engines): "auto" never picks an engine measured slower
than another that runs the model exactly here, says why, and reads a refused model only once."""

from __future__ import annotations

import logging

import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.engines import choose_engine, stored_precision
from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
from tm_guide.decoding.search import SearchOptions
from tm_guide.errors import ModelError

needs_fused = pytest.mark.skipif(not compiled.available(), reason="fused engine not built")


def test_stored_precision_names_what_the_engines_compute_in():
    assert [stored_precision(q) for q in ("int8", "int8_float32", "int8_float16")] == ["int8"] * 3
    assert [stored_precision(q) for q in ("float32", "float16", "bfloat16", "")] == ["float32"] * 4


@needs_fused
def test_an_int8_model_runs_on_the_fused_engine_on_the_cpus_fastest_kernel(peaked_int8_bundle):
    choice = choose_engine(peaked_int8_bundle.path, "int8", "cpu")
    assert (choice.engine, choice.precision, choice.device) == ("fused", "int8", "cpu")
    assert choice.kernel == compiled.kernels()[0] and choice.passed_over == ()
    assert choice.kernel in choice.describe()
    assert choice.to_dict()["engine"] == "fused"


@needs_fused
def test_the_portable_loops_are_never_chosen(peaked_int8_bundle):
    """Measured 14x native CTranslate2 per sentence, slower than torch and ct2: on a CPU with no
    vector path "auto" passes over the fused engine (it still runs when named)."""
    compiled.set_kernel("portable")
    try:
        choice = choose_engine(peaked_int8_bundle.path, "int8", "cpu")
    finally:
        compiled.set_kernel(compiled.kernels()[0])
    assert choice.engine in ("torch", "ct2")
    assert "vector kernel paths" in dict(choice.passed_over)["fused"]


def test_a_float_model_is_not_given_to_the_int8_engine(peaked_bundle):
    choice = choose_engine(peaked_bundle.path, "float32", "cpu")
    assert choice.engine in ("torch", "ct2") and choice.precision == "float32"
    if compiled.available():
        assert "would not be exact" in dict(choice.passed_over)["fused"]


def test_a_t5_model_goes_to_ct2_with_the_feature_named(tiny_t5_bundle, caplog):
    """T5's relative attention is in neither re-implementation: the choice names it and says
    which engine runs instead, and the model translates (CTranslate2 decodes each step)."""
    choice = choose_engine(tiny_t5_bundle.path, tiny_t5_bundle.card.quantization, "cpu")
    assert choice.engine == "ct2"
    refused = dict(choice.passed_over)
    assert "relative_attention_bias" in refused.get("torch", "relative_attention_bias")
    if compiled.available():
        assert "relative_attention_bias" in refused["fused"]
    translator = GuidedTranslator(tiny_t5_bundle)
    with caplog.at_level(logging.INFO, logger="tm_guide.decoding.guided"):
        [result] = translator.translate(
            ["Save the document."], TranslateOptions(search=SearchOptions(lam=1.0))
        )
    assert translator.engine_name(TranslateOptions()) == "ct2" and result.tokens
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "guided decoding engine: ct2" in logged and "relative_attention_bias" in logged


@needs_fused
def test_the_choice_is_made_and_logged_once_per_device(peaked_int8_bundle, caplog):
    translator = GuidedTranslator(peaked_int8_bundle)
    with caplog.at_level(logging.INFO, logger="tm_guide.decoding.guided"):
        names = [
            translator.engine_name(TranslateOptions(search=SearchOptions(lam=0))) for _ in range(3)
        ]
    assert names == ["fused"] * 3
    assert [r.getMessage() for r in caplog.records].count(
        f"guided decoding engine: {translator.engine_choice().describe()}"
    ) == 1


@needs_fused
def test_an_engine_refusal_is_kept(tiny_t5_bundle, tmp_path):
    """A named engine that cannot run the model fails at once on later requests, without
    reading model.bin again (here it is gone by then, and the first refusal still answers)."""
    import shutil

    copy = tmp_path / "t5"
    shutil.copytree(tiny_t5_bundle.path, copy)
    translator = GuidedTranslator(type(tiny_t5_bundle).load(copy, device="cpu", intra_threads=1))
    options = TranslateOptions(engine=EngineOptions(engine="fused"))
    with pytest.raises(ModelError, match="relative_attention_bias") as first:
        translator.step_decoder("fused", options)
    (copy / "model.bin").unlink()
    with pytest.raises(ModelError, match="relative_attention_bias") as second:
        translator.step_decoder("fused", options)
    assert second.value is first.value


def test_every_engine_is_a_registry_entry_and_only_the_registry_names_one():
    """The registry is the one place an engine is named: a module that needs to know what an
    engine does asks its EngineSpec. The parsers of the CLI and of the HTTP options may show
    names to users; no other module spells one."""
    import re
    from pathlib import Path

    from tm_guide.decoding import engines

    assert set(engines.ENGINES) == {*engines.REGISTRY, engines.AUTO}
    names = "|".join(engines.REGISTRY)
    quoted = re.compile(rf"[\"']({names})[\"']")
    root = Path(engines.__file__).resolve().parents[1]
    # the package versions a report records name PyTorch's distribution, not the engine
    allowed = {root / "decoding" / "engines.py", root / "evaluation" / "signature.py"}
    spelled = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path not in allowed
        and "cli" not in path.relative_to(root).parts
        and quoted.search(path.read_text(encoding="utf-8"))
    ]
    assert spelled == []


def test_an_engine_without_a_decoder_of_its_own_says_so_and_names_its_stepper():
    from tm_guide.decoding.engines import engine_spec, make_decoder
    from tm_guide.errors import ModelError

    rerank = engine_spec("rerank")
    assert rerank.reranks and not rerank.exact and rerank.stepper == "ct2"
    with pytest.raises(ModelError, match="no step decoder"):
        make_decoder("rerank", None)  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="is not one of"):
        engine_spec("gpu-magic")
    assert engine_spec("fused").resolve_device("auto") == "cpu"


def test_a_named_engine_is_described_as_a_choice_is():
    from tm_guide.decoding import compiled
    from tm_guide.decoding.engines import named_choice

    ct2 = named_choice("ct2", "int8_float32")
    assert (ct2.engine, ct2.precision, ct2.kernel) == ("ct2", "int8", None)
    assert named_choice("torch", "float32").precision == "float32"
    if compiled.available():
        fused = named_choice("fused", "float32")
        assert fused.precision == "int8" and fused.kernel == compiled.kernel()
