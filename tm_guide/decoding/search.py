"""Beam search with the translation-piece reward applied inside the search (paper eq. 10).

The search is a step-for-step copy of CTranslate2's own BeamSearch (src/decoding.cc), so that with
lambda = 0 it returns what ``translate_batch(beam_size=K)`` returns, token for token:

* the first step expands the single start hypothesis of each sentence;
* each step takes the 2K best (hypothesis, token) candidates of a sentence by cumulative score;
* among the first K, a candidate ending in </s> (or any candidate on the last step) closes a
  hypothesis, and the next candidate not ending in </s> from the secondary K takes its place;
* a sentence is done once round(K * patience) hypotheses are closed (or, with length_penalty = 0,
  as soon as the best beam is closed and num_hypotheses are);
* a closed hypothesis is ranked by score / length ** length_penalty, the length counting the </s>
  (the paper's eq. 6 is length_penalty = 1);
* </s> is masked before the softmax while step < min_length (by the engine, see StepDecoder);
* a target prefix (a multilingual model's language token) is forced as CTranslate2 forces
  `target_prefix`: while step < its length every candidate is the prefix token, the first with
  score 0 and the others -1e10 (the prefix's log-probabilities are not counted, and it closes
  nothing); on the step right after it, a </s> among the candidates but the first becomes token
  0 at -1e10; the prefix stays in the output and counts in its length and max_length;
* a target template (tm_guide.decoding.template: a close TM match to repair) sets the tokens it
  forbids to -inf after the prefix, and a candidate whose total is -inf never closes a
  hypothesis (it fills the beam as a dead row); a piece the template holds rewards only its next
  token, once the gap before it holds a free token (tm_guide.decoding.template); without
  templates nothing changes.

The reward, lambda * sum_n D_X(...), is added to the log-probabilities of each live hypothesis
before the candidates are ranked, so it steers every step of the search. It is kept apart from the
model's own log-probability in the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tm_guide.decoding import compiled
from tm_guide.decoding.candidates import CandidateRequest, CandidateStepDecoder, StepMasks
from tm_guide.decoding.hypotheses import Closed
from tm_guide.decoding.rewards import Held, PieceReward

# the search's options and step decoder are the search's public names (defined in step.py)
from tm_guide.decoding.step import SearchBatch as SearchBatch
from tm_guide.decoding.step import SearchOptions as SearchOptions
from tm_guide.decoding.step import StepDecoder as StepDecoder
from tm_guide.decoding.step import StepRows
from tm_guide.decoding.template import START, RowMask, State, TargetTemplate
from tm_guide.decoding.utf8 import Utf8Rule
from tm_guide.errors import InvalidInput


@runtime_checkable
class WholeSearchDecoder(Protocol):
    """An engine that runs the whole search itself, by the rules of beam_search below (the
    fused engine); beam_search validates the options and finalizes what it returns."""

    @property
    def vocab_size(self) -> int: ...
    @property
    def end_id(self) -> int: ...

    def run_search(self, batch: SearchBatch, options: SearchOptions) -> list[list[Closed]]: ...


@dataclass(frozen=True)
class Hypothesis:
    """One finished output of the search."""

    token_ids: tuple[int, ...]
    score: float  # the search's ranking score: (log-prob + reward) / length ** length_penalty
    log_prob: float  # sum of the model's log-probabilities, </s> included
    reward: float  # sum of lambda * D_X over the steps
    length: int  # the length used for normalisation (tokens + </s> when it was produced)
    model_score: float  # log_prob / length ** length_penalty, as translate_batch reports it


def log_softmax(logits: np.ndarray, mask_id: int | None = None) -> np.ndarray:
    """Row-wise log-softmax in float32 (the engines' precision), `mask_id` masked first."""
    logits = np.array(logits, dtype=np.float32)
    if mask_id is not None:
        logits[:, mask_id] = -np.inf
    shifted = logits - logits.max(axis=1, keepdims=True)
    result: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return result


def beam_search(
    decoder: StepDecoder | WholeSearchDecoder,
    sources: Sequence[Sequence[str]],
    options: SearchOptions,
    rewards: Sequence[PieceReward | None] | None = None,
    max_lengths: Sequence[int] | None = None,
    prefixes: Sequence[Sequence[int]] | None = None,
    templates: Sequence[TargetTemplate | None] | None = None,
    *,
    in_python: bool = False,
) -> list[list[Hypothesis]]:
    """Translate a batch; for each sentence the num_hypotheses best hypotheses, best first.

    `prefixes` are target token ids each sentence's output starts with (translate_batch's
    target_prefix: a multilingual model's target-language token); they stay in the output.
    `templates` (one or None per sentence) constrain what follows the prefix to a repaired TM
    target (tm_guide.decoding.template).

    `max_lengths` caps each sentence's output on its own (each at most options.max_length), so
    that a sentence's output does not depend on the lengths of its batchmates; without it every
    sentence gets options.max_length, as translate_batch's max_decoding_length.

    An engine that runs the whole search (the fused engine) does so; an engine that ranks on
    its device (the torch engine on a GPU: tm_guide.decoding.candidates) gets the search's
    rules as a request at each step and sends back only the candidates (the compiled search
    where it was built, else this one's); over any other step decoder
    the compiled search (tm_guide.decoding.compiled) runs where it was built, with the rules
    of this module's own search bit for bit (the tests hold it to them) and none of Python's
    per-step bookkeeping; else, or `in_python`, this module's own search."""
    batch = _checked_batch(decoder, sources, options, rewards, max_lengths, prefixes, templates)
    if batch is None:
        return []
    if isinstance(decoder, WholeSearchDecoder):
        if in_python:
            raise TypeError(f"{type(decoder).__name__} has no steps: it runs its whole search")
        found = decoder.run_search(batch, options)
    elif in_python or not (compiled.available() and compiled.supports(batch.rewards)):
        return _search(decoder, batch, options)
    elif isinstance(decoder, CandidateStepDecoder) and decoder.ranks_on_device:
        found = compiled.ranked_search(decoder, batch, options)
    else:
        found = compiled.compiled_search(decoder, batch, options)
    return [_finalize(sentence, options) for sentence in found]


# beam_search in Python: the reference that the compiled search is tested against, and what
# runs where it was not built. A decoder that ranks on its device is asked for candidates, as
# beam_search asks it.
python_beam_search = partial(beam_search, in_python=True)


def _checked_batch(
    decoder: StepDecoder | WholeSearchDecoder,
    sources: Sequence[Sequence[str]],
    options: SearchOptions,
    rewards: Sequence[PieceReward | None] | None,
    max_lengths: Sequence[int] | None,
    prefixes: Sequence[Sequence[int]] | None,
    templates: Sequence[TargetTemplate | None] | None,
) -> SearchBatch | None:
    """The search's arguments checked and filled in per sentence; None for an empty batch."""
    options.validate(decoder.vocab_size)
    if not sources:
        return None
    if rewards is not None and len(rewards) != len(sources):
        raise InvalidInput("one reward table per sentence is required", field="rewards")
    return SearchBatch(
        sources=sources,
        rewards=list(rewards) if rewards is not None else [None] * len(sources),
        caps=_sentence_caps(max_lengths, len(sources), options),
        prefixes=_checked_prefixes(prefixes, len(sources), decoder.vocab_size),
        templates=_checked_templates(templates, len(sources), decoder, options),
    )


def _checked_prefixes(
    prefixes: Sequence[Sequence[int]] | None, batch_size: int, vocab_size: int
) -> list[list[int]]:
    if prefixes is None:
        return [[] for _ in range(batch_size)]
    if len(prefixes) != batch_size:
        raise InvalidInput("one target prefix per sentence is required", field="prefixes")
    checked = [[int(t) for t in prefix] for prefix in prefixes]
    if any(not 0 <= t < vocab_size for prefix in checked for t in prefix):
        raise InvalidInput("a target prefix token is outside the vocabulary", field="prefixes")
    return checked


def _checked_templates(
    templates: Sequence[TargetTemplate | None] | None,
    batch_size: int,
    decoder: StepDecoder | WholeSearchDecoder,
    options: SearchOptions,
) -> list[TargetTemplate | None]:
    if templates is None:
        return [None] * batch_size
    if len(templates) != batch_size:
        raise InvalidInput("one template (or None) per sentence is required", field="templates")
    for template in templates:
        if template is None:
            continue
        template.check(decoder.vocab_size, decoder.end_id)
        if len(template.tokens) < options.min_length:
            # </s> could be both required (the template is done) and masked (min_length)
            raise InvalidInput("a template must hold at least min_length tokens", field="templates")
    return list(templates)


@dataclass(frozen=True)
class _Rules:
    """What one search applies at every step, fixed for the whole search: the options, each
    sentence's cap, forced prefix, template and reward table, and the UTF-8 rule."""

    options: SearchOptions
    caps: np.ndarray
    prefixes: Sequence[Sequence[int]]
    templates: Sequence[TargetTemplate | None]
    rewards: Sequence[PieceReward | None]
    utf8: Utf8Rule | None
    vocab_size: int
    end_id: int

    # whether any sentence is rewarded, has a template, counts its limited pieces (repeats off):
    # read at every step, so found once
    use_reward: bool = field(init=False)
    use_templates: bool = field(init=False)
    track_used: bool = field(init=False)

    def __post_init__(self) -> None:
        use_reward = self.options.lam != 0 and any(self.rewards)
        object.__setattr__(self, "use_reward", use_reward)
        object.__setattr__(self, "use_templates", any(t is not None for t in self.templates))
        object.__setattr__(self, "track_used", use_reward and not self.options.reward_repeats)

    def after_prefix(self, sentence: int, step: int) -> bool:
        """Whether `step` of `sentence` comes after its forced prefix (its rules apply)."""
        return step >= len(self.prefixes[sentence])


@dataclass
class _Beam:
    """The search's state between steps: the live sentences (in row-group order) and, per
    row, its parent, last token, cumulative score, model log-prob and reward, tokens, the
    limited pieces it used and its template state; per sentence, the closed hypotheses."""

    live: np.ndarray
    rows_per_sentence: int
    parents: np.ndarray | None
    last_ids: np.ndarray
    cum_score: np.ndarray
    cum_logp: np.ndarray
    cum_reward: np.ndarray
    sequences: list[list[int]]
    used: list[Mapping[tuple[int, ...], int]]
    places: list[State]
    closed: list[list[Closed]]
    top_closed: np.ndarray
    results: list[list[Hypothesis]]

    @classmethod
    def start(cls, batch_size: int, start_id: int) -> _Beam:
        return cls(
            live=np.arange(batch_size),
            rows_per_sentence=1,
            parents=None,
            last_ids=np.full(batch_size, start_id, dtype=np.int64),
            cum_score=np.zeros(batch_size, dtype=np.float32),
            cum_logp=np.zeros(batch_size, dtype=np.float32),
            cum_reward=np.zeros(batch_size, dtype=np.float64),
            sequences=[[] for _ in range(batch_size)],
            used=[{}] * batch_size,
            places=[START] * batch_size,
            closed=[[] for _ in range(batch_size)],
            top_closed=np.zeros(batch_size, dtype=bool),
            results=[[] for _ in range(batch_size)],
        )

    def row_sentences(self) -> np.ndarray:
        return np.repeat(self.live, self.rows_per_sentence)


@dataclass
class _Picks:
    """The candidates kept for the next step: per row, its origin row, token, total score and
    whether its log-prob counts (not a forced prefix token); and the sentences still live."""

    rows: list[int]
    ids: list[int]
    scores: list[np.float32]
    counted: list[bool]
    live: list[int]


def _search(
    decoder: StepDecoder, batch: SearchBatch, options: SearchOptions
) -> list[list[Hypothesis]]:
    rules = _Rules(
        options,
        batch.caps,
        batch.prefixes,
        batch.templates,
        batch.rewards,
        Utf8Rule.for_vocabulary(getattr(decoder, "byte_ids", None), decoder.vocab_size),
        decoder.vocab_size,
        decoder.end_id,
    )
    state = decoder.start(batch.sources)
    beam = _Beam.start(len(batch), decoder.start_id)
    ranker = (
        decoder if isinstance(decoder, CandidateStepDecoder) and decoder.ranks_on_device else None
    )
    for step in range(int(batch.caps.max())):
        rows = StepRows(
            beam.parents, beam.row_sentences(), beam.last_ids, step < options.min_length
        )
        if ranker is not None:
            scores = _ranked_on_device(ranker, state, rules, beam, rows, step)
        else:
            scores = _ranked_on_host(decoder.step(state, rows), rules, beam, rows.sentences, step)
        picks = _Picks([], [], [], [], [])
        for group, sentence in enumerate(beam.live.tolist()):
            _advance_sentence(rules, beam, scores, step, group, sentence, picks)
        if not picks.live:
            break
        _take(rules, beam, scores, picks)
    return beam.results


@dataclass(frozen=True)
class _StepScores:
    """One step's ranking: the 2K best candidates of each live sentence (local row * vocab +
    token, and their totals), the step's reward, and the model's log-probabilities, all of
    them (`dense`, ranked on the host) or those of the candidates (`found`, ranked on the
    engine's device)."""

    top: np.ndarray
    top_scores: np.ndarray
    reward: _SparseReward | None
    vocab_size: int
    dense: np.ndarray | None = None
    found_keys: np.ndarray | None = None  # sorted global row * vocab + token
    found_values: np.ndarray | None = None
    first_column: np.ndarray | None = None

    def log_probs_at(self, rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """The model's log-probability of each (row, token); a pair that is no candidate (a
        forced prefix token, whose log-prob is never counted) gets NaN."""
        if self.dense is not None:
            return np.asarray(self.dense[rows, tokens])
        assert self.found_keys is not None and self.found_values is not None
        assert self.first_column is not None
        wanted = rows * self.vocab_size + tokens
        pos = np.minimum(np.searchsorted(self.found_keys, wanted), len(self.found_keys) - 1)
        hit = self.found_keys[pos] == wanted
        # CTranslate2's prefix rule puts token 0 of the sentence's first row in a </s>'s place
        fallback = np.where(tokens == 0, self.first_column[rows], np.float32(np.nan))
        return np.where(hit, self.found_values[pos], fallback).astype(np.float32)

    def log_prob(self, row: int, token: int) -> np.float32:
        return np.float32(self.log_probs_at(np.array([row]), np.array([token]))[0])


def _ranked_on_host(
    step_scores: np.ndarray, rules: _Rules, beam: _Beam, row_sentences: np.ndarray, step: int
) -> _StepScores:
    """Every score of the step (the engine's) on the host, the rules applied and the
    candidates ranked here."""
    log_probs = np.asarray(step_scores, np.float32)
    if rules.use_templates or rules.utf8 is not None:
        log_probs = log_probs.copy()  # the engine's buffer stays as it was
    _mask_rules(rules, beam, row_sentences, log_probs, step)
    step_reward = _reward_of_step(rules, beam, row_sentences, step)
    top, top_scores = _ranked(log_probs, beam, step_reward, 2 * rules.options.beam_size)
    return _StepScores(top, top_scores, step_reward, rules.vocab_size, dense=log_probs)


def _ranked_on_device(
    decoder: CandidateStepDecoder,
    state: object,
    rules: _Rules,
    beam: _Beam,
    rows: StepRows,
    step: int,
) -> _StepScores:
    """The same rules stated as a CandidateRequest, applied and ranked on the engine's device;
    only the candidates come back."""
    row_sentences = rows.sentences
    step_reward = _reward_of_step(rules, beam, row_sentences, step)
    k = 2 * rules.options.beam_size
    request = CandidateRequest(
        k=k,
        groups=len(beam.live),
        cum_scores=np.asarray(beam.cum_score, dtype=np.float32),
        masks=_step_masks(rules, beam, row_sentences, step),
        reward_keys=step_reward.keys if step_reward else np.zeros(0, dtype=np.int64),
        reward_values=step_reward.values if step_reward else np.zeros(0, dtype=np.float32),
    )
    found = decoder.step_candidates(state, rows, request)
    span = beam.rows_per_sentence * rules.vocab_size
    keys = (found.flat + (np.arange(len(beam.live)) * span)[:, None]).reshape(-1)
    order = np.argsort(keys, kind="stable")
    return _StepScores(
        found.flat,
        found.totals,
        step_reward,
        rules.vocab_size,
        found_keys=keys[order],
        found_values=found.log_probs.reshape(-1)[order],
        first_column=found.first_column,
    )


def _step_masks(
    rules: _Rules, beam: _Beam, row_sentences: np.ndarray, step: int
) -> StepMasks | None:
    """The template and UTF-8 rules of this step as StepMasks (None where neither applies)."""
    if not rules.use_templates and rules.utf8 is None:
        return None
    sentences = row_sentences.tolist()
    templates: list[tuple[RowMask, np.ndarray | None] | None] = [None] * len(sentences)
    if rules.use_templates:
        for row, sentence in enumerate(sentences):
            template = rules.templates[sentence]
            if template is not None and rules.after_prefix(sentence, step):
                templates[row] = (
                    template.row_mask(beam.places[row], rules.end_id),
                    template.continues,
                )
    utf8: list[tuple[int, int, int] | None] = [None] * len(sentences)
    if rules.utf8 is not None:
        for row, sentence in enumerate(sentences):
            if rules.after_prefix(sentence, step):
                utf8[row] = rules.utf8.row_rule(
                    beam.sequences[row], step + 1 == rules.caps[sentence]
                )
    return StepMasks.build(templates, rules.utf8, utf8)


def _mask_rules(
    rules: _Rules, beam: _Beam, row_sentences: np.ndarray, log_probs: np.ndarray, step: int
) -> None:
    """The template rule, then the UTF-8 rule: the tokens each row may not produce get -inf."""
    if rules.use_templates:
        for row, sentence in enumerate(row_sentences.tolist()):
            template = rules.templates[sentence]
            if template is not None and rules.after_prefix(sentence, step):
                template.mask(beam.places[row], log_probs[row], rules.end_id)
    if rules.utf8 is not None:  # byte pieces only in valid UTF-8 order (tm_guide.decoding.utf8)
        for row, sentence in enumerate(row_sentences.tolist()):
            if rules.after_prefix(sentence, step):
                rules.utf8.mask(
                    beam.sequences[row], log_probs[row], step + 1 == rules.caps[sentence]
                )


def _reward_of_step(
    rules: _Rules, beam: _Beam, row_sentences: np.ndarray, step: int
) -> _SparseReward | None:
    """The piece reward rule (eq. 10): lambda times the scores of the pieces each candidate
    completes; a piece a template holds rewards only the template's next token."""
    if not rules.use_reward:
        return None
    rewards = rules.rewards
    held: list[Held | None] | None = None
    if rules.use_templates:
        held = [
            (template.grams(table.max_n), template.rewarded_next(beam.places[row]))
            if (template := rules.templates[sentence]) is not None
            and (table := rewards[sentence]) is not None
            and rules.after_prefix(sentence, step)
            else None
            for row, sentence in enumerate(row_sentences.tolist())
        ]
    return _step_reward(
        rewards,
        row_sentences,
        beam.sequences,
        rules.vocab_size,
        np.float32(rules.options.lam),
        beam.used if rules.track_used else None,
        held,
    )


def _ranked(
    log_probs: np.ndarray, beam: _Beam, step_reward: _SparseReward | None, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best candidates of each live sentence, the step's reward added for the ranking
    only (log_probs holds the model's own log-probs again afterwards)."""
    if not step_reward:
        return top_candidates(log_probs, beam.cum_score, len(beam.live), k)
    flat_view = log_probs.reshape(-1)
    original = flat_view[step_reward.keys].copy()
    flat_view[step_reward.keys] += step_reward.values
    ranked = top_candidates(log_probs, beam.cum_score, len(beam.live), k)
    flat_view[step_reward.keys] = original
    return ranked


def _advance_sentence(
    rules: _Rules,
    beam: _Beam,
    scores_of_step: _StepScores,
    step: int,
    group: int,
    sentence: int,
    picks: _Picks,
) -> None:
    """One live sentence's step: its prefix forced, the candidates that close hypotheses
    closed (the end rule), the sentence finished (the length rule) or its K next rows picked."""
    options = rules.options
    width = options.beam_size
    vocab_size = rules.vocab_size
    is_last_step = step + 1 == rules.caps[sentence]
    flat = scores_of_step.top[group]
    token_ids = flat % vocab_size
    origins = group * beam.rows_per_sentence + flat // vocab_size
    scores = scores_of_step.top_scores[group]
    prefix = rules.prefixes[sentence]
    if step <= len(prefix) and prefix:
        token_ids, origins, scores = _apply_prefix(
            prefix, step, token_ids, origins, scores, group * beam.rows_per_sentence, rules.end_id
        )
    secondary = width
    chosen: list[int] = []
    for k in range(width):
        pick = k
        token = int(token_ids[k])
        closes = (token == rules.end_id and step >= len(prefix)) or is_last_step
        if closes and scores[k] != -np.inf:  # a dead row never closes
            if k == 0:
                beam.top_closed[sentence] = True
            _close(
                beam,
                scores_of_step,
                sentence,
                int(origins[k]),
                token,
                scores[k],
                counted=step >= len(prefix),
                end_id=rules.end_id,
            )
            for j in range(secondary, 2 * width):
                if int(token_ids[j]) != rules.end_id:
                    pick = j
                    secondary = j + 1
                    break
        chosen.append(pick)
    if _finished(rules, beam, sentence, is_last_step):
        beam.results[sentence] = _finalize(beam.closed[sentence], options)
        return
    picks.live.append(int(sentence))
    for pick in chosen:
        picks.rows.append(int(origins[pick]))
        picks.ids.append(int(token_ids[pick]))
        picks.scores.append(scores[pick])
        picks.counted.append(step >= len(prefix))


def _close(
    beam: _Beam,
    scores_of_step: _StepScores,
    sentence: int,
    origin: int,
    token: int,
    score: np.float32,
    counted: bool,
    end_id: int,
) -> None:
    """The end rule: the hypothesis of row `origin` closes with `token` (its </s>, or its last
    token on the last step); a forced token's log-prob and reward are not counted."""
    tokens = beam.sequences[origin] if token == end_id else beam.sequences[origin] + [token]
    step_reward = scores_of_step.reward
    beam.closed[sentence].append(
        Closed(
            raw_score=float(score),
            token_ids=tuple(tokens),
            log_prob=float(
                beam.cum_logp[origin] + (scores_of_step.log_prob(origin, token) if counted else 0)
            ),
            reward=float(
                beam.cum_reward[origin]
                + (step_reward.get(origin, token) if step_reward and counted else 0)
            ),
            length=len(beam.sequences[origin]) + 1,
        )
    )


def _finished(rules: _Rules, beam: _Beam, sentence: int, is_last_step: bool) -> bool:
    """The length rule: a sentence is done on its last step, once round(K * patience)
    hypotheses are closed, or (length_penalty 0) once its best beam closed with num_hypotheses."""
    options = rules.options
    if is_last_step:
        return True
    if options.length_penalty == 0:
        return bool(beam.top_closed[sentence]) and (
            len(beam.closed[sentence]) >= options.num_hypotheses
        )
    return len(beam.closed[sentence]) >= int(round(options.beam_size * options.patience))


def _take(
    rules: _Rules,
    beam: _Beam,
    scores_of_step: _StepScores,
    picks: _Picks,
) -> None:
    """The beam for the next step from the picked candidates: scores, tokens, template states
    (the template rule's automaton) and the limited pieces each row used."""
    width = rules.options.beam_size
    beam.parents = parents = np.asarray(picks.rows, dtype=np.int64)
    beam.last_ids = last_ids = np.asarray(picks.ids, dtype=np.int64)
    counted_rows = np.asarray(picks.counted)
    step_reward = scores_of_step.reward
    new_logp = beam.cum_logp[parents] + np.where(
        counted_rows, scores_of_step.log_probs_at(parents, last_ids), 0
    )
    new_reward = beam.cum_reward[parents] + np.where(
        counted_rows, step_reward.get_many(parents, last_ids) if step_reward else 0.0, 0.0
    )
    beam.cum_score = np.asarray(picks.scores, dtype=np.float32)
    beam.cum_logp = new_logp.astype(np.float32)
    beam.cum_reward = np.asarray(new_reward, dtype=np.float64)
    beam.sequences = [beam.sequences[p] + [t] for p, t in zip(picks.rows, picks.ids, strict=True)]
    row_of = np.repeat(picks.live, width).tolist()
    if rules.use_templates:
        beam.places = [
            template.advance(beam.places[p], t)
            if (template := rules.templates[sentence]) is not None and c
            else beam.places[p]
            for p, t, c, sentence in zip(picks.rows, picks.ids, picks.counted, row_of, strict=True)
        ]
    if rules.track_used:
        tables = rules.rewards
        beam.used = [
            table.produced(beam.used[p], seq) if (table := tables[sentence]) else beam.used[p]
            for p, seq, sentence in zip(picks.rows, beam.sequences, row_of, strict=True)
        ]
    beam.live = np.asarray(picks.live, dtype=np.int64)
    beam.rows_per_sentence = width


def _apply_prefix(
    prefix: Sequence[int],
    step: int,
    token_ids: np.ndarray,
    origins: np.ndarray,
    scores: np.ndarray,
    first_row: int,
    end_id: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CTranslate2's update_sample_with_prefix on one sentence's candidates (step <= prefix
    length): the prefix token everywhere while step < its length (the first candidate at 0, the
    rest at -1e10, all from the sentence's first row); right after it, a </s> other than the
    first candidate becomes token 0 at -1e10."""
    token_ids, origins, scores = token_ids.copy(), origins.copy(), scores.copy()
    if step < len(prefix):
        token_ids[:] = prefix[step]
        scores[:] = np.float32(-1e10)
        scores[0] = np.float32(0)
        origins[:] = first_row
        return token_ids, origins, scores
    for k in range(1, len(token_ids)):
        if token_ids[k] == end_id:
            token_ids[k] = 0
            scores[k] = np.float32(-1e10)
            origins[k] = first_row
    return token_ids, origins, scores


def _sentence_caps(
    max_lengths: Sequence[int] | None, batch_size: int, options: SearchOptions
) -> np.ndarray:
    if max_lengths is None:
        return np.full(batch_size, options.max_length, dtype=np.int64)
    if len(max_lengths) != batch_size:
        raise InvalidInput("one max length per sentence is required", field="max_lengths")
    caps = np.minimum(np.asarray(max_lengths, dtype=np.int64), options.max_length)
    if (caps < max(options.min_length, 1)).any():
        raise InvalidInput(
            "every max length must be at least 1 and at least min_length", field="max_lengths"
        )
    return caps


def top_candidates(
    scores: np.ndarray,
    cum_scores: np.ndarray,
    num_groups: int,
    k: int,
    group_size: int = 32,
) -> tuple[np.ndarray, np.ndarray]:
    """The k best (row, token) candidates of each sentence by cum_scores[row] + scores[row, token].

    `scores` is [rows, vocab], the rows of a sentence contiguous ([num_groups * r, vocab]).
    Returns flat indices (local row * vocab + token) and their totals (float32), best first, the
    lower index first on ties: CTranslate2's ordering.

    A full sort of rows x vocab per step would cost as much as the model's output layer. The
    tokens are split into strided groups of `group_size`; a candidate of the top k lies in a
    group whose maximum is among the k best group maxima (k better maxima would be k better
    candidates), so only those k groups are searched. The result is exactly the full top k.
    """
    rows, vocab = scores.shape
    rows_per = rows // num_groups
    strides = vocab // group_size
    if strides < 2 * k or vocab < 4 * group_size:
        total = (cum_scores[:, None] + scores).reshape(num_groups, rows_per * vocab)
        flat = _top_k(total, k)
        return flat, np.take_along_axis(total, flat, axis=1)
    main = strides * group_size
    # group j of a row holds tokens j, j + strides, j + 2 * strides, ... (< main); one more
    # group holds the tail tokens main..vocab-1.
    maxima = scores[:, :main].reshape(rows, group_size, strides).max(axis=1)
    tail = vocab - main
    if tail:
        maxima = np.concatenate([maxima, scores[:, main:].max(axis=1, keepdims=True)], axis=1)
    per_row = maxima.shape[1]
    group_totals = (cum_scores[:, None] + maxima).reshape(num_groups, rows_per * per_row)
    best_groups = _top_k(group_totals, k)  # [num_groups, k]
    local_rows = best_groups // per_row
    group_ids = best_groups % per_row
    width = max(group_size, tail)
    offsets = np.arange(width)
    columns = group_ids[..., None] + strides * offsets  # [num_groups, k, width]
    valid = offsets < group_size
    is_tail = group_ids == strides
    columns = np.where(is_tail[..., None], main + offsets, columns)
    valid = np.where(is_tail[..., None], offsets < tail, valid[None, None, :])
    columns = np.where(valid, columns, 0)
    global_rows = local_rows + (np.arange(num_groups) * rows_per)[:, None]
    values = scores[global_rows[..., None], columns]
    totals = np.where(valid, cum_scores[global_rows][..., None] + values, -np.inf).astype(
        np.float32
    )
    flat_candidates = (local_rows[..., None] * vocab + columns).reshape(num_groups, -1)
    totals = totals.reshape(num_groups, -1)
    # Invalid slots get an index past every real one, so they sort last among equal -inf.
    flat_candidates = np.where(valid.reshape(num_groups, -1), flat_candidates, rows_per * vocab)
    order = _top_k_with_index(totals, flat_candidates, k)
    flat = np.take_along_axis(flat_candidates, order, axis=1)
    flat_totals = np.take_along_axis(totals, order, axis=1)
    # Where group maxima tie with the k-th best one, a group left out may hold a candidate of
    # a lower index tied with the k-th: those sentences are ranked over every token.
    kth = np.take_along_axis(group_totals, best_groups[:, -1:], axis=1)
    for group in np.flatnonzero((group_totals >= kth).sum(axis=1) > k):
        rows_of = slice(group * rows_per, (group + 1) * rows_per)
        total = (cum_scores[rows_of, None] + scores[rows_of]).reshape(1, -1)
        flat[group] = _top_k(total, k)[0]
        flat_totals[group] = total[0, flat[group]]
    return flat, flat_totals


def _top_k_with_index(values: np.ndarray, index: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best values per row, ties broken by the lower `index`."""
    order = np.lexsort((index, -values), axis=1)
    return order[:, :k]


def _top_k(total: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values per row, best first (lower index first on ties, also
    among the values tied with the k-th that do not all fit)."""
    if k >= total.shape[1]:
        part = np.tile(np.arange(total.shape[1]), (total.shape[0], 1))
    else:
        part = np.argpartition(-total, k - 1, axis=1)[:, :k]
        kth = np.take_along_axis(total, part, axis=1).min(axis=1)
        for row in np.flatnonzero((total >= kth[:, None]).sum(axis=1) > k):
            # argpartition keeps any of the tied values; the rule keeps the lowest indices
            above = np.flatnonzero(total[row] > kth[row])
            tied = np.flatnonzero(total[row] == kth[row])[: k - len(above)]
            part[row] = np.concatenate([above, tied])
    order = np.lexsort((part, -np.take_along_axis(total, part, axis=1)), axis=1)
    return np.take_along_axis(part, order, axis=1)


class _SparseReward:
    """lambda * reward of one step at the few (row, token) pairs that get one."""

    def __init__(self, keys: np.ndarray, values: np.ndarray, vocab_size: int) -> None:
        self.keys = keys  # sorted unique row * vocab_size + token
        self.values = values  # float32
        self.vocab_size = vocab_size

    def __bool__(self) -> bool:
        return bool(len(self.keys))

    def get_many(self, rows: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        wanted = rows * self.vocab_size + tokens
        pos = np.searchsorted(self.keys, wanted)
        pos = np.minimum(pos, len(self.keys) - 1)
        hit = self.keys[pos] == wanted
        return np.where(hit, self.values[pos], np.float32(0)).astype(np.float64)

    def get(self, row: int, token: int) -> float:
        return float(self.get_many(np.array([row]), np.array([token]))[0])


def _step_reward(
    rewards: Sequence[PieceReward | None],
    row_sentences: np.ndarray,
    sequences: list[list[int]],
    vocab_size: int,
    lam: np.float32,
    used: list[Mapping[tuple[int, ...], int]] | None = None,
    held: list[Held | None] | None = None,
) -> _SparseReward:
    """Algorithm 2 for all live rows: only tokens of L_X and known contexts are looked at.

    Rows of a sentence are contiguous and the rewarded ids of a table are sorted, so the keys
    come out sorted and unique without a sort."""
    all_keys: list[np.ndarray] = []
    all_vals: list[np.ndarray] = []
    start = 0
    n_rows = len(row_sentences)
    while start < n_rows:
        sentence = int(row_sentences[start])
        end = start
        while end < n_rows and row_sentences[end] == sentence:
            end += 1
        table = rewards[sentence]
        if table:
            dense = table.step_dense(
                sequences[start:end],
                used[start:end] if used is not None else None,
                held[start:end] if held is not None else None,
            )
            rows, cols = np.nonzero(dense)
            if len(rows):
                all_keys.append((rows + start) * vocab_size + table.rewarded_ids[cols])
                all_vals.append(dense[rows, cols])
        start = end
    if not all_keys:
        return _SparseReward(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), vocab_size)
    keys = np.concatenate(all_keys)
    sums = np.concatenate(all_vals)
    return _SparseReward(keys, (sums * float(lam)).astype(np.float32), vocab_size)


def _finalize(closed: list[Closed], options: SearchOptions) -> list[Hypothesis]:
    hypotheses = []
    for item in closed:
        norm = float(np.float32(item.length) ** np.float32(options.length_penalty))
        score = float(np.float32(item.raw_score) / np.float32(norm))
        hypotheses.append(
            Hypothesis(
                token_ids=item.token_ids,
                score=score,
                log_prob=item.log_prob,
                reward=item.reward,
                length=item.length,
                model_score=item.log_prob / norm,
            )
        )
    hypotheses.sort(key=lambda h: h.score, reverse=True)
    return hypotheses[: options.num_hypotheses]


def native_beam_search(
    translator: Any,
    inputs: Sequence[Sequence[str]],
    options: SearchOptions,
    width: int | None = None,
    num_hypotheses: int = 1,
    prefixes: Sequence[Sequence[str]] | None = None,
) -> list[Any]:
    """CTranslate2's own `translate_batch` under these options (the unguided baseline, and the
    n-best that reranking rescores): beam `width` (default the beam size), with scores;
    `prefixes`: each output's forced first tokens (kept in the output)."""
    return list(
        translator.translate_batch(
            [list(x) for x in inputs],
            target_prefix=[list(p) for p in prefixes] if prefixes and any(prefixes) else None,
            beam_size=width or options.beam_size,
            num_hypotheses=num_hypotheses,
            patience=options.patience,
            length_penalty=options.length_penalty,
            max_decoding_length=options.max_length,
            min_decoding_length=options.min_length,
            return_scores=True,
        )
    )
