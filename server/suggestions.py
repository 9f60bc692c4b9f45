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
from tm_guide.server.results import (
    Match,
    MemoryUse,
    Suggestion,
    Suggestions,
    Timing,
    Translation,
    VerbatimMatch,
)
from tm_guide.server.sentences import SentenceDecoder
from tm_guide.server.services import Services
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


# a query's hits, its translation (None: matches only) and its stage timings
_Answered = tuple[list[Any], Translation | None, Timing]


def suggest(
    services: Services, queries: Sequence[SegmentQuery], options: SuggestOptions
) -> Suggestions:
    """Matches for every query; with `translate`, the retrieval behind the matches is the piece
    builder's, so each sentence is looked up once and its pieces go straight to the decoder."""
    started = time.perf_counter()
    store = services.store()
    memories = [store.get_memory(choice.name) for choice in options.memories]
    _check_one_language_pair(memories)
    penalties = {m.id: c.penalty for m, c in zip(memories, options.memories, strict=True)}
    names = {memory.id: memory.name for memory in memories}

    model: dict[str, Any] | None = None
    if options.translate:
        translator = services.translator()
        model = _check_model_pair(translator, memories)
        translated = _translated(
            services, translator, memories, penalties, names, queries, options, model
        )
    else:
        translated = [_searched(store, list(penalties), query, options.m) for query in queries]

    results = []
    for query, (found, translation, timing) in zip(queries, translated, strict=True):
        for stage, ms in timing.to_json().items():
            services.metrics.stages.labels(stage=stage).observe(ms / 1000)
        scored = _scored(query, found, penalties, names)
        if translation is not None:
            verbatim = _verbatim(scored, translation.text) if options.exact_match_target else None
            translation = _with_origin(translation, verbatim)
        results.append(Suggestion(query.source, _matches(scored, options), translation, timing))
    total = time.perf_counter() - started
    services.metrics.stages.labels(stage="request").observe(total)
    return Suggestions(
        results=tuple(results),
        model=model,
        memories=tuple(MemoryUse(m.name, m.revision, penalties[m.id]) for m in memories),
        total_ms=total * 1000,
    )


def _searched(store: Any, memory_ids: list[int], query: SegmentQuery, limit: int) -> _Answered:
    """A query's hits when only matches were asked for."""
    t0 = time.perf_counter()
    hits = store.search(memory_ids, query.source, limit=limit)
    return hits, None, Timing(retrieval=round((time.perf_counter() - t0) * 1000, 3))


def _translated(
    services: Services,
    translator: Any,
    memories: Sequence[Any],
    penalties: dict[int, int],
    names: dict[int, str],
    queries: Sequence[SegmentQuery],
    options: SuggestOptions,
    model: dict[str, Any],
) -> list[_Answered]:
    """Each query's hits, translation and stage timings, the batch translated in one call;
    `penalties` and `names` by memory id, as suggest() found them."""
    store = services.store()
    mt_options = translate_options(
        options.mt,
        options.m,
        list(penalties),
        services.config.compute,
        translator.bundle.card,
        device=services.config.settings.device,
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
        services.config.compute.tm_only_grace_ms / 1000,
    )
    sources = [q.source for q in queries]
    translated = translate_segments(
        decoder,
        sources,
        _source_language(options, memories, model),
        penalties if options.exact_match_target else None,
    )
    out: list[_Answered] = []
    for source, one in zip(sources, translated, strict=True):
        # a segment of one sentence as it is: its retrieval gave the matches; any other is
        # searched whole, as a CAT tool shows matches
        found = one.matches
        if found is None:
            found = store.search(list(penalties), source, limit=options.m)
        out.append((found, one.translation, one.timing))
    return out


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
    query: SegmentQuery, hits: Sequence[Any], penalties: dict[int, int], names: dict[int, str]
) -> list[Match]:
    """Each hit as a Match, with its CAT match percentage after its memory's penalty (never
    below 0)."""
    scored = []
    for hit in hits:
        segment = hit.segment
        raw = match_percentage(query.source, segment.source, query.context, segment.context)
        percent = max(0, raw - penalties.get(segment.memory_id, 0))
        scored.append(Match(segment, percent, names.get(segment.memory_id)))
    return scored


def _verbatim(scored: Sequence[Match], translation: str) -> Match | None:
    """The match a CAT tool would insert (matching.exact_match, on the matches after their
    memory's penalty, the guided `translation` breaking ties); None when no memory holds the
    source."""
    by_id = {match.segment.id: match for match in scored}
    chosen = exact_match([(match.percent, match.segment) for match in scored], translation)
    return by_id[chosen[1].id] if chosen is not None else None


def _with_origin(translation: Translation, verbatim: Match | None) -> Translation:
    """The suggestion's text: the verbatim match's target (origin tm), else the guided
    translation (origin mt), which stays in mt_text either way."""
    translation = replace(translation, mt_text=translation.text, origin="mt", tm_match=None)
    if verbatim is None:
        return translation
    return replace(
        translation,
        text=verbatim.target,
        origin="tm",
        tm_match=VerbatimMatch(verbatim.segment.id, verbatim.memory, verbatim.percent),
    )


def _matches(scored: Sequence[Match], options: SuggestOptions) -> tuple[Match, ...]:
    kept = [match for match in scored if match.percent >= options.min_match]
    kept.sort(key=lambda match: (-match.percent, match.segment.id))
    return tuple(kept[: options.max_matches])


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
