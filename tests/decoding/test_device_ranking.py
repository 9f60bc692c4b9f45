"""Ranking on the engine's device (tm_guide.decoding.candidates): the same candidates, and so
the same search, as ranking every score on the host. Run on CPU torch, which computes what CUDA
would with the same operations; a GPU run repeats the search test on CUDA."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.candidates import CandidateRequest, StepMasks
from tm_guide.decoding.search import (
    SearchOptions,
    _finalize,
    beam_search,
    python_beam_search,
    top_candidates,
)
from tm_guide.decoding.template import (
    OPEN_WORD,
    WORD_START,
    TargetTemplate,
    ahead_of,
    glues_on,
    word_open,
)
from tm_guide.decoding.utf8 import Utf8Rule, byte_ids
from tm_guide.model import Bundle
from tm_guide.pieces.repair import continuation_mask

torch = pytest.importorskip("torch")
from tm_guide.decoding.torch_candidates import DeviceTables, select, upload  # noqa: E402
from tm_guide.decoding.torch_engine import TorchStepDecoder  # noqa: E402

from .helpers import batch_of, model_inputs, rewards_for, template_variants  # noqa: E402

pytestmark = pytest.mark.torch

MAX_LENGTH = 24
WORDY = [
    "Open the spreadsheet and save the document.",
    "Select the paragraph formatting options.",
    "Click the Save button to save the current document.",
]


@pytest.fixture(scope="module")
def demo_torch(demo: Bundle) -> TorchStepDecoder:
    return TorchStepDecoder(demo.path)


@pytest.fixture(scope="module")
def demo_ranking(demo: Bundle) -> TorchStepDecoder:
    """The same engine ranking on its device, as on a GPU (here the CPU)."""
    return TorchStepDecoder(demo.path, rank_on_device=True)


def _host_ranking(log_probs, masks_of_rows, utf8, utf8_rules, cum, keys, values, groups, k):  # type: ignore[no-untyped-def]
    """search.py's way: each row masked by its rules, the rewards added, top_candidates."""
    scores = log_probs.copy()
    for row, entry in enumerate(masks_of_rows):
        if entry is not None:
            entry[0].apply(scores[row], entry[1])
    for row, rule in enumerate(utf8_rules):
        if rule is not None:
            mode, low, high = rule
            if mode == 3:
                allowed = utf8.id_of_byte[low : high + 1]
                allowed = allowed[allowed >= 0]
                kept = scores[row, allowed].copy()
                scores[row] = -np.inf
                scores[row, allowed] = kept
            else:
                scores[row, utf8.denied(mode == 2)] = -np.inf
    masked = scores.copy()
    flat = scores.reshape(-1)
    flat[keys] += values
    top, totals = top_candidates(scores, cum, groups, k)
    return top, totals, masked


def test_device_candidates_equal_the_hosts_on_ties_masks_and_rewards(demo: Bundle) -> None:
    """Random scores with many ties (rounded to 1/8) and -inf, rows under every kind of
    template and UTF-8 rule, sparse rewards: the same candidates in the same order, the same
    totals and log-probabilities, bit for bit."""
    vocabulary = demo.vocabularies.target
    index = {t: i for i, t in enumerate(vocabulary)}
    vocab = len(vocabulary)
    continues = continuation_mask(vocabulary)
    utf8 = Utf8Rule(byte_ids(index), vocab)
    tokens = tuple(index[t] for t in demo.encode_target("Speichern Sie das Dokument."))
    end_id = index["</s>"]
    gaps = (2, *(i % 2 for i in range(len(tokens) - 1)), 3)
    template = TargetTemplate(
        tokens,
        gaps,
        continues,
        overrun=2,
        ahead=ahead_of([vocabulary[i] for i in tokens], tokens, 3),
        least=(2,) + (0,) * len(tokens),
        joins=(False, *(glues_on(vocabulary[i]) for i in tokens)),
    )
    rng = np.random.default_rng(7)
    opened: set[bool] = set()
    groups, per = 6, 4
    rows = groups * per
    states = [(0, 0), (0, 1), (0, 2), (1, 0), (2, 1), (len(tokens), 0), (len(tokens), 3), (1, 0)]
    for trial in range(6):
        log_probs = np.round(rng.normal(-8, 3, size=(rows, vocab)) * 8) / 8
        log_probs = log_probs.astype(np.float32)
        log_probs[rng.random((rows, vocab)) < 0.01] = -np.inf
        log_probs[3] = -np.inf  # a dead row
        # on every other row the model would rather go on with a word than start one, so that
        # a spent gap's overrun (OPEN_WORD) both allows and denies the tokens that continue one
        log_probs[::2, continues != WORD_START] += 6
        masks_of_rows = [
            (template.row_mask(states[(row + trial) % len(states)], end_id), continues)
            if row % 3
            else None
            for row in range(rows)
        ]
        for entry, row_log_probs in zip(masks_of_rows, log_probs, strict=True):
            if entry is not None and entry[0].classes >> OPEN_WORD & 1:
                opened.add(word_open(row_log_probs, continues))
        utf8_rules = [
            None if row % 5 == 0 else (3, 0x80, 0xBF) if row % 5 == 1 else (1 + row % 2, 0, 0)
            for row in range(rows)
        ]
        keys = np.unique(rng.integers(0, rows * vocab, size=200)).astype(np.int64)
        values = rng.choice(np.float32([0.5, 0.75, 1.0]), size=len(keys)).astype(np.float32)
        cum = np.round(rng.normal(-3, 1, size=rows) * 4).astype(np.float32) / 4
        k = 2 * per
        top, totals, masked = _host_ranking(
            log_probs, masks_of_rows, utf8, utf8_rules, cum, keys, values, groups, k
        )
        request = CandidateRequest(
            k=k,
            groups=groups,
            cum_scores=cum,
            masks=StepMasks.build(masks_of_rows, utf8, utf8_rules),
            reward_keys=keys,
            reward_values=values,
        )
        tables = DeviceTables(torch.device("cpu"))
        found = select(torch.from_numpy(log_probs.copy()), upload(request, tables, vocab))
        np.testing.assert_array_equal(found.flat, top)
        np.testing.assert_array_equal(found.totals, totals)
        rows_of = top // vocab + (np.arange(groups) * per)[:, None]
        np.testing.assert_array_equal(found.log_probs, masked[rows_of, top % vocab])
        np.testing.assert_array_equal(found.first_column, masked[:, 0])
    assert opened == {True, False}


def _wordy_templates(bundle: Bundle, inputs):  # type: ignore[no-untyped-def]
    """Each sentence's own output with its first word of two or more pieces dropped for a
    one-token gap, in the four forms of the template rule (helpers.template_variants)."""
    vocabulary = bundle.vocabularies.target
    index = {t: i for i, t in enumerate(vocabulary)}
    plain = []
    for result in bundle.translator.translate_batch(inputs, beam_size=4):
        out = result.hypotheses[0]
        starts = [i for i, t in enumerate(out) if t.startswith("▁")] + [len(out)]
        begin, end = next((a, b) for a, b in itertools.pairwise(starts) if b - a >= 2)
        kept = [index[t] for t in out[:begin] + out[end:]]
        gaps = [0] * (len(kept) + 1)
        gaps[begin] = 1
        plain.append(TargetTemplate(tuple(kept), tuple(gaps)))
    return template_variants(vocabulary, plain)


@pytest.mark.parametrize(("lam", "held"), [(0.0, False), (2.0, False), (2.0, True)])
@pytest.mark.parametrize("search", ["python", "compiled"])
def test_the_search_ranked_on_the_device_equals_the_search_ranked_on_the_host(
    demo: Bundle, demo_torch: TorchStepDecoder, demo_ranking, sentences, lam, held, search
) -> None:
    """The demo model (byte pieces: the UTF-8 rule at every step), sentences with and without
    templates of every kind, a forced prefix on some, pieces rewarded (with `held`: pieces the
    templates hold, clipped): the Python and the compiled search ranking on the device find
    the same hypotheses, scores and log-probabilities as search.py ranking on the host."""
    if search == "compiled" and not compiled.available():
        pytest.skip("the fused engine was not built")
    inputs = model_inputs(demo, WORDY + list(sentences))
    variants = _wordy_templates(demo, inputs[: len(WORDY)])
    native = demo.translator.translate_batch(inputs, beam_size=2, max_decoding_length=12)
    pieces = [r.hypotheses[0] for r in native] if held else [["▁Datei"]] * len(inputs)
    rewards = rewards_for(demo, pieces, clipped=held)
    prefixes = [[9] if i % 4 == 3 else [] for i in range(len(inputs))]
    options = SearchOptions(
        beam_size=4, max_length=MAX_LENGTH, lam=lam, num_hypotheses=2, reward_repeats=not held
    )
    caps = [MAX_LENGTH] * len(inputs)
    for name, made in variants.items():
        templates = made + [None] * (len(inputs) - len(made))
        on_host = python_beam_search(
            demo_torch, inputs, options, rewards, caps, prefixes, templates
        )
        if search == "python":
            on_device = python_beam_search(
                demo_ranking, inputs, options, rewards, caps, prefixes, templates
            )
        else:
            closed = compiled.ranked_search(
                demo_ranking, batch_of(inputs, rewards, caps, prefixes, templates), options
            )
            on_device = [_finalize(sentence, options) for sentence in closed]
        assert on_device == on_host, name


def test_the_torch_engine_ranks_on_the_device_only_off_the_cpu(
    demo_torch: TorchStepDecoder,
) -> None:
    assert demo_torch.ranks_on_device is False


LONG = (
    "Choose Tools - Options - Load/Save - General and select the format that documents are "
    "saved in by default, then click the button that applies the settings to every new "
    "document, spreadsheet, presentation and drawing that you create from now on, unless you "
    "change the format again in the dialog."
)


def test_fixed_steps_decode_as_the_dynamic_steps(demo: Bundle, demo_torch: TorchStepDecoder):
    """The fixed-shape step (what a CUDA graph replays: every sentence keeps its rows, the
    attention runs over the whole cache with later steps masked) finds the same outputs as the
    dynamic step, with scores within float rounding: sentences finishing at different steps, a
    second batch of the same shape (the buffers are reused), templates, and an output longer
    than the first capacity (the cache doubles)."""
    fixed = TorchStepDecoder(demo.path, fixed_steps=True)
    inputs = model_inputs(demo, WORDY + [LONG])
    templates = _wordy_templates(demo, inputs[: len(WORDY)])["looking"] + [None]
    rewards = rewards_for(demo, [["▁Datei"]] * len(inputs))
    options = SearchOptions(beam_size=4, max_length=120, lam=1.0, num_hypotheses=2)
    for batch in (inputs, inputs[::-1]):
        shapes = templates if batch is inputs else templates[::-1]
        got = beam_search(fixed, batch, options, rewards, templates=shapes)
        want = beam_search(demo_torch, batch, options, rewards, templates=shapes)
        for mine, theirs in zip(got, want, strict=True):
            assert [h.token_ids for h in mine] == [h.token_ids for h in theirs]
            for a, b in zip(mine, theirs, strict=True):
                assert a.score == pytest.approx(b.score, abs=1e-4)
    assert max(len(h[0].token_ids) for h in got) > 64
    assert len(fixed._fixed) == 1  # both batches ran on the same buffers


def test_a_padded_output_projection_gives_the_same_search(demo: Bundle, demo_torch):
    """The projection padded to an aligned row count (what the engine does on a GPU): the
    padding is cut off before the softmax, so the search finds the same outputs."""
    padded = TorchStepDecoder(demo.path, fixed_steps=True)
    vocab = padded.vocab_size
    align = next(a for a in (8, 16, 64, 96, 7) if vocab % a)
    padded.model.prepare(pad_outputs_to=align)
    assert padded.model.decoder_weights.weights[-1].shape[0] > vocab
    inputs = model_inputs(demo, WORDY)
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=0.0)
    got = beam_search(padded, inputs, options)
    want = beam_search(demo_torch, inputs, options)
    assert [h[0].token_ids for h in got] == [h[0].token_ids for h in want]
    for a, b in zip(got, want, strict=True):
        assert a[0].score == pytest.approx(b[0].score, abs=1e-4)


def test_searches_in_two_threads_do_not_share_fixed_buffers(demo: Bundle, demo_torch):
    """Two decoding threads on one engine with fixed steps: a batch shape's buffers held by a
    live search are not handed to the other, so each thread finds what it finds alone."""
    from concurrent.futures import ThreadPoolExecutor

    fixed = TorchStepDecoder(demo.path, fixed_steps=True)
    batches = [model_inputs(demo, WORDY), model_inputs(demo, WORDY[::-1])]
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=0.0)
    alone = [beam_search(demo_torch, batch, options) for batch in batches]
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda b: beam_search(fixed, b, options), batches * 3))
    for got, want in zip(together, alone * 3, strict=True):
        assert [h[0].token_ids for h in got] == [h[0].token_ids for h in want]
