"""Guided translation of sentences with a bundle and a translation memory store.

For each sentence: collect translation pieces from the memories (tm_guide.pieces), then decode
with the piece reward inside the beam search. Sentences for which no piece was found (or lambda=0)
go straight to CTranslate2's native beam search, which the guided search reproduces exactly in
that case anyway, so nothing is lost by skipping it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from copy import copy
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from typing import Any

from tm_guide.decoding.candidates import CandidateStepDecoder
from tm_guide.decoding.engines import (
    AUTO,
    ENGINES,
    NATIVE,
    EngineChoice,
    EngineRequest,
    choose_engine,
    engine_spec,
    make_decoder,
)
from tm_guide.decoding.rerank import rerank_search
from tm_guide.decoding.rewards import PieceReward
from tm_guide.decoding.search import (
    Hypothesis,
    SearchOptions,
    StepDecoder,
    WholeSearchDecoder,
    beam_search,
    native_beam_search,
)
from tm_guide.decoding.template import TargetTemplate
from tm_guide.decoding.utf8 import Utf8Rule, byte_ids
from tm_guide.errors import InvalidInput, ModelError
from tm_guide.pieces.builder import PieceOptions
from tm_guide.pieces.choice import Candidate, Choice, ChoiceOptions, choose
from tm_guide.pieces.cut_words import cut_completions
from tm_guide.pieces.repair import continuation_mask, without_edge_marks
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.text.edits import Edited

__all__ = [
    "ENGINES",
    "EngineOptions",
    "GuidedResult",
    "GuidedTranslator",
    "MatchedPiece",
    "PreparedSentence",
    "Searched",
    "TranslateOptions",
]
log = logging.getLogger(__name__)
# the most completions of cut words scored for one output (tm_guide.pieces.cut_words)
MAX_COMPLETIONS = 4


# an engine made for a translator: name, device, int8, compute type, ranking on its device
_EngineKey = tuple[str, str, bool, str, bool | None]


@dataclass(frozen=True)
class EngineOptions:
    """Which engine decodes and on what; with an exact engine none of this changes the output.

    engine: an engine of the registry (tm_guide.decoding.engines: the compiled one, PyTorch's,
        CTranslate2's steps, or CTranslate2's n-best reranked), or "auto", the fastest exact
        engine for the model here. batch_size: sentences per engine call. threads: threads one
    batch decodes on (torch intra-op threads, the fused engine's products and attention rows);
    0 = torch's own setting, one thread for the fused engine. quantize: the torch engine's int8
    linear layers on CPU (None = when the bundle is int8). rerank_width: n-best size of the
    reranking engine (0 = beam_size). compute_type: what the torch engine computes in (auto:
    float16 on CUDA, float32 on the CPU; float32, float16, bfloat16). rank_on_device: the torch
    engine ranks the search's candidates where it computes and sends back only those (None: on
    a GPU; True on the CPU runs the GPU's way there, as the tests do to hold the two equal).
    """

    engine: str = AUTO
    device: str = "cpu"
    batch_size: int = 32
    threads: int = 0
    quantize: bool | None = None
    rerank_width: int = 0
    compute_type: str = "auto"
    rank_on_device: bool | None = None

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InvalidInput(
                f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}", field="engine"
            )
        if self.batch_size < 1:
            raise InvalidInput("batch_size must be at least 1", field="batch_size")
        if self.rerank_width < 0 or self.threads < 0:
            raise InvalidInput("rerank_width and threads must be >= 0", field="rerank_width")


@dataclass(frozen=True)
class TranslateOptions:
    """One guided translation request, composed of what each stage takes.

    search: the beam search and eq. 10 (lambda, beam size, lengths; tm_guide.decoding.search).
    pieces: piece collection (M, minimum similarity, binary reward; tm_guide.pieces); its max_n
        is the translator's (the model's), not the request's. memory_ids: memories to draw
        pieces from. engine: which engine decodes (EngineOptions).
    max_length_ratio, max_length_margin: cap each output at ratio * source length + margin
        (ratio 0 = no cap): a weak model's runaway outputs otherwise decode all max_length steps.
        The guided search caps each sentence by its own source; native search (rerank's n-best
        too) by the longest source of its batch, as CTranslate2's max_decoding_length is one per
        batch. return_unguided: also decode each guided sentence without pieces.
    choice: when a sentence's close match gives candidates to compare, and how the one served
        is chosen (tm_guide.pieces.choice).
    languages: the (source, target) pair to translate, for a multilingual model's language tokens
        (None: the model card's pair; a model of one pair ignores it).
    complete_cut_words: a guided output that writes the beginning of a memory target's word as
        a word is served with the word whole where the search's objective scores that higher
        (tm_guide.pieces.cut_words): the search can prune a word before its last piece's reward.
    """

    search: SearchOptions = field(default_factory=SearchOptions)
    pieces: PieceOptions = field(default_factory=PieceOptions)
    engine: EngineOptions = field(default_factory=EngineOptions)
    memory_ids: tuple[int, ...] = ()
    max_length_ratio: float = 0.0
    max_length_margin: int = 10
    return_unguided: bool = False
    languages: tuple[str, str] | None = None
    choice: ChoiceOptions = field(default_factory=ChoiceOptions)
    complete_cut_words: bool = True

    def __post_init__(self) -> None:
        for name in ("beam_size", "max_length"):
            if getattr(self.search, name) < 1:
                raise InvalidInput(f"{name} must be at least 1", field=name)
        if not 0 <= self.search.lam < math.inf:  # NaN too: it would turn guidance off unseen
            raise InvalidInput("lam must be a finite number >= 0", field="lam")
        if self.max_length_ratio < 0 or self.max_length_margin < 0:
            raise InvalidInput(
                "max_length_ratio and max_length_margin must be >= 0", field="max_length_ratio"
            )

    def output_cap(self, source_length: int, prefix_length: int = 0) -> int:
        """The most tokens the search writes for a source of `source_length` tokens, under
        max_length_ratio (a forced prefix counts in it, as in max_decoding_length)."""
        search = self.search
        if self.max_length_ratio <= 0:
            return search.max_length
        own = math.ceil(self.max_length_ratio * source_length) + self.max_length_margin
        return min(search.max_length, max(own, search.min_length, 1) + prefix_length)

    def decoding(self) -> TranslateOptions:
        """These options without what only the piece collection reads: requests whose
        decoding() is equal can share one engine call (the server's micro-batching)."""
        return replace(self, pieces=PieceOptions(), memory_ids=())


@dataclass
class MatchedPiece:
    """A translation piece that occurs in the output, with the TM segments it came from."""

    tokens: tuple[str, ...]
    start: int  # token position in the output
    score: float  # D_X of the piece
    segment_ids: list[int]


@dataclass
class GuidedResult:
    translation: str
    tokens: list[str]
    model_score: float  # log P(Y|X) / length ** length_penalty, the reward left out
    log_prob: float  # log P(Y|X), </s> included
    reward: float  # total lambda * reward collected along the output
    guided: bool  # False when the sentence went to native beam search (no pieces or lambda=0)
    engine: str
    unguided_translation: str | None = None
    matched_pieces: list[MatchedPiece] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds: retrieval, pieces, decoding
    best_match_similarity: float | None = None
    repaired_segment: int | None = None  # the TM segment whose target the output repairs
    # where each token starts in `translation`, plus its length, when the text is not the plain
    # detokenization of `tokens` (a repaired match keeps its target's own characters, a
    # translation the source's where the normalizer changed them); unknown (None) too for a
    # match served as it is, whose text may not be its tokens' detokenization
    offsets: list[int] | None = None
    # the candidates of a close match and the one served (TranslateOptions.choice)
    choice: Choice | None = None


@dataclass(frozen=True)
class Alternative:
    """A candidate searched beside a sentence's own search: its kind (choice.CANDIDATE_KINDS;
    "served" and "completed" for an output and its cut words' completions, scored forced), the
    reward and the template it is searched with, and the TM segment it comes from."""

    kind: str
    reward: PieceReward | None
    template: TargetTemplate | None
    segment_id: int | None = None


@dataclass
class PreparedSentence:
    """A sentence ready for the search: its text and source tokens, the pieces collected for it
    and what the search makes of them (None for a sentence that goes to native search)."""

    source: str
    tokens: list[str]
    pieces: Any  # TranslationPieces or None
    reward: PieceReward | None
    template: TargetTemplate | None
    timings: dict[str, float]  # seconds: retrieval, pieces
    # the other candidates of a close match (TranslateOptions.choice); the native search too
    alternatives: tuple[Alternative, ...] = ()
    # what the model reads where it is not `tokens`: the sentence without the marks at its
    # edges that it cannot read (Bundle.edges; its translation gets them back)
    decoded: list[str] | None = None


@dataclass(frozen=True)
class Searched:
    """What the search found for one prepared sentence: the output hypothesis (None for an
    empty input), whether the guided search made it, the native search's when it ran, this
    sentence's share of its engine call (seconds), and the forced target prefix's length."""

    hypothesis: Hypothesis | None
    guided: bool
    unguided: Hypothesis | None
    decoding_s: float
    engine: str
    prefix_length: int
    alternatives: tuple[tuple[Alternative, Hypothesis], ...] = ()


@dataclass(frozen=True)
class _Plan:
    """What every batch of one search call shares: the options, the engine, the source
    language, the target prefix (tokens and ids), the sentences' tokens and the search options
    with the model's length bound."""

    options: TranslateOptions
    engine: str
    source_lang: str | None
    prefix: list[str]
    prefix_ids: list[int]
    sources: list[Sequence[str]]
    search: SearchOptions


@dataclass
class _GuidedFound:
    """The guided searches' results by sentence: its own best hypothesis, its alternatives'
    (alternative, best), its decoding seconds, and the sentences no output was found for."""

    hypotheses: dict[int, Hypothesis] = field(default_factory=dict)
    alternatives: dict[int, list[tuple[Alternative, Hypothesis]]] = field(default_factory=dict)
    decoding: dict[int, float] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)


class GuidedTranslator:
    """Loads engines lazily and answers translate(sentences, options)."""

    def __init__(self, bundle: Any, store: Any = None, piece_options: Any = None) -> None:
        self.bundle = bundle
        self.store = store
        self.piece_options = piece_options
        self.target_vocabulary: list[str] = list(bundle.vocabularies.target)
        self.token_to_id = {token: i for i, token in enumerate(self.target_vocabulary)}
        self._builder: Any = None
        self._engines: dict[_EngineKey, StepDecoder | WholeSearchDecoder] = {}
        self._refused: dict[_EngineKey, ModelError] = {}
        self._choices: dict[str, EngineChoice] = {}
        # the target tokens that continue a word, which may finish one past a template's gap
        self.continues = continuation_mask(self.target_vocabulary)
        self._lock = threading.Lock()  # engines and the builder are made once, on first use

    # -- pieces -------------------------------------------------------------------------
    def collect_pieces(self, source_tokens: Sequence[str], options: TranslateOptions) -> Any:
        """TranslationPieces for one sentence, or None when there is no store/memory to ask."""
        if self.store is None or not options.memory_ids or not source_tokens:
            return None
        from tm_guide.pieces import PieceBuilder

        base = self.piece_options or PieceOptions()
        piece_options = replace(options.pieces, max_n=base.max_n)
        with self._lock:
            if self._builder is None:
                self._builder = PieceBuilder(self.store, self.bundle, base)
        return self._builder.collect(list(source_tokens), list(options.memory_ids), piece_options)

    # -- engines ------------------------------------------------------------------------
    def engine_name(self, options: TranslateOptions) -> str:
        """The engine `options` lead to: the one named, or for "auto" the engine registry's
        choice for this model and device (made once, logged once)."""
        if options.engine.engine != AUTO:
            return options.engine.engine
        return self.engine_choice(options.engine.device).engine

    def engine_choice(self, device: str = "cpu") -> EngineChoice:
        """What "auto" runs on `device`, and why (tm_guide.decoding.engines)."""
        with self._lock:
            if device not in self._choices:
                choice = choose_engine(self.bundle.path, self.bundle.card.quantization, device)
                log.info("guided decoding engine: %s", choice.describe())
                for engine, why in choice.passed_over:
                    log.info("guided decoding passes over the %s engine: %s", engine, why)
                self._choices[device] = choice
            return self._choices[device]

    def step_decoder(
        self, engine: str, options: TranslateOptions
    ) -> StepDecoder | WholeSearchDecoder:
        device = engine_spec(engine).resolve_device(options.engine.device)
        quantize = options.engine.quantize
        if quantize is None:
            quantize = device == "cpu" and self.bundle.card.quantization.startswith("int8")
        key = (
            engine,
            device,
            bool(quantize),
            options.engine.compute_type,
            options.engine.rank_on_device,
        )
        with self._lock:
            if key in self._refused:  # a model an engine cannot run is not read again
                raise self._refused[key]
            if key not in self._engines:
                try:
                    self._engines[key] = self._make_engine(key, options)
                except ModelError as exc:
                    self._refused[key] = exc
                    raise
            return self._engines[key]

    def _make_engine(
        self, key: _EngineKey, options: TranslateOptions
    ) -> StepDecoder | WholeSearchDecoder:
        engine, device, quantize, compute_type, rank_on_device = key
        request = EngineRequest(
            self.bundle,
            self.target_vocabulary,
            device,
            options.engine.threads,
            quantize,
            compute_type,
            rank_on_device,
        )
        return make_decoder(engine, request)  # type: ignore[no-any-return]

    # -- translation ----------------------------------------------------------------------
    def translate(
        self,
        sentences: Sequence[str],
        options: TranslateOptions,
        pieces: Sequence[Any] | None = None,
    ) -> list[GuidedResult]:
        """Translate `sentences`; `pieces` (one TranslationPieces or None per sentence) skips
        retrieval, e.g. when they were collected beforehand."""
        prepared = self.prepare(sentences, options, pieces)
        return self.finish(prepared, self.search(prepared, options), options)

    def prepare(
        self,
        sentences: Sequence[str],
        options: TranslateOptions,
        pieces: Sequence[Any] | None = None,
    ) -> list[PreparedSentence]:
        """The first of translate's three stages: tokens, pieces, reward and template of each
        sentence. Apart from search() so that a server prepares each request in its own thread
        and its decoding thread runs nothing but searches. Given pieces carry the tokens they
        were collected for, which are the sentence's: it is not tokenized again."""
        if pieces is not None and len(pieces) != len(sentences):
            raise InvalidInput("pieces must hold one entry per sentence", field="pieces")
        clock = time.perf_counter
        prepared = []
        for index, sentence in enumerate(sentences):
            given = pieces[index] if pieces is not None else None
            tokens = given.tokens if given is not None else self.bundle.encode_source(sentence)
            started = clock()
            found = given if pieces is not None else self.collect_pieces(tokens, options)
            spent = clock() - started
            retrieval = found.timings.get("retrieval", 0.0) if found is not None else 0.0
            timings = {"retrieval": retrieval, "pieces": max(spent - retrieval, 0.0)}
            edges = self.bundle.edges(sentence)
            marks = self.bundle.mark_pieces(edges) if edges.cut else frozenset()
            if marks and found is not None and found.template is not None:
                # the model reads the sentence without its edge marks: so does its template
                found = copy(found)
                found.template = without_edge_marks(found.template, marks)
            template = None  # lambda 0 is the model alone: native search, no repair either
            if found is not None and found.template is not None and options.search.lam > 0:
                template = TargetTemplate.from_tokens(
                    found.template.tokens,
                    found.template.gaps,
                    self.token_to_id,
                    self.continues if found.template.word_rules else None,
                    found.template.overrun,
                    found.template.lookahead,
                    found.template.least,
                )
            decoded = self.bundle.encode_source(edges.core) if edges.cut else None
            reward = None
            if found and options.search.lam > 0:
                ngrams = found.ngrams
                if marks:  # pieces that write the marks put them where the model likes
                    ngrams = {g: v for g, v in ngrams.items() if marks.isdisjoint(g)}
                reward = PieceReward.from_tokens(
                    ngrams, self.token_to_id, limits=found.limits or None
                )
            reward = reward or None
            alternatives = self._alternatives(found, reward, template, options)
            prepared.append(
                PreparedSentence(
                    sentence, tokens, found, reward, template, timings, alternatives, decoded
                )
            )
        return prepared

    def _alternatives(
        self,
        found: Any,
        reward: PieceReward | None,
        template: TargetTemplate | None,
        options: TranslateOptions,
    ) -> tuple[Alternative, ...]:
        """The candidates a close match gives beside the sentence's own search: its target as it
        is (forced: a template without gaps), and the guided translation where the own search is
        the repair. None where the choice does not apply."""
        if found is None or not found.matches or options.search.lam <= 0:
            return ()
        best = _best_match(found)
        if not options.choice.applies(best.similarity):
            return ()
        alternatives = []
        pieces, _ = self.bundle.target_surfaces(best.segment.target)
        room = self.bundle.decoding_length(options.search.max_length) - 1
        prefix = len(self.bundle.target_prefix((options.languages or (None, None))[1]))
        forced = TargetTemplate.from_tokens(pieces, [0] * (len(pieces) + 1), self.token_to_id)
        if forced is not None and prefix + len(pieces) <= room:
            alternatives.append(Alternative("match", None, forced, best.segment.id))
        if template is not None and reward is not None:
            alternatives.append(Alternative("guided", reward, None))
        return tuple(alternatives)

    def search(
        self, prepared: Sequence[PreparedSentence], options: TranslateOptions
    ) -> list[Searched]:
        """The second stage: the guided search of the sentences with a reward or a template,
        native beam search of the others (and of all with return_unguided), in batches of
        similar length. The options must be those the sentences were prepared with, except for
        the pieces and memories (TranslateOptions.decoding())."""
        plan = self._plan(prepared, options)
        guided_ids = [
            i
            for i, p in enumerate(prepared)
            if (p.reward is not None or p.template is not None) and p.tokens
        ]
        guided_set = set(guided_ids)
        native_ids = [i for i, p in enumerate(prepared) if i not in guided_set and p.tokens]
        # each search: (sentence, alternative or None for the sentence's own)
        jobs: list[tuple[int, Alternative | None]] = [(i, None) for i in guided_ids]
        choosing = [i for i, p in enumerate(prepared) if p.alternatives and p.tokens]
        if options.choice.threshold is not None:
            jobs += [(i, alt) for i in choosing for alt in prepared[i].alternatives]
        else:
            choosing = []
        found = self._guided_jobs(plan, prepared, jobs)
        if options.complete_cut_words:
            self._complete_cut_words(plan, prepared, found)
        wanted = native_ids + (guided_ids if options.return_unguided else [])
        wanted = sorted(set(wanted) | set(choosing) | found.lost)
        # a sentence choosing among candidates counts its native search as one of them
        unguided = self._unguided_batches(plan, wanted, set(choosing), found.decoding)
        return [
            Searched(
                found.hypotheses.get(i) or unguided.get(i),
                i in found.hypotheses,
                unguided.get(i),
                found.decoding.get(i, 0.0),
                plan.engine,
                len(plan.prefix),
                tuple(found.alternatives.get(i, ())),
            )
            for i in range(len(prepared))
        ]

    def _plan(self, prepared: Sequence[PreparedSentence], options: TranslateOptions) -> _Plan:
        engine = self.engine_name(options)
        source_lang, target_lang = options.languages or (None, None)
        prefix = self.bundle.target_prefix(target_lang)
        search = options.search
        return _Plan(
            options=options,
            engine=engine,
            source_lang=source_lang,
            prefix=list(prefix),
            prefix_ids=[self.token_to_id[t] for t in prefix],
            sources=[p.tokens if p.decoded is None else p.decoded for p in prepared],
            # The model's position table bounds the output; CTranslate2 fails the batch past it.
            search=replace(search, max_length=self.bundle.decoding_length(search.max_length)),
        )

    def _guided_jobs(
        self,
        plan: _Plan,
        prepared: Sequence[PreparedSentence],
        jobs: Sequence[tuple[int, Alternative | None]],
    ) -> _GuidedFound:
        """Each job's guided search (a sentence's own, or one of its alternatives), in batches
        of similar length, with each sentence's share of the decoding time."""
        found = _GuidedFound()
        job_sources = [plan.sources[i] for i, _ in jobs]
        batch_size = plan.options.engine.batch_size
        for job_batch in _batches(list(range(len(jobs))), job_sources, batch_size):
            started = time.perf_counter()
            batch = [jobs[j][0] for j in job_batch]
            alts = [jobs[j][1] for j in job_batch]
            results = self._guided_batch(plan, prepared, batch, alts)
            share = (time.perf_counter() - started) / len(batch)
            for i, alt, best in zip(batch, alts, results, strict=True):
                found.decoding[i] = found.decoding.get(i, 0.0) + share
                if not best:  # no output the template allows: the native search answers
                    log.warning("a guided search found no output; the model's own is served")
                    found.lost.add(i)
                elif alt is None:
                    found.hypotheses[i] = best[0]
                else:
                    found.alternatives.setdefault(i, []).append((alt, best[0]))
        return found

    def _complete_cut_words(
        self, plan: _Plan, prepared: Sequence[PreparedSentence], found: _GuidedFound
    ) -> None:
        """Each guided output that cuts a memory target's word short (tm_guide.pieces.cut_words)
        becomes its best completion where the search's objective scores that higher. Both are
        scored the same way, forced with the sentence's reward and no template: a completed
        word may be longer than its gap allowed."""
        room = plan.search.max_length - 1 - len(plan.prefix)
        jobs: list[tuple[int, Alternative | None]] = []
        for i, hypothesis in found.hypotheses.items():
            one = prepared[i]
            if one.pieces is None or one.reward is None:
                continue
            output = self._tokens(hypothesis, len(plan.prefix))
            # encoded only once the output has a word that may be cut
            targets = (self.bundle.encode_target(t) for t in _targets(one.pieces))
            completions = cut_completions(output, targets, one.pieces.ngrams, MAX_COMPLETIONS)
            if not completions:
                continue
            kinds = [("served", tuple(output))] + [("completed", c) for c in completions]
            for kind, tokens in kinds:
                forced = TargetTemplate.from_tokens(
                    tokens, [0] * (len(tokens) + 1), self.token_to_id
                )
                if forced is not None and len(tokens) <= room:
                    jobs.append((i, Alternative(kind, one.reward, forced)))
        if not jobs:
            return
        # a template without gaps allows one token per step: a beam of 1 scores it alike
        forced_plan = replace(plan, search=replace(plan.search, beam_size=1))
        scored = self._guided_jobs(forced_plan, prepared, jobs)
        for i, alternatives in scored.alternatives.items():
            found.decoding[i] = found.decoding.get(i, 0.0) + scored.decoding.get(i, 0.0)
            served = [h.score for alt, h in alternatives if alt.kind == "served"]
            completed = [h for alt, h in alternatives if alt.kind == "completed"]
            best = max(completed, key=lambda h: h.score, default=None)
            if served and best is not None and best.score > served[0]:
                found.hypotheses[i] = best

    def _guided_batch(
        self,
        plan: _Plan,
        prepared: Sequence[PreparedSentence],
        batch: Sequence[int],
        alts: Sequence[Alternative | None],
    ) -> list[list[Hypothesis]]:
        """One batch's guided searches: rewards and templates of each sentence (or of its
        alternative), each output capped by its source's length or its template's."""
        search, options, spec = plan.search, plan.options, engine_spec(plan.engine)
        inputs = [self.bundle.source_input(plan.sources[i], plan.source_lang) for i in batch]
        rewards = [
            prepared[i].reward if alt is None else alt.reward
            for i, alt in zip(batch, alts, strict=True)
        ]
        templates = [
            prepared[i].template if alt is None else alt.template
            for i, alt in zip(batch, alts, strict=True)
        ]
        caps = [
            min(search.max_length, len(plan.prefix) + t.longest + 1) if t is not None else cap
            for cap, t in zip(
                _output_caps(search, options, inputs, len(plan.prefix)), templates, strict=True
            )
        ]
        if spec.reranks and not any(templates):  # native n-best: one cap
            return rerank_search(
                self.bundle.translator,
                inputs,
                replace(search, max_length=max(caps)),
                rewards,
                self.token_to_id,
                width=options.engine.rerank_width or None,
                prefixes=[plan.prefix] * len(batch),
            )
        # a template needs a step engine: a reranking engine's batch takes another's
        return beam_search(
            self.step_decoder(spec.stepper, options),
            inputs,
            search,
            rewards,
            max_lengths=caps,
            prefixes=[plan.prefix_ids] * len(batch),
            templates=templates,
        )

    def _unguided_batches(
        self,
        plan: _Plan,
        wanted: Sequence[int],
        timed_with_others: set[int],
        decoding: dict[int, float],
    ) -> dict[int, Hypothesis]:
        """The unguided translations of `wanted`, in batches of similar length; a sentence's
        share of the time is added to `decoding` where it has no guided search, or where the
        native search is one of its candidates (`timed_with_others`)."""
        unguided: dict[int, Hypothesis] = {}
        batch_size = plan.options.engine.batch_size
        for batch in _batches(list(wanted), plan.sources, batch_size):
            started = time.perf_counter()
            inputs = [self.bundle.source_input(plan.sources[i], plan.source_lang) for i in batch]
            native = self.unguided_search(
                inputs, plan.search, plan.options, plan.engine, plan.prefix, plan.prefix_ids
            )
            share = (time.perf_counter() - started) / len(batch)
            for i, top in zip(batch, native, strict=True):
                unguided[i] = top
                if i in timed_with_others or i not in decoding:
                    decoding[i] = decoding.get(i, 0.0) + share
        return unguided

    def finish(
        self,
        prepared: Sequence[PreparedSentence],
        searched: Sequence[Searched],
        options: TranslateOptions,
    ) -> list[GuidedResult]:
        """The last stage: each search's output as text (a repaired match in its target's own
        characters), with the pieces it used and the time of every stage."""
        results = []
        for one, outcome in zip(prepared, searched, strict=True):
            timings = {**one.timings, "decoding": outcome.decoding_s}
            hypothesis = outcome.hypothesis
            if hypothesis is None:  # empty input
                del timings["decoding"]
                results.append(
                    GuidedResult("", [], 0.0, 0.0, 0.0, False, outcome.engine, timings=timings)
                )
                continue
            output = hypothesis.token_ids[outcome.prefix_length :]
            tokens = [self.target_vocabulary[t] for t in output]
            found = one.pieces
            timings["total"] = sum(timings.values())
            template = one.template if outcome.guided else None
            # the memory's typography where the memory guided it; native search is the model's
            targets = _targets(found) if outcome.guided else []
            # the TM pair a template repairs (None: a template of glossary terms)
            repaired = found.template.segment_id if template is not None else None
            rendered = None
            if template is not None and repaired is not None:
                rendered = self._render_repair(tokens, template.follow(output), found)
            text, offsets = self._spelled(one.source, tokens, targets, rendered)
            unguided = outcome.unguided
            result = GuidedResult(
                translation=text,
                tokens=tokens,
                model_score=hypothesis.model_score,
                log_prob=hypothesis.log_prob,
                reward=hypothesis.reward,
                guided=outcome.guided,
                engine=outcome.engine if outcome.guided else NATIVE,
                unguided_translation=(
                    self._text(one.source, unguided.token_ids)
                    if options.return_unguided and unguided is not None
                    else None
                ),
                matched_pieces=matched_pieces(tokens, found) if found else [],
                timings=timings,
                best_match_similarity=(
                    max((m.similarity for m in found.matches), default=None) if found else None
                ),
                repaired_segment=repaired,
                offsets=offsets,
            )
            if outcome.alternatives and outcome.guided and unguided is not None:
                result = self._chosen(one.source, result, outcome, found, options.choice)
            results.append(result)
        return results

    def _tokens(self, hypothesis: Hypothesis, prefix_length: int) -> list[str]:
        return [self.target_vocabulary[t] for t in hypothesis.token_ids[prefix_length:]]

    def _text(self, source: str, token_ids: Sequence[int]) -> str:
        return self._spelled(source, [self.target_vocabulary[t] for t in token_ids])[0]

    def _spelled(
        self,
        source: str,
        tokens: list[str],
        targets: Sequence[str] = (),
        rendered: tuple[str, list[int] | None] | None = None,
    ) -> tuple[str, list[int] | None]:
        """The translation of `source` that `tokens` spell (or `rendered`, a repair's text and
        offsets: _render_repair), set right by Bundle.set_right (the source's and the memory's
        characters, no word written twice over); with where each token starts in it (as
        GuidedResult.offsets) when that is not the plain detokenization."""
        text, offsets = (
            rendered if rendered is not None else (self.bundle.decode_target(tokens), None)
        )
        steps = self.bundle.set_right(source, text, targets)
        if not any(step.edits for step in steps):
            return text, offsets
        if rendered is None:
            offsets = self.bundle.target_offsets(tokens)
        return steps[-1].text, _moved(steps, offsets)

    def _chosen(
        self,
        source: str,
        result: GuidedResult,
        outcome: Searched,
        found: Any,
        options: ChoiceOptions,
    ) -> GuidedResult:
        """`result` (the sentence's own search) or the candidate the choice serves instead."""
        own_kind = "repaired" if result.repaired_segment is not None else "guided"
        candidates = [Candidate(own_kind, result.translation, result.model_score)]
        assert outcome.hypothesis is not None  # an empty input has no candidates
        assert outcome.unguided is not None
        hypotheses: dict[str, Hypothesis] = {own_kind: outcome.hypothesis}
        # each candidate's text and offsets; a match is served as its target is written (its
        # spans: see GuidedResult.offsets), the unguided translation is the model's alone
        spelled: dict[str, tuple[str, list[int] | None]] = {}
        kinds = [(a.kind, a.segment_id, h) for a, h in outcome.alternatives]
        for kind, segment_id, hypothesis in [*kinds, ("unguided", None, outcome.unguided)]:
            if kind == "match":
                target = next(m.segment.target for m in found.matches if m.segment.id == segment_id)
                spelled[kind] = (target, None)
            else:
                targets = _targets(found) if kind != "unguided" else ()
                tokens = self._tokens(hypothesis, outcome.prefix_length)
                spelled[kind] = self._spelled(source, tokens, targets)
            candidates.append(Candidate(kind, spelled[kind][0], hypothesis.model_score))
            hypotheses[kind] = hypothesis
        choice = choose(candidates, options)
        if choice.chosen.kind == own_kind:
            return replace(result, choice=choice)
        chosen = hypotheses[choice.chosen.kind]
        tokens = self._tokens(chosen, outcome.prefix_length)
        offsets = spelled[choice.chosen.kind][1]
        return replace(
            result,
            translation=choice.chosen.text,
            tokens=tokens,
            model_score=chosen.model_score,
            log_prob=chosen.log_prob,
            reward=chosen.reward,
            guided=choice.chosen.kind == "guided",
            engine=result.engine if choice.chosen.kind == "guided" else NATIVE,
            matched_pieces=matched_pieces(tokens, found) if found else [],
            repaired_segment=None,
            offsets=offsets,
            choice=choice,
        )

    def _render_repair(
        self, tokens: list[str], which: list[int | None], found: Any
    ) -> tuple[str, list[int] | None]:
        """The output of a repaired match, its kept tokens in the match target's own
        characters (the SentencePiece normalizer may have changed them: "…" to "..."). Where
        the kept tokens are no longer the target's pieces at their positions (a code word the
        input changed was changed in the match: tm_guide.pieces.code_words), those that are
        the target's, in order, keep its characters, and the others are detokenized."""
        template = found.template
        target = next(
            m.segment.target for m in found.matches if m.segment.id == template.segment_id
        )
        pieces, surfaces = self.bundle.target_surfaces(target)
        kept = list(template.tokens)
        positions = zip(template.positions, kept, strict=True)
        exact = all(p < len(pieces) and pieces[p] == t for p, t in positions)
        if exact:
            at = dict(enumerate(template.positions))
        else:
            blocks = SequenceMatcher(None, pieces, kept, autojunk=False).get_matching_blocks()
            at = {b + i: a + i for a, b, size in blocks for i in range(size)}
        own = [surfaces[at[k]] if k is not None and k in at else None for k in which]
        # a kept mark the match wrote with no space before the piece after it ("=" of
        # "=KALENDERWOCHE"): what the model writes next is written on to it. Only where each
        # kept token is known to be the target's own piece at its position: a match block
        # found again may take the "." of "4.3." for the other one
        attached = [
            exact
            and k is not None
            and at[k] + 1 < len(pieces)
            and _attached(surfaces[at[k]], pieces[at[k] + 1], surfaces[at[k] + 1])
            for k in which
        ]
        rendered: tuple[str, list[int] | None] = self.bundle.render_target(tokens, own, attached)
        return rendered

    def utf8_rule(self) -> Utf8Rule | None:
        """The byte-piece rule of this model's vocabulary (None without byte fallback)."""
        return Utf8Rule.for_vocabulary(byte_ids(self.token_to_id), len(self.token_to_id))

    def _valid_utf8(
        self,
        found: list[Hypothesis],
        inputs: Sequence[Sequence[str]],
        search: SearchOptions,
        options: TranslateOptions,
        engine: str,
        prefix_ids: Sequence[int],
    ) -> list[Hypothesis]:
        """CTranslate2's outputs, each one whose byte pieces are not valid UTF-8 searched again
        by the engine's own search at lambda 0, which keeps them valid (tm_guide.decoding.utf8)."""
        rule = self.utf8_rule()
        broken = [k for k, hyp in enumerate(found) if rule and not rule.valid(hyp.token_ids)]
        if not broken:
            return found
        redo_inputs = [inputs[k] for k in broken]
        again = beam_search(
            self.step_decoder(engine_spec(engine).stepper, options),
            redo_inputs,
            replace(search, lam=0.0),
            None,
            max_lengths=_output_caps(search, options, redo_inputs, len(prefix_ids)),
            prefixes=[list(prefix_ids)] * len(broken),
        )
        fixed = list(found)
        for k, best in zip(broken, again, strict=True):
            fixed[k] = best[0]
        return fixed

    def unguided_search(
        self,
        inputs: Sequence[Sequence[str]],
        search: SearchOptions,
        options: TranslateOptions,
        engine: str,
        prefix: Sequence[str],
        prefix_ids: Sequence[int],
    ) -> list[Hypothesis]:
        """The sentences' unguided translations: where the engine decodes on a GPU (it ranks on
        its device), its own search at lambda 0, which is the native beam search rule for rule
        and keeps CTranslate2 off the GPU; else CTranslate2's, valid UTF-8 by _valid_utf8."""
        stepper = engine_spec(engine).stepper
        on_device = options.engine.rank_on_device or (
            engine_spec(stepper).resolve_device(options.engine.device) != "cpu"
        )
        # on the CPU no engine is made only to be asked: CTranslate2 answers there
        decoder = self.step_decoder(stepper, options) if on_device else None
        if isinstance(decoder, CandidateStepDecoder) and decoder.ranks_on_device:
            found = beam_search(
                decoder,
                inputs,
                replace(search, lam=0.0),
                None,
                max_lengths=_output_caps(search, options, inputs, len(prefix_ids)),
                prefixes=[list(prefix_ids)] * len(inputs),
            )
            return [best[0] for best in found]
        native = self.native_search(inputs, _capped(search, options, inputs, len(prefix)), prefix)
        return self._valid_utf8(native, inputs, search, options, engine, prefix_ids)

    def native_search(
        self,
        inputs: Sequence[Sequence[str]],
        search: SearchOptions,
        prefix: Sequence[str] = (),
    ) -> list[Hypothesis]:
        """CTranslate2's own beam search (the unguided baseline), as Hypothesis objects; each
        output starts with the forced `prefix` (kept in token_ids, as beam_search keeps it)."""
        if not inputs:
            return []
        outputs = native_beam_search(
            self.bundle.translator, inputs, search, prefixes=[list(prefix)] * len(inputs)
        )
        result = []
        for output in outputs:
            ids = tuple(self.token_to_id[t] for t in output.hypotheses[0])
            length = len(ids) if len(ids) >= search.max_length else len(ids) + 1
            norm = float(length) ** search.length_penalty
            score = output.scores[0]
            result.append(Hypothesis(ids, score, score * norm, 0.0, length, score))
        return result


# marks that open or join what follows them, which a word written after them goes on from
# ("=SUMME", "(Zahl", "/etc", "E-Mail", "„Text", "+F4"); a closing bracket or a sentence's
# punctuation does not, even where the match wrote something on ("1);21)": "1)52")
_JOINING = frozenset("=([{/\\-„«‚‹+_@#")


def _attached(surface: str, after: str, after_surface: str) -> bool:
    """Whether a kept piece ends in a joining mark that the match target writes with no space
    before its next piece ("=" before "KALENDERWOCHE", "(" before "Zahl")."""
    return (
        surface[-1:] in _JOINING
        and not after.startswith(SENTENCEPIECE_SPACE)
        and after_surface[:1].strip() != ""
    )


def _targets(found: Any) -> list[str]:
    """The targets of the TM matches a sentence was guided by (none without pieces)."""
    return [m.segment.target for m in found.matches] if found else []


def _moved(steps: Sequence[Edited], offsets: list[int] | None) -> list[int] | None:
    """Token offsets into a text, moved through the edits that set it right (Bundle.set_right)."""
    if offsets is None:
        return None
    for step in steps:
        if step.edits:
            offsets = [step.moved(offset) for offset in offsets]
    return offsets


def _output_caps(
    search: SearchOptions,
    options: TranslateOptions,
    inputs: Sequence[Sequence[str]],
    prefix_length: int = 0,
) -> list[int]:
    """Each sentence's output cap (TranslateOptions.output_cap) under `search`."""
    capped = replace(options, search=search)
    return [capped.output_cap(len(x), prefix_length) for x in inputs]


def _capped(
    search: SearchOptions,
    options: TranslateOptions,
    inputs: Sequence[Sequence[str]],
    prefix_length: int = 0,
) -> SearchOptions:
    """The batch's max_length: the largest cap of its sentences (CTranslate2's
    max_decoding_length is one value per batch)."""
    if not inputs:
        return search
    return replace(search, max_length=max(_output_caps(search, options, inputs, prefix_length)))


def matched_pieces(tokens: Sequence[str], pieces: Any) -> list[MatchedPiece]:
    """The longest collected pieces found in the output (an n-gram inside a longer match is not
    listed again), with the TM segments each came from."""
    ngrams = pieces.ngrams
    max_n = max((len(g) for g in ngrams), default=0)
    spans: list[tuple[int, int]] = []
    for start in range(len(tokens)):
        for n in range(min(max_n, len(tokens) - start), 0, -1):
            if tuple(tokens[start : start + n]) in ngrams:
                spans.append((start, start + n))
                break
    maximal = [
        (s, e)
        for s, e in spans
        if not any(s2 <= s and e <= e2 and (s2, e2) != (s, e) for s2, e2 in spans)
    ]
    result = []
    for s, e in maximal:
        gram = tuple(tokens[s:e])
        result.append(
            MatchedPiece(
                tokens=gram,
                start=s,
                score=float(ngrams[gram]),
                segment_ids=list(pieces.provenance.get(gram, [])),
            )
        )
    return result


def _best_match(found: Any) -> Any:
    """The match a close-match candidate comes from: the one the template repairs, else the
    most similar (the first of equal ones, in the search engine's rank)."""
    if found.template is not None:
        for match in found.matches:
            if match.segment.id == found.template.segment_id:
                return match
    best = found.matches[0]
    for match in found.matches:
        if match.similarity > best.similarity:
            best = match
    return best


def _batches(ids: list[int], sources: Sequence[Sequence[str]], size: int) -> list[list[int]]:
    """Batches of similar source length (less padding), each at most `size` sentences."""
    ordered = sorted(ids, key=lambda i: len(sources[i]))
    return [ordered[k : k + size] for k in range(0, len(ordered), size)]
