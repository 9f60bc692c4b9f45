"""What one suggestion request computes: TM fuzzy matches and, on request, TM-guided MT.

Kept apart from HTTP so that the blueprint only parses and answers, and so that a batch (an editor
pre-translating a file) goes through the translator in one call, which is where batching pays.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tm_guide import languages
from tm_guide.errors import Unprocessable
from tm_guide.matching import exact_match, match_percentage
from tm_guide.server.glossaries import glossary_of
from tm_guide.server.pipeline import translate_segments
from tm_guide.server.sentences import SentenceDecoder
from tm_guide.server.services import Services
from tm_guide.server.shapes import match_json
from tm_guide.server.translation import (
    MTOptions,
    translate_options,
)


@dataclass(frozen=True)
class MemoryChoice:
    """A memory to search, and the points subtracted from its match percentages (a CAT penalty)."""

    name: str
    penalty: int = 0


@dataclass(frozen=True)
class SegmentQuery:
    source: str
    context: str | None = None


@dataclass(frozen=True)
class SuggestOptions:
    memories: tuple[MemoryChoice, ...]
    m: int = 10
    min_match: int = 50
    max_matches: int = 5
    translate: bool = True
    # a verbatim TM match (100/101 after its memory's penalty) gives the suggestion's text, as in
    # CAT tools; the guided translation stays beside it (mt_text)
    exact_match_target: bool = True
    mt: MTOptions = field(default_factory=MTOptions)
    # the pair to translate (a multilingual model's language tokens); None: the memories' pair
    languages: tuple[str, str] | None = None
    # when the answer is of no more use (time.perf_counter() seconds): decoding is degraded to
    # meet it (tm_guide.server.batching); None: decoded as asked, however long that takes
    deadline: float | None = None
    # memories whose entries are terms the translation must use (tm_guide.server.glossaries)
    glossaries: tuple[str | int, ...] = ()


def suggest(
    services: Services, queries: Sequence[SegmentQuery], options: SuggestOptions
) -> dict[str, Any]:
    """Matches for every query; with `translate`, the retrieval behind the matches is the piece
    builder's, so each sentence is looked up once and its pieces go straight to the decoder."""
    started = time.perf_counter()
    store = services.store()
    memories = [store.get_memory(choice.name) for choice in options.memories]
    _check_one_language_pair(memories)
    penalties = {m.id: c.penalty for m, c in zip(memories, options.memories, strict=True)}
    names = {memory.id: memory.name for memory in memories}
    sources = [q.source for q in queries]

    model: dict[str, Any] | None = None
    translations: list[dict[str, Any] | None] = [None] * len(queries)
    stage_ms: list[dict[str, float]] = [{} for _ in queries]
    if options.translate:
        translator = services.translator()
        model = _check_model_pair(translator, memories)
        mt_options = translate_options(
            options.mt, options.m, list(penalties), services.config.compute, translator.bundle.card
        )
        if translator.bundle.card.language_tokens:  # a multilingual model: which pair to write
            pair = options.languages or (
                (memories[0].source_lang, memories[0].target_lang) if memories else None
            )
            mt_options = replace(mt_options, languages=pair)
        decoder = SentenceDecoder(
            services,
            translator,
            mt_options,
            names,
            options.deadline,
            glossary_of(store, [store.get_memory(ref) for ref in options.glossaries]),
        )
        translated = translate_segments(
            decoder,
            sources,
            _source_language(options, memories, model),
            penalties if options.exact_match_target else None,
        )
        hits = []
        for i, (source, one) in enumerate(zip(sources, translated, strict=True)):
            # a segment of one sentence as it is: its retrieval gave the matches; any other is
            # searched whole, as a CAT tool shows matches
            found = one.matches
            if found is None:
                found = store.search(list(penalties), source, limit=options.m)
            hits.append(found)
            translations[i] = one.record
            stage_ms[i] = one.stage_ms
    else:
        hits = []
        for i, source in enumerate(sources):
            t0 = time.perf_counter()
            hits.append(store.search(list(penalties), source, limit=options.m))
            stage_ms[i] = {"retrieval": round((time.perf_counter() - t0) * 1000, 3)}

    results_json = []
    for query, found, translation, timings in zip(
        queries, hits, translations, stage_ms, strict=True
    ):
        for stage, ms in timings.items():
            services.metrics.stages.labels(stage=stage).observe(ms / 1000)
        scored = _scored(query, found, penalties)
        if translation is not None:
            verbatim = (
                _verbatim(scored, translation["text"]) if options.exact_match_target else None
            )
            _set_origin(translation, verbatim, names)
        results_json.append(
            {
                "source": query.source,
                "matches": _matches(scored, names, options),
                "translation": translation,
                "timings_ms": timings,
            }
        )
    total = time.perf_counter() - started
    services.metrics.stages.labels(stage="request").observe(total)
    return {
        "results": results_json,
        "model": model,
        "memories": [
            {"name": m.name, "revision": m.revision, "penalty": penalties[m.id]} for m in memories
        ],
        "timings_ms": {"total": round(total * 1000, 3)},
    }


def _source_language(
    options: SuggestOptions, memories: Sequence[Any], model: dict[str, Any] | None
) -> str:
    """The language whose sentence rules cut the segments: the request's pair, else its
    memories', else the model's."""
    if options.languages:
        return options.languages[0]
    if memories:
        return str(memories[0].source_lang)
    return str((model or {}).get("source_lang") or "en")


def _scored(
    query: SegmentQuery, hits: Sequence[Any], penalties: dict[int, int]
) -> list[tuple[Any, int]]:
    """Each hit with its CAT match percentage after its memory's penalty (never below 0)."""
    scored = []
    for hit in hits:
        segment = hit.segment
        raw = match_percentage(query.source, segment.source, query.context, segment.context)
        scored.append((hit, max(0, raw - penalties.get(segment.memory_id, 0))))
    return scored


def _verbatim(scored: Sequence[tuple[Any, int]], translation: str) -> tuple[Any, int] | None:
    """The hit a CAT tool would insert (matching.exact_match, on the matches after their
    memory's penalty, the guided `translation` breaking ties); None when no memory holds the
    source."""
    hits = {hit.segment.id: hit for hit, _ in scored}
    chosen = exact_match([(match, hit.segment) for hit, match in scored], translation)
    return (hits[chosen[1].id], chosen[0]) if chosen is not None else None


def _set_origin(translation: dict[str, Any], verbatim: Any, names: dict[int, str]) -> None:
    """The suggestion's text: the verbatim match's target (origin tm), else the guided
    translation (origin mt), which stays in mt_text either way."""
    translation["mt_text"] = translation["text"]
    translation["origin"] = "mt"
    translation["tm_match"] = None
    if verbatim is not None:
        hit, match = verbatim
        translation["text"] = hit.segment.target
        translation["origin"] = "tm"
        translation["tm_match"] = {
            "segment_id": hit.segment.id,
            "memory": names.get(hit.segment.memory_id),
            "match": match,
        }


def _matches(
    scored: Sequence[tuple[Any, int]], names: dict[int, str], options: SuggestOptions
) -> list[dict[str, Any]]:
    matches = []
    for hit, match in scored:
        segment = hit.segment
        if match < options.min_match:
            continue
        matches.append(match_json(segment, match, names.get(segment.memory_id)))
    matches.sort(key=lambda m: (-m["match"], m["segment_id"]))
    return matches[: options.max_matches]


def _check_one_language_pair(memories: Sequence[Any]) -> None:
    pairs = [(m.source_lang, m.target_lang) for m in memories]
    if any(not languages.pair_matches(pair, pairs[0]) for pair in pairs[1:]):
        listed = ", ".join(f"{m.name} ({m.source_lang}->{m.target_lang})" for m in memories)
        raise Unprocessable(
            f"memories of one request must share a language pair: {listed}", field="memories"
        )


def _check_model_pair(translator: Any, memories: Sequence[Any]) -> dict[str, Any]:
    from tm_guide.server.translation import model_info

    info = model_info(translator)
    tokens = translator.bundle.card.language_tokens
    for memory in memories:
        if not translator.bundle.serves(memory.source_lang, memory.target_lang):
            model = (
                f"has language tokens for {len(tokens)} languages, not for both of these"
                if tokens
                else f"translates {info['source_lang']}->{info['target_lang']}"
            )
            raise Unprocessable(
                f"memory '{memory.name}' is {memory.source_lang}->{memory.target_lang} "
                f"but the model {model}; ask without translation "
                '("translate": false) for matches only',
                field="memories",
            )
    return info
