"""The fast PyTorch engine against CTranslate2 itself, and the rerank approximation."""

from __future__ import annotations

import numpy as np
import pytest

from tm_guide.decoding.ct2_engine import CT2StepDecoder
from tm_guide.decoding.rerank import rerank_search
from tm_guide.decoding.search import SearchOptions, beam_search, python_beam_search

torch = pytest.importorskip("torch")
from tm_guide.decoding.torch_engine import TorchStepDecoder  # noqa: E402

pytestmark = pytest.mark.torch

from .helpers import TARGETS, int8_gaps, model_inputs, rewards_for, teacher_forced  # noqa: E402

MAX_LENGTH = 16


@pytest.fixture(scope="module")
def torch_peaked(peaked_bundle):
    return TorchStepDecoder(peaked_bundle.path)


@pytest.mark.parametrize("bundle_name", ["tiny_bundle", "peaked_bundle"])
def test_torch_log_probs_equal_score_batch(request, bundle_name, sentences):
    bundle = request.getfixturevalue(bundle_name)
    decoder = TorchStepDecoder(bundle.path)
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    inputs = model_inputs(bundle, sentences[:3])
    targets = [bundle.encode_target(t) for t in TARGETS]
    expected = bundle.translator.score_batch(inputs, targets)
    for source, target, scored in zip(inputs, targets, expected, strict=True):
        mine = teacher_forced(decoder, source, [index[t] for t in target])
        np.testing.assert_allclose(mine, scored.log_probs, atol=2e-4)


@pytest.mark.parametrize("beam", [1, 4])
def test_torch_lambda_zero_reproduces_native_beam_search(
    peaked_bundle, torch_peaked, beam, sentences
):
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences)
    found = beam_search(
        torch_peaked, inputs, SearchOptions(beam_size=beam, max_length=MAX_LENGTH, lam=0)
    )
    native = bundle.translator.translate_batch(
        inputs, beam_size=beam, max_decoding_length=MAX_LENGTH, return_scores=True
    )
    for output, hyps in zip(native, found, strict=True):
        assert [bundle.vocabularies.target[i] for i in hyps[0].token_ids] == output.hypotheses[0]
        assert hyps[0].score == pytest.approx(output.scores[0], abs=1e-3)


def _rewards(bundle, texts, score=0.7):
    return rewards_for(bundle, [bundle.encode_target(text) for text in texts], score)


@pytest.mark.parametrize(("lam", "repeats"), [(0.5, True), (2.0, True), (2.0, False)])
def test_guided_torch_output_equals_guided_ct2_output(
    peaked_bundle, torch_peaked, sentences, lam, repeats
):
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences[:4])
    # Pieces the model finds plausible (its 4th-best outputs), so the reward changes the search.
    alternatives = bundle.translator.translate_batch(
        inputs, beam_size=4, num_hypotheses=4, max_decoding_length=MAX_LENGTH
    )
    rewards = rewards_for(bundle, [o.hypotheses[-1] for o in alternatives])
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=lam, reward_repeats=repeats)
    # the reference engine through the Python search, the fast one through beam_search (the
    # compiled search where it was built)
    exact = python_beam_search(
        CT2StepDecoder(bundle.translator, bundle.vocabularies.target), inputs, options, rewards
    )
    fast = beam_search(torch_peaked, inputs, options, rewards)
    for a, b in zip(exact, fast, strict=True):
        assert a[0].token_ids == b[0].token_ids
        assert a[0].reward == pytest.approx(b[0].reward, abs=1e-5)
        assert a[0].score == pytest.approx(b[0].score, abs=1e-3)
    assert any(h[0].reward > 0 for h in exact)


@pytest.mark.parametrize("quantize", [False, True])
def test_torch_engine_on_int8_bundle_stays_close_to_ct2_int8(
    peaked_int8_bundle, peaked_bundle, sentences, quantize
):
    """Int8 weights run dequantized, or as int8 with activations quantized otherwise than
    CTranslate2 does: close to CTranslate2's int8 log-probabilities, not equal. How close is
    set by CTranslate2 itself: its float32 run of the same checkpoint differs from its int8 run
    by quantization noise (large on this perturbed fixture), and the torch engine must not be
    further from the int8 run than that."""
    decoder = TorchStepDecoder(peaked_int8_bundle.path, quantize=quantize)
    gap, own = int8_gaps(
        peaked_int8_bundle,
        peaked_bundle,
        sentences,
        lambda source, target: teacher_forced(decoder, source, target),
    )
    print(
        f"quantize={quantize} mean |log-prob gap| {gap:.4f}, CTranslate2 float32 vs int8 {own:.4f}"
    )
    assert gap <= own + 0.05


@pytest.mark.parametrize("quantize", [False, True])
def test_scripted_engine_equals_the_plain_functions(peaked_int8_bundle, sentences, quantize):
    """Encoder and step run as TorchScript (the engine's speed depends on it), with the very
    results of the same functions run eagerly, float and int8 alike."""
    from tm_guide.decoding.torch_step import decoder_step, encoder_pass

    bundle = peaked_int8_bundle
    scripted = TorchStepDecoder(bundle.path, quantize=quantize)
    assert isinstance(scripted.model._step, torch.jit.ScriptFunction)
    assert isinstance(scripted.model._encode, torch.jit.ScriptFunction)
    eager = TorchStepDecoder(bundle.path, quantize=quantize)
    eager.model._step = decoder_step
    eager.model._encode = encoder_pass
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    source = model_inputs(bundle, sentences[:1])[0]
    target = [index[t] for t in bundle.encode_target(TARGETS[1])]
    np.testing.assert_array_equal(
        teacher_forced(scripted, source, target), teacher_forced(eager, source, target)
    )


def test_rerank_returns_native_hypotheses_ranked_by_guided_score(peaked_bundle, sentences):
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences[:4])
    rewards = _rewards(bundle, [*TARGETS, "Drucken"][:4])
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=1.0, num_hypotheses=4)
    ranked = rerank_search(bundle.translator, inputs, options, rewards, index)
    native = bundle.translator.translate_batch(
        inputs, beam_size=4, num_hypotheses=4, max_decoding_length=MAX_LENGTH
    )
    for hyps, output, reward in zip(ranked, native, rewards, strict=True):
        assert sorted(h.token_ids for h in hyps) == sorted(
            tuple(index[t] for t in tokens) for tokens in output.hypotheses
        )
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        for h in hyps:
            assert h.reward == pytest.approx(reward.sequence_reward(h.token_ids))
            assert h.score == pytest.approx((h.log_prob + h.reward) / h.length, abs=1e-4)


def test_torch_engine_refuses_a_source_longer_than_its_position_encodings(peaked_bundle):
    from tm_guide.errors import ModelError

    decoder = TorchStepDecoder(peaked_bundle.path)
    limit = decoder.model.encoder.positions.shape[0]
    token = peaked_bundle.vocabularies.source[5]
    decoder.start([[token] * (limit - 1)])  # with the source </s>: exactly the limit
    with pytest.raises(ModelError, match=f"exceeds the model's {limit} position encodings"):
        decoder.start([[token] * (limit + 1)])
