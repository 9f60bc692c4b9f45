"""The server's side of the model: loading the guided translator and shaping its output as JSON.

Everything that touches `tm_guide.model`, `tm_guide.pieces` and `tm_guide.decoding` goes through
this module, so the blueprints stay independent of how those parts name their objects.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tm_guide.server.results import PieceUse, SegmentRef, Translation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MTOptions:
    """Per-request decoding options; None keeps the translator's default."""

    lam: float | None = None
    beam_size: int | None = None
    min_similarity: float | None = None
    binary_reward: bool = False
    # False: a piece is rewarded at most its limit times per hypothesis; None: as the lambda was
    # tuned (the model card), else eq. 10
    reward_repeats: bool | None = None
    # the piece rules the lambda is tuned with (PieceOptions); None: the model card's
    clipped: bool | None = None
    weighting: str | None = None
    # from which similarity the best match is repaired (a RepairOptions spec); None: the card's
    repair: str | None = None
    # how a close match's candidates are chosen from (a ChoiceOptions spec); None: the card's
    choice: str | None = None
    unguided: bool = False
    engine: str | None = None  # None: the server's (Compute.engine)


# Suggestions stop at twice the source length (+10 tokens): an editor never wants more, and a
# runaway hypothesis would otherwise hold a worker for all max_length steps.
MAX_LENGTH_RATIO = 2.0


def load_translator(config: Any, bundle: Any, store: Any, aligner: Any) -> Any:
    """A GuidedTranslator, warmed up: native search has run once and the guided engine is
    loaded, so that the first suggestions do not pay for reading the model again.

    Then everything the worker holds so far (model, vocabularies, store and index objects) is
    frozen out of Python's cyclic garbage collector: these objects live as long as the worker,
    and a full collection that walked them held the GIL for ~160 ms at a time under load,
    stalling every request thread."""
    from tm_guide.decoding.engines import engine_spec
    from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions

    translator = GuidedTranslator(bundle, store)
    compute = config.compute
    options = TranslateOptions(
        engine=EngineOptions(
            engine=compute.engine,
            device=config.settings.device,
            threads=compute.resolved_threads,
        )
    )
    translator.translate(["warm up"], options)
    engine = translator.engine_name(options)
    if not engine_spec(engine).reranks:  # a reranking engine's search is CTranslate2's n-best
        translator.step_decoder(engine, options)
    gc.collect()
    gc.freeze()
    return translator


def engine_status(translator: Any, compute: Any) -> dict[str, Any]:
    """Which engine decodes guided suggestions on this worker, and why (for /ready)."""
    from tm_guide.decoding.engines import AUTO, named_choice

    if compute.engine == AUTO:
        return dict(translator.engine_choice("cpu").to_dict())
    return named_choice(compute.engine, translator.bundle.card.quantization).to_dict()


def translate_options(
    options: MTOptions,
    m: int,
    memory_ids: Sequence[int],
    compute: Any,
    card: Any = None,
    device: str = "cpu",
) -> Any:
    """TranslateOptions for one request: what the request leaves open keeps the library default;
    the engine and its thread count are the server's (`Compute`), on the server's device
    (TM_GUIDE_DEVICE). The guidance settings are
    resolved once (tm_guide.decoding.guidance): each as the request asks, else (lambda only)
    the server's TM_GUIDE_LAMBDA, else as the model card records it, else eq. 10's default."""
    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import EngineOptions, TranslateOptions
    from tm_guide.decoding.search import SearchOptions
    from tm_guide.pieces import PieceOptions

    guidance = Guidance.resolve(
        card,
        lam=options.lam if options.lam is not None else compute.default_lambda,
        reward_repeats=options.reward_repeats,
        clipped=options.clipped,
        weighting=options.weighting,
        repair=options.repair,
        choice=options.choice,
        m=m,
    )
    search = SearchOptions()
    if options.beam_size is not None:
        search = replace(search, beam_size=options.beam_size)
    pieces = PieceOptions(binary_reward=options.binary_reward)
    if options.min_similarity is not None:
        pieces = replace(pieces, min_similarity=options.min_similarity)
    return guidance.apply(
        TranslateOptions(
            search=search,
            pieces=pieces,
            engine=EngineOptions(
                engine=options.engine or compute.engine,
                device=device,
                threads=compute.resolved_threads,
            ),
            memory_ids=tuple(memory_ids),
            max_length_ratio=MAX_LENGTH_RATIO,
            return_unguided=options.unguided,
        )
    )


def model_info(translator: Any) -> dict[str, Any]:
    card = translator.bundle.card
    return {
        "name": card.name,
        "source_lang": card.source_lang,
        "target_lang": card.target_lang,
        "quantization": card.quantization,
        "checksum": card.files.get("model.bin"),
    }


def collect_pieces(translator: Any, sources: Sequence[str], options: Any) -> list[Any]:
    """Translation pieces (and the fuzzy matches they came from) per sentence; None for a
    sentence that tokenizes to nothing."""
    return collect_pieces_until(translator, sources, options, None)[0]


def collect_pieces_until(
    translator: Any, sources: Sequence[str], options: Any, stop_at: float | None
) -> tuple[list[Any], int]:
    """collect_pieces, with None for each sentence not started by `stop_at`
    (time.perf_counter() seconds), which is then decoded without pieces; and how many those
    were."""
    encode = translator.bundle.encode_source
    out: list[Any] = []
    skipped = 0
    for source in sources:
        if stop_at is not None and time.perf_counter() >= stop_at:
            out.append(None)
            skipped += 1
            continue
        out.append(translator.collect_pieces(encode(source), options))
    return out, skipped


def translations_of(
    translator: Any,
    results: Sequence[Any],
    store: Any,
    memory_names: dict[int, str],
    pieces: Sequence[Any] = (),
) -> list[tuple[Translation, float]]:
    """GuidedResults as Translations, each with its decoding time (ms). Each piece says where
    it sits in the text (`span`, characters) and the TM segments it came from (id, memory, tuid,
    and the similarity of that segment's match, so a client can say how far the piece is to be
    trusted).

    The segments are those the piece builder retrieved for these sentences (`pieces`, from
    collect_pieces); the store is asked only for any it did not hold."""
    segments = {m.segment.id: m.segment for p in pieces if p is not None for m in p.matches}
    ids = {i for r in results for piece in r.matched_pieces for i in piece.segment_ids}
    ids |= {r.repaired_segment for r in results if r.repaired_segment is not None}
    missing = sorted(ids - segments.keys())
    if missing:
        segments.update((s.id, s) for s in store.get_segments(missing))
    found = list(pieces) + [None] * (len(results) - len(pieces))
    out = []
    for result, collected in zip(results, found, strict=True):
        similarity = {m.segment.id: m.similarity for m in collected.matches} if collected else {}

        offsets = None
        if result.matched_pieces:
            offsets = result.offsets
            if (
                offsets is None
                and translator.bundle.decode_target(result.tokens) == result.translation
            ):
                offsets = translator.bundle.target_offsets(result.tokens)
        texts = [translator.bundle.decode_target(list(p.tokens)) for p in result.matched_pieces]
        used = tuple(
            PieceUse(
                text=text,
                tokens=tuple(piece.tokens),
                position=piece.start,
                span=_piece_span(translator.bundle, result.translation, offsets, piece, text),
                score=piece.score,
                segments=tuple(
                    _ref(i, segments, similarity, memory_names) for i in piece.segment_ids
                ),
            )
            for piece, text in zip(result.matched_pieces, texts, strict=True)
        )
        translation = Translation(
            text=result.translation,
            unguided=result.unguided_translation,
            guided=result.guided,
            engine=result.engine,
            model_score=result.model_score,
            reward=result.reward,
            best_match_similarity=result.best_match_similarity,
            repaired=(
                _ref(result.repaired_segment, segments, similarity, memory_names)
                if result.repaired_segment is not None
                else None
            ),
            chosen=result.choice,
            pieces_used=used,
        )
        out.append((translation, round(result.timings.get("decoding", 0.0) * 1000, 3)))
    return out


def _ref(
    segment_id: int,
    segments: dict[int, Any],
    similarity: dict[int, float],
    memory_names: dict[int, str],
) -> SegmentRef:
    """A TM segment by id, with its memory's name and its similarity to the input."""
    segment = segments.get(segment_id)
    return SegmentRef(
        segment_id,
        memory_names.get(segment.memory_id) if segment else None,
        segment.tuid if segment else None,
        similarity.get(segment_id),
    )


def _piece_span(
    bundle: Any, text: str, offsets: list[int] | None, piece: Any, piece_text: str
) -> tuple[int, int] | None:
    """The characters of `text` that the piece's tokens produced, without the space a
    word-initial token carries; None when the offsets are unknown, or when the text there is
    not the piece's (`piece_text`, its tokens detokenized): a word of it that was said twice
    over is written once, so its tokens' characters are partly gone ("Menü menü datei" written
    "Menü datei")."""
    start, end = piece.start, piece.start + len(piece.tokens)
    if offsets is None or end >= len(offsets):
        return None
    first, last = offsets[start], offsets[end]
    while first < last and text[first].isspace():
        first += 1
    if first >= last or not bundle.same_text(text[first:last], piece_text):
        return None
    return first, last


def align_after_write(services: Any, segments: Sequence[Any]) -> None:
    """Queue freshly written segments for word alignment after the answer (see
    tm_guide/pieces/deferred.py); a query that retrieves one first aligns it on demand.

    Without a usable model the segments are stored unaligned, and the piece builder aligns them
    when they are first retrieved once a model is there.
    """
    from tm_guide.errors import ModelError

    try:
        deferred = services.deferred_aligner()
    except ModelError as exc:
        log.info("segments stored without alignment: %s", exc.message)
        return
    deferred.submit(segment.id for segment in segments)


def analyse_memory(
    services: Any, memory: Any, report: Callable[[str, int, int], None] | None = None
) -> int:
    """Align what an import brought in, in one pass; 0 when there is no model to tokenize with.
    `report` is told each stage of the alignment with how far it got."""
    from tm_guide.errors import ModelError

    try:
        aligner = services.aligner()
    except ModelError as exc:
        log.info("memory %s imported without alignment: %s", memory.name, exc.message)
        return 0
    return aligner.align_memory(memory, mode="auto", report=report).aligned
