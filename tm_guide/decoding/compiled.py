"""The compiled beam search (tm_guide/decoding/csrc) and what it needs from Python.

search.beam_search runs it over any engine's steps where the extension was built; the fused
engine (fused_engine.py) runs it around its own compiled model. Both give search.py's result rule
for rule, which the tests hold. What both take (SearchOptions, StepDecoder) is in step.py, so the
search can dispatch here without a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tm_guide.decoding.candidates import (
    CandidateRequest,
    CandidateStepDecoder,
    StepMasks,
    table_index,
)
from tm_guide.decoding.hypotheses import Closed
from tm_guide.decoding.rewards import PieceReward
from tm_guide.decoding.step import (
    SearchBatch,
    SearchOptions,
    SearchVocabulary,
    StepDecoder,
    StepRows,
)
from tm_guide.decoding.template import TargetTemplate
from tm_guide.decoding.utf8 import Utf8Rule
from tm_guide.errors import ModelError

try:
    from tm_guide.decoding import _fused  # type: ignore[attr-defined]
except ImportError:  # built without a compiler
    _fused = None


def available() -> bool:
    """Whether the compiled extension was built for this installation."""
    return _fused is not None


# The longest piece the compiled search takes (PieceReward's default, the paper's, is 4).
MAX_PIECE_LENGTH = 8


def supports(rewards: Sequence[PieceReward | None]) -> bool:
    """Whether the compiled search takes these reward tables (pieces of at most 8 tokens)."""
    return all(table is None or table.max_n <= MAX_PIECE_LENGTH for table in rewards)


def kernel() -> str:
    """The kernel path that runs: "avx512-vnni", "avx2", "neon-dotprod", "neon" or
    "portable"."""
    return str(require_extension().kernel())


def kernels() -> list[str]:
    """The kernel paths this CPU runs, fastest first (the first is the one that runs)."""
    return [str(name) for name in require_extension().kernels()]


def set_kernel(name: str) -> None:
    """Run another kernel path of this CPU, for every model in the process (tests and benchmarks
    compare the paths; they give the same bits, at different speeds)."""
    try:
        require_extension().set_kernel(name)
    except ValueError as exc:
        raise ModelError(str(exc)) from exc


def require_extension() -> Any:
    if _fused is None:
        raise ModelError(
            "the fused engine was not built (no C++ compiler at install time); "
            "reinstall with a compiler, or choose the engine auto (TM_GUIDE_ENGINE, --engine)"
        )
    return _fused


def search_config(decoder: SearchVocabulary, options: SearchOptions) -> Any:
    config = require_extension().SearchConfig()
    config.beam = options.beam_size
    config.max_closed = int(round(options.beam_size * options.patience))
    config.early_exit = options.length_penalty == 0
    config.num_hypotheses = options.num_hypotheses
    config.min_length = options.min_length
    # search.py weighs the rewards by lambda as a float32
    config.lam = float(np.float32(options.lam))
    config.reward_repeats = options.reward_repeats
    config.vocab = decoder.vocab_size
    config.start_id = decoder.start_id
    config.end_id = decoder.end_id
    config.threads = getattr(decoder, "threads", 1)
    config.id_of_byte = list(getattr(decoder, "byte_ids", None) or [])
    return config


def reward_tables(rewards: Sequence[PieceReward | None], vocab_size: int) -> list[Any]:
    fused = require_extension()
    return [
        fused.RewardTable(
            [(list(g), s) for g, s in table.ngrams.items()],
            table.max_n,
            vocab_size,
            [table.limit(g) for g in table.ngrams],
        )
        if table
        else None
        for table in rewards
    ]


def template_objects(
    templates: Sequence[TargetTemplate | None], vocab_size: int, end_id: int
) -> list[Any]:
    fused = require_extension()
    return [
        fused.Template(
            list(t.tokens),
            list(t.gaps),
            vocab_size,
            end_id,
            t.continues.astype(np.uint8).tobytes() if t.continues is not None else b"",
            t.overrun,
            [list(a) for a in t.ahead],
            list(t.least),
            [int(j) for j in t.joins],
        )
        if t is not None
        else None
        for t in templates
    ]


# per sentence: (raw score, token ids, log-prob, reward, length) of each closed hypothesis
_RawClosed = list[list[tuple[float, tuple[int, ...], float, float, int]]]


def closed_hypotheses(raw: _RawClosed) -> list[list[Closed]]:
    return [
        [
            Closed(raw_score=s, token_ids=tokens, log_prob=lp, reward=r, length=n)
            for s, tokens, lp, r, n in sentence
        ]
        for sentence in raw
    ]


def compiled_search(
    decoder: StepDecoder, batch: SearchBatch, options: SearchOptions
) -> list[list[Closed]]:
    """The compiled search over another engine's steps (the tests hold it to search.py's)."""
    state = decoder.start(batch.sources)

    def step(parents: Any, sentences: Any, last_ids: Any, mask_end: bool) -> np.ndarray:
        rows = StepRows(parents, sentences, last_ids, mask_end)
        return np.ascontiguousarray(decoder.step(state, rows), dtype=np.float32)

    closed = require_extension().search_with_steps(step, *_arguments(decoder, batch, options))
    return closed_hypotheses(closed)


def _arguments(
    decoder: SearchVocabulary, batch: SearchBatch, options: SearchOptions
) -> tuple[Any, ...]:
    """What the compiled search takes besides its step: the batch size, each sentence's cap,
    the options, reward tables, prefixes and templates in their compiled forms."""
    return (
        len(batch),
        [int(c) for c in batch.caps],
        search_config(decoder, options),
        reward_tables(batch.rewards, decoder.vocab_size),
        [list(prefix) for prefix in batch.prefixes],
        template_objects(batch.templates, decoder.vocab_size, decoder.end_id),
    )


def ranked_search(
    decoder: CandidateStepDecoder, batch: SearchBatch, options: SearchOptions
) -> list[list[Closed]]:
    """The compiled search over an engine that ranks on its device: each step the search
    states its rules (masks, rewards, scores), the engine applies them there and sends back
    the candidates (tm_guide.decoding.candidates). The tests hold it to search.py's."""
    # each sentence's word-mark table, as an index into the distinct ones
    marks: list[np.ndarray] = []
    marks_of_sentence = np.zeros(len(batch), dtype=np.int64)
    for sentence, template in enumerate(batch.templates):
        if template is not None and template.continues is not None:
            marks_of_sentence[sentence] = table_index(marks, template.continues)
    utf8 = Utf8Rule.for_vocabulary(getattr(decoder, "byte_ids", None), decoder.vocab_size)
    state = decoder.start(batch.sources)

    def rank(
        parents: Any, sentences: np.ndarray, last_ids: np.ndarray, mask_end: bool, request: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        masks = None
        if "classes" in request:
            masks = StepMasks(
                classes=request["classes"],
                deny=request["deny"],
                allow=request["allow"],
                marks=tuple(marks),
                marks_of_row=marks_of_sentence[sentences],
                utf8=utf8,
                utf8_mode=request["utf8_mode"],
                utf8_low=request["utf8_low"],
                utf8_high=request["utf8_high"],
                end=decoder.end_id,
            )
        found = decoder.step_candidates(
            state,
            StepRows(parents, sentences, last_ids, mask_end),
            CandidateRequest(
                k=request["k"],
                groups=request["groups"],
                cum_scores=request["cum_scores"],
                masks=masks,
                reward_keys=request["reward_keys"],
                reward_values=request["reward_values"],
            ),
        )
        return found.flat, found.totals, found.log_probs, found.first_column

    closed = require_extension().search_with_ranker(rank, *_arguments(decoder, batch, options))
    return closed_hypotheses(closed)
