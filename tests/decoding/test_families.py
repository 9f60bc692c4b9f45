"""The model families users bring, each a tiny randomly initialised transformers model with its
family's real configuration flags, converted by `tm-guide model convert`'s code:

- M2M100 (pre-norm, final layer norms, sinusoidal positions, language tokens: the source's first
  and the target's forced first, `__de__`);
- mBART-50 (pre-norm, learned positions, layernorm_embedding, GELU, scaled embeddings, `de_DE`);
- BART (post-norm, learned positions, layernorm_embedding, GELU).
(Marian/OPUS-MT is the shared tiny fixture of every other decoding test.)

For each: at lambda 0 every engine returns what native CTranslate2 returns (language token
included), guided search moves the output to the pieces, and the engines' log-probabilities are
CTranslate2's (float32 exactly; int8 within CTranslate2's own int8 noise). A T5 model's relative
attention is refused by name: test_engine_choice.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.ct2_engine import CT2StepDecoder
from tm_guide.decoding.search import SearchOptions, beam_search
from tm_guide.model import Bundle

from .helpers import rewards_for, teacher_forced

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from model_families import FAMILIES, build_checkpoint, convert  # noqa: E402

from tm_guide.decoding.torch_engine import TorchStepDecoder  # noqa: E402

MAX_LENGTH = 16
SENTENCES = ["Open the file.", "Save the table as text.", "Print the sheet and close it."]


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    """(name, float32 bundle, int8 bundle) of one family."""
    root = tmp_path_factory.mktemp(request.param)
    checkpoint = build_checkpoint(request.param, root / "hf")
    float_dir = convert(checkpoint, root / "float32", "float32")
    int8_dir = convert(checkpoint, root / "int8", "int8")
    return request.param, Bundle.load(float_dir), Bundle.load(int8_dir)


def _inputs(bundle):
    return [bundle.source_input(bundle.encode_source(s)) for s in SENTENCES]


def _native(bundle, beam=4):
    prefix = bundle.target_prefix()
    return bundle.translator.translate_batch(
        _inputs(bundle),
        beam_size=beam,
        max_decoding_length=MAX_LENGTH,
        return_scores=True,
        target_prefix=[prefix] * len(SENTENCES) if prefix else None,
    )


def _search(bundle, decoder, options, rewards=None):
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    prefix = [index[t] for t in bundle.target_prefix()]
    return beam_search(decoder, _inputs(bundle), options, rewards, prefixes=[prefix] * 3)


def _engines(bundle, precision):
    engines = {
        "ct2": CT2StepDecoder(bundle.translator, bundle.vocabularies.target),
        "torch": TorchStepDecoder(bundle.path),
    }
    if precision == "int8" and compiled.available():
        from tm_guide.decoding.fused_engine import FusedDecoder

        engines["fused"] = FusedDecoder(bundle.path)
    return engines


def test_the_card_records_a_multilingual_models_language_tokens(family):
    name, float_bundle, _ = family
    tokens = float_bundle.card.language_tokens
    if name == "m2m100":
        assert tokens["__de__"] == "de" and tokens["__en__"] == "en"
    elif name == "mbart50":
        assert tokens["de_DE"] == "de-DE" and tokens["en_XX"] == "en-XX"
    else:
        assert tokens == {}
    first = float_bundle.source_input(float_bundle.encode_source("Open the file."))[0]
    expected = {"m2m100": ("__en__", "__de__"), "mbart50": ("en_XX", "de_DE")}.get(name)
    if expected:
        assert first == expected[0] and float_bundle.target_prefix() == [expected[1]]
    else:
        assert first not in tokens and float_bundle.target_prefix() == []


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_every_exact_engine_at_lambda_zero_is_native_ctranslate2(family, precision):
    """float32: the torch engine and CTranslate2's step engine; int8: the fused engine, which
    quantizes activations as CTranslate2 does (the torch engine's int8 is close, not equal: see
    the log-probability test)."""
    name, float_bundle, int8_bundle = family
    bundle = float_bundle if precision == "float32" else int8_bundle
    native = _native(bundle)
    lengths = {len(o.hypotheses[0]) for o in native}
    assert any(n < MAX_LENGTH for n in lengths), "the fixture must end hypotheses with </s>"
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=0)
    engines = _engines(bundle, precision)
    if precision == "int8":
        engines.pop("torch")
    for engine, decoder in engines.items():
        for output, hyps in zip(native, _search(bundle, decoder, options), strict=True):
            tokens = [bundle.vocabularies.target[i] for i in hyps[0].token_ids]
            assert tokens == output.hypotheses[0], (name, precision, engine)
            # int8: the fused engine's int8 products are CTranslate2's; the rounding of a
            # requantized activation can differ (test_fused holds the demo model to 0.02 too)
            tolerance = 2e-3 if precision == "float32" else 0.02
            assert hyps[0].score == pytest.approx(output.scores[0], abs=tolerance), (name, engine)


def test_guided_search_moves_every_engines_output_to_the_pieces(family):
    name, _, bundle = family
    vocab = bundle.vocabularies.target
    pieces = [bundle.encode_target("Datei speichern Tabelle") for _ in SENTENCES]
    rewards = rewards_for(bundle, pieces, score=0.9)
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=8.0, reward_repeats=False)
    unguided = _native(bundle)
    for engine, decoder in _engines(bundle, "int8").items():
        found = _search(bundle, decoder, options, rewards)
        for piece, hyps, before in zip(pieces, found, unguided, strict=True):
            after = [vocab[i] for i in hyps[0].token_ids]
            assert hyps[0].reward > 0, (name, engine)
            assert sum(t in piece for t in after) > sum(t in piece for t in before.hypotheses[0])


def test_engine_log_probs_are_ctranslate2s_score_batch(family):
    """float32: to float32 rounding; int8: no farther from CTranslate2's int8 scores than
    CTranslate2's own float32 run is (the scale of quantization noise), plus 0.05."""
    name, float_bundle, int8_bundle = family
    targets = [
        float_bundle.target_prefix() + float_bundle.encode_target(t)
        for t in ("Datei speichern.", "Öffnen Sie die Tabelle.", "Hilfe")
    ]
    inputs = _inputs(float_bundle)
    index = {t: i for i, t in enumerate(float_bundle.vocabularies.target)}
    exact = float_bundle.translator.score_batch(inputs, targets)
    quantized = int8_bundle.translator.score_batch(inputs, targets)
    float_torch = TorchStepDecoder(float_bundle.path)
    int8_engines = _engines(int8_bundle, "int8")
    int8_engines.pop("ct2")
    gaps: dict[str, list[float]] = {engine: [] for engine in int8_engines}
    noise = []
    for source, target, floats, ints in zip(inputs, targets, exact, quantized, strict=True):
        ids = [index[t] for t in target]
        mine = teacher_forced(float_torch, source, ids)
        assert np.abs(mine - np.array(floats.log_probs)).max() < 1e-3, name
        noise.append(np.abs(np.array(floats.log_probs) - np.array(ints.log_probs)).mean())
        for engine, decoder in int8_engines.items():
            got = teacher_forced(decoder, source, ids)
            gaps[engine].append(np.abs(got - np.array(ints.log_probs)).mean())
    for engine, found in gaps.items():
        assert np.mean(found) <= np.mean(noise) + 0.05, (name, engine, found, noise)
