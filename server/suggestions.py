"""What one suggestion request computes: TM fuzzy matches and, on request, TM-guided MT.

Kept apart from HTTP so that the blueprint only parses and answers, and so that a batch (an editor
pre-translating a file) goes through the translator in one call, which is where batching pays.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from server.api.common import iso
from server.matching import match_percentage
from server.services import Services
from server.translation import MTOptions, translate_segments
from tm_guide.errors import Unprocessable


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
    mt: MTOptions = field(default_factory=MTOptions)


def suggest(
    services: Services, queries: Sequence[SegmentQuery], options: SuggestOptions
) -> dict[str, Any]:
    started = time.perf_counter()
    store = services.store()
    memories = [store.get_memory(choice.name) for choice in options.memories]
    _check_one_language_pair(memories)
    penalties = {
        memory.id: choice.penalty for memory, choice in zip(memories, options.memories, strict=True)
    }
    names = {memory.id: memory.name for memory in memories}

    results: list[dict[str, Any]] = []
    for query in queries:
        t0 = time.perf_counter()
        hits = store.search(list(penalties), query.source, limit=options.m)
        retrieval = time.perf_counter() - t0
        services.metrics.stages.observe(retrieval, stage="match_retrieval")
        results.append(
            {
                "source": query.source,
                "matches": _matches(query, hits, penalties, names, options),
                "translation": None,
                "timings_ms": {"match_retrieval": round(retrieval * 1000, 3)},
            }
        )

    model: dict[str, Any] | None = None
    if options.translate and queries:
        translator = services.translator()
        model = _check_model_pair(translator, memories)
        translations = translate_segments(
            translator, [q.source for q in queries], list(penalties), options.m, options.mt, names
        )
        for result, translation in zip(results, translations, strict=True):
            timings = translation.pop("timings_ms")
            for stage, ms in timings.items():
                services.metrics.stages.observe(ms / 1000, stage=stage)
            result["timings_ms"].update(timings)
            result["translation"] = translation

    total = time.perf_counter() - started
    return {
        "results": results,
        "model": model,
        "memories": [
            {"name": m.name, "revision": m.revision, "penalty": penalties[m.id]} for m in memories
        ],
        "timings_ms": {"total": round(total * 1000, 3)},
    }


def _matches(
    query: SegmentQuery,
    hits: Sequence[Any],
    penalties: dict[int, int],
    names: dict[int, str],
    options: SuggestOptions,
) -> list[dict[str, Any]]:
    matches = []
    for hit in hits:
        segment = hit.segment
        raw = match_percentage(query.source, segment.source, query.context, segment.context)
        match = max(0, raw - penalties.get(segment.memory_id, 0))
        if match < options.min_match:
            continue
        matches.append(
            {
                "match": match,
                "source": segment.source,
                "target": segment.target,
                "memory": names.get(segment.memory_id),
                "segment_id": segment.id,
                "tuid": segment.tuid,
                "context": segment.context,
                "created_at": iso(segment.created_at),
                "created_by": segment.created_by,
                "changed_at": iso(segment.changed_at),
                "changed_by": segment.changed_by,
                "usage_count": segment.usage_count,
            }
        )
    matches.sort(key=lambda m: (-m["match"], m["segment_id"]))
    return matches[: options.max_matches]


def _check_one_language_pair(memories: Sequence[Any]) -> None:
    pairs = {(m.source_lang.lower(), m.target_lang.lower()) for m in memories}
    if len(pairs) > 1:
        listed = ", ".join(f"{m.name} ({m.source_lang}->{m.target_lang})" for m in memories)
        raise Unprocessable(
            f"memories of one request must share a language pair: {listed}", field="memories"
        )


def _primary(tag: str) -> str:
    return tag.replace("_", "-").split("-", 1)[0].lower()


def _check_model_pair(translator: Any, memories: Sequence[Any]) -> dict[str, Any]:
    from server.translation import model_info

    info = model_info(translator)
    for memory in memories:
        if (_primary(memory.source_lang), _primary(memory.target_lang)) != (
            _primary(info["source_lang"]),
            _primary(info["target_lang"]),
        ):
            raise Unprocessable(
                f"memory '{memory.name}' is {memory.source_lang}->{memory.target_lang} "
                "but the model "
                f"translates {info['source_lang']}->{info['target_lang']}; ask without translation "
                '("translate": false) for matches only',
                field="memories",
            )
    return info
