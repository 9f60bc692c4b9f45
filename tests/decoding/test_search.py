"""The guided beam search: CTranslate2's own search at lambda=0, the reward inside the search."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tm_guide.decoding.ct2_engine import CT2StepDecoder
from tm_guide.decoding.rewards import PieceReward
from tm_guide.decoding.search import SearchOptions, beam_search, python_beam_search
from tm_guide.errors import InvalidInput

MAX_LENGTH = 16

# beam_search runs the compiled search where it was built; python_beam_search is the reference
# and the fallback. Both must keep the rules below.
SEARCHES = pytest.mark.parametrize(
    "search", [beam_search, python_beam_search], ids=["beam_search", "python"]
)


def _inputs(bundle, sentences):
    return [bundle.source_input(bundle.encode_source(s)) for s in sentences]


def _native(bundle, inputs, beam, max_length=MAX_LENGTH):
    outputs = bundle.translator.translate_batch(
        inputs, beam_size=beam, max_decoding_length=max_length, return_scores=True
    )
    return [(o.hypotheses[0], o.scores[0]) for o in outputs]


def _tokens(bundle, hypothesis):
    return [bundle.vocabularies.target[i] for i in hypothesis.token_ids]


@SEARCHES
@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("bundle_name", ["tiny_bundle", "peaked_bundle"])
def test_lambda_zero_reproduces_native_beam_search(request, bundle_name, beam, sentences, search):
    bundle = request.getfixturevalue(bundle_name)
    inputs = _inputs(bundle, sentences)
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    found = search(decoder, inputs, SearchOptions(beam_size=beam, max_length=MAX_LENGTH, lam=0))
    for (tokens, score), hyps in zip(_native(bundle, inputs, beam), found, strict=True):
        assert _tokens(bundle, hyps[0]) == tokens
        assert hyps[0].score == pytest.approx(score, abs=1e-4)
        assert hyps[0].reward == 0.0


@SEARCHES
@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("bundle_name", ["tiny_bundle", "peaked_bundle"])
def test_a_target_prefix_is_forced_as_translate_batch_forces_it(
    request, bundle_name, beam, sentences, search
):
    """A multilingual model's language token is translate_batch's target_prefix: forced, not
    scored, kept in the output and counted in its length. Prefixes of 0, 1 and 2 tokens share
    the batch (one of them </s>, which must not close anything while forced)."""
    bundle = request.getfixturevalue(bundle_name)
    inputs = _inputs(bundle, sentences)
    vocab = bundle.vocabularies.target
    shapes = [[vocab[9]], [vocab[10], bundle.eos_token], []]
    prefixes = [shapes[i % len(shapes)] for i in range(len(inputs))]
    native = bundle.translator.translate_batch(
        inputs,
        beam_size=beam,
        max_decoding_length=MAX_LENGTH,
        return_scores=True,
        target_prefix=prefixes,
    )
    decoder = CT2StepDecoder(bundle.translator, vocab)
    index = {t: i for i, t in enumerate(vocab)}
    found = search(
        decoder,
        inputs,
        SearchOptions(beam_size=beam, max_length=MAX_LENGTH, lam=0),
        prefixes=[[index[t] for t in prefix] for prefix in prefixes],
    )
    for prefix, expected, hyps in zip(prefixes, native, found, strict=True):
        assert _tokens(bundle, hyps[0]) == expected.hypotheses[0]
        assert _tokens(bundle, hyps[0])[: len(prefix)] == prefix
        assert hyps[0].score == pytest.approx(expected.scores[0], abs=1e-4)


def test_peaked_fixture_ends_hypotheses_at_varied_lengths(peaked_bundle, sentences):
    """Guards the fixture itself: without </s> choices the EOS logic would go untested."""
    lengths = {len(t) for t, _ in _native(peaked_bundle, _inputs(peaked_bundle, sentences), 4)}
    assert any(n < MAX_LENGTH for n in lengths)


def _synthetic_pieces(bundle, text, score=0.8):
    tokens = bundle.encode_target(text)
    ngrams = {}
    for start in range(len(tokens)):
        for n in range(1, 5):
            if start + n <= len(tokens):
                ngrams[tuple(tokens[start : start + n])] = score
    return tokens, ngrams


def _contains(seq, sub):
    return any(seq[i : i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


def _save_the_document(bundle):
    """An English sentence, the pieces of one German rendering of it, and the exact engine."""
    inputs = _inputs(bundle, ["Open the file and save the document."])
    piece_tokens, ngrams = _synthetic_pieces(bundle, "Datei speichern Dokument")
    reward = PieceReward.from_tokens(
        ngrams, {t: i for i, t in enumerate(bundle.vocabularies.target)}
    )
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    return inputs, piece_tokens, ngrams, reward, decoder


@SEARCHES
def test_large_lambda_puts_the_pieces_into_the_output(tiny_bundle, search):
    bundle = tiny_bundle
    inputs, piece_tokens, ngrams, reward, decoder = _save_the_document(bundle)
    plain = search(decoder, inputs, SearchOptions(beam_size=4, max_length=24, lam=0), [reward])
    guided = search(decoder, inputs, SearchOptions(beam_size=4, max_length=24, lam=5), [reward])
    assert not _contains(_tokens(bundle, plain[0][0]), piece_tokens)
    assert _contains(_tokens(bundle, guided[0][0]), piece_tokens)
    assert guided[0][0].reward > 0


@SEARCHES
def test_reward_and_model_score_are_reported_apart(peaked_bundle, search):
    bundle = peaked_bundle
    inputs = _inputs(bundle, ["Select a table cell, insert text and choose the font."])
    _, ngrams = _synthetic_pieces(bundle, "Tabelle Zelle Text einfügen", score=0.6)
    reward = PieceReward.from_tokens(
        ngrams, {t: i for i, t in enumerate(bundle.vocabularies.target)}
    )
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    # min_length=0: no </s> masking, so the log-probabilities are score_batch's.
    best = search(
        decoder, inputs, SearchOptions(beam_size=3, max_length=20, min_length=0, lam=1.5), [reward]
    )[0][0]
    tokens = _tokens(bundle, best)
    # The reward is lambda * the sum of D_X along the output, as the search added it.
    assert best.reward == pytest.approx(1.5 * reward.sequence_reward(best.token_ids), rel=1e-5)
    # The model score is the model's own log-probability of that output, the reward left out.
    scored = bundle.translator.score_batch(inputs, [tokens])[0].log_probs
    counted = scored if len(tokens) < 20 else scored[:-1]  # a cut output has no </s>
    assert best.log_prob == pytest.approx(float(np.sum(counted)), abs=1e-3)
    assert best.score == pytest.approx((best.log_prob + best.reward) / best.length, abs=1e-4)


def test_piece_reward_sums_all_orders_of_eq_10():
    reward = PieceReward({(5,): 0.5, (4, 5): 0.25, (3, 4, 5): 0.125, (9,): 1.0})
    assert reward.token_reward([3, 4], 5) == pytest.approx(0.875)
    assert reward.token_reward([7, 4], 5) == pytest.approx(0.75)
    assert reward.token_reward([], 5) == pytest.approx(0.5)
    assert reward.token_reward([3, 4], 8) == 0.0
    rows, cols, vals = reward.step_bonus([[3, 4], [8]])
    bonus = {(int(r), int(c)): 0.0 for r, c in zip(rows, cols, strict=True)}
    for r, c, v in zip(rows, cols, vals, strict=True):
        bonus[(int(r), int(c))] += float(v)
    assert bonus == {(0, 5): pytest.approx(0.875), (0, 9): 1.0, (1, 5): 0.5, (1, 9): 1.0}
    assert reward.sequence_reward([3, 4, 5, 9]) == pytest.approx(0.875 + 1.0)


def test_pieces_with_tokens_outside_the_vocabulary_are_dropped():
    reward = PieceReward.from_tokens(
        {("a", "b"): 1.0, ("a", "zz"): 1.0, ("b",): 0.5}, {"a": 0, "b": 1}
    )
    assert reward.ngrams == {(0, 1): 1.0, (1,): 0.5}


@pytest.mark.parametrize("vocab", [997, 1024, 3001])
@pytest.mark.parametrize("rows_per", [1, 5])
def test_grouped_candidate_selection_equals_a_full_sort(vocab, rows_per):
    from tm_guide.decoding.search import top_candidates

    rng = np.random.default_rng(vocab + rows_per)
    groups, k = 3, 10
    scores = rng.normal(size=(groups * rows_per, vocab)).astype(np.float32)
    scores[:, 0] = -np.inf  # a masked token
    scores[0, 5] += 9.0  # one row far ahead of the others, as after a large reward
    cum = rng.normal(size=groups * rows_per).astype(np.float32)
    flat, totals = top_candidates(scores, cum, groups, k, group_size=8)
    full = (cum[:, None] + scores).reshape(groups, rows_per * vocab)
    expected = np.argsort(-full, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(flat, expected)
    np.testing.assert_array_equal(totals, np.take_along_axis(full, expected, axis=1))


def test_dense_step_rewards_equal_eq_10_for_every_rewarded_token():
    reward = PieceReward({(5,): 0.5, (4, 5): 0.25, (3, 4, 5): 0.125, (9,): 1.0, (3, 7): 0.3})
    histories = [[3, 4], [8], [1, 3], [], [2, 3, 4]]
    dense = reward.step_dense(histories)
    assert dense.shape == (len(histories), len(reward.rewarded_ids))
    for row, history in enumerate(histories):
        for col, token in enumerate(reward.rewarded_ids):
            assert dense[row, col] == pytest.approx(reward.token_reward(history, int(token)))


def test_pieces_count_once_per_hypothesis_when_repeats_are_off():
    reward = PieceReward({(5,): 0.5, (4, 5): 0.25, (5, 4): 0.3, (4,): 0.2, (3, 4, 5): 0.125})
    # eq. 10: every occurrence; repeats off: single tokens every time, longer pieces once.
    assert reward.sequence_reward([4, 5, 4, 5]) == pytest.approx(0.2 + 0.75 + 0.5 + 0.75)
    assert reward.sequence_reward([4, 5, 4, 5], repeats=False) == pytest.approx(
        0.2 + 0.75 + 0.5 + 0.5
    )
    used = reward.produced(reward.produced({}, [3, 4]), [3, 4, 5])
    assert used == {(4, 5): 1, (3, 4, 5): 1}
    histories = [[3, 4], [8, 4], [5], []]
    sets = [used, used, {(5, 4): 1}, used]
    dense = reward.step_dense(histories, sets)
    for row, history in enumerate(histories):
        for col, token in enumerate(reward.rewarded_ids):
            expected = reward.token_reward(history, int(token), sets[row])
            assert dense[row, col] == pytest.approx(expected)
    assert dense[0, list(reward.rewarded_ids).index(5)] == pytest.approx(0.5)


def test_clipped_limits_reward_a_piece_as_often_as_its_tm_target_holds_it():
    # limits from the pieces: token 5 twice, token 4 once, the bigram (4, 5) once
    reward = PieceReward({(5,): 0.5, (4,): 0.2, (4, 5): 0.25}, limits={(5,): 2, (4,): 1})
    assert (reward.limit((5,)), reward.limit((4,)), reward.limit((4, 5))) == (2, 1, 1)
    looping = [4, 5, 5, 5, 4, 5]
    assert reward.sequence_reward(looping, repeats=False) == pytest.approx(0.2 + 0.75 + 0.5)
    assert reward.sequence_reward(looping) == pytest.approx(2 * 0.2 + 2 * 0.75 + 2 * 0.5)
    used = reward.produced(reward.produced({}, [4]), [4, 5])
    assert used == {(4,): 1, (5,): 1, (4, 5): 1}
    dense = reward.step_dense([[4, 5], [4, 5, 5]], [used, reward.produced(used, [4, 5, 5])])
    five = list(reward.rewarded_ids).index(5)
    assert dense[0, five] == pytest.approx(0.5)  # 5 once so far: one more is rewarded
    assert dense[1, five] == 0.0  # twice: spent
    assert dense[0, list(reward.rewarded_ids).index(4)] == 0.0


def _repeated_pieces(tokens, ngrams):
    """Occurrences of pieces of 2+ tokens beyond their first, in `tokens`."""
    seen, repeats = set(), 0
    for start in range(len(tokens)):
        for n in range(2, 5):
            gram = tuple(tokens[start : start + n])
            if len(gram) == n and gram in ngrams:
                repeats += gram in seen
                seen.add(gram)
    return repeats


@SEARCHES
def test_with_repeats_off_a_large_lambda_does_not_loop_on_pieces(tiny_bundle, search):
    """The random-weight model runs to max_length, so eq. 10 with a large lambda fills the
    output with the pieces over and over; counted once, they are rewarded once."""
    bundle = tiny_bundle
    inputs, piece_tokens, ngrams, reward, decoder = _save_the_document(bundle)
    found = {
        repeats: search(
            decoder,
            inputs,
            SearchOptions(beam_size=4, max_length=24, lam=5, reward_repeats=repeats),
            [reward],
        )[0][0]
        for repeats in (True, False)
    }
    looping, once = (_tokens(bundle, found[r]) for r in (True, False))
    assert _repeated_pieces(looping, ngrams) >= 2
    assert _repeated_pieces(once, ngrams) < _repeated_pieces(looping, ngrams)
    assert _contains(once, piece_tokens)
    for repeats, best in found.items():
        assert best.reward == pytest.approx(
            5 * reward.sequence_reward(best.token_ids, repeats), rel=1e-5
        )


@SEARCHES
def test_each_sentence_is_capped_by_its_own_max_length(tiny_bundle, sentences, search):
    """A batchmate's longer cap must not change a sentence's output, which is what the server's
    cross-request batches rely on: with per-sentence caps, each output is what the sentence
    gets alone under its cap."""
    bundle = tiny_bundle  # random weights: every output runs to its cap
    inputs = _inputs(bundle, sentences[:2])
    to_id = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    rewards = [
        PieceReward.from_tokens(_synthetic_pieces(bundle, text)[1], to_id)
        for text in ("Tabelle Zelle Text", "Datei speichern Dokument")
    ]
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    options = SearchOptions(beam_size=3, max_length=MAX_LENGTH, lam=1.5)
    caps = [3, MAX_LENGTH]
    together = search(decoder, inputs, options, rewards, max_lengths=caps)
    for i, cap in enumerate(caps):
        alone = search(decoder, [inputs[i]], replace(options, max_length=cap), [rewards[i]])
        assert together[i][0].token_ids == alone[0][0].token_ids
        assert together[i][0].score == pytest.approx(alone[0][0].score, abs=1e-4)
    assert [len(t[0].token_ids) for t in together] == caps


@SEARCHES
def test_per_sentence_caps_are_checked(peaked_bundle, sentences, search):
    bundle = peaked_bundle
    inputs = _inputs(bundle, sentences[:2])
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    options = SearchOptions(beam_size=2, max_length=MAX_LENGTH, lam=0)
    for caps in ([4], [4, 0]):
        with pytest.raises(InvalidInput) as failure:
            search(decoder, inputs, options, max_lengths=caps)
        assert failure.value.field == "max_lengths"
