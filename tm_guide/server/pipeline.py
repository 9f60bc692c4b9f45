"""The text pipeline around the model, for every protocol: what a CAT tool sends in, what a
translator can insert as it is out.

1. Each segment is cut into sentences, its layout kept aside (tm_guide.text.layout): lines,
   indentation, surrounding whitespace, and lines with nothing to translate.
2. Tags enclosing a sentence stay where they are, outside what the model sees; markers the
   model garbles are masked as placeholders it copies (tm_guide.text.placeholders).
3. Every sentence of the batch is decoded in one guided batch.
4. Each translation must hold its sentence's non-translatables exactly once each; one that does
   not is replaced by the translation of the runs between them, the non-translatables kept in
   their order (a second batch, only for those).
5. The sentences' records are joined into the segment's (tm_guide.server.layouts).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tm_guide.matching import exact_match, match_percentage
from tm_guide.server.batching import DEGRADED_LEVELS
from tm_guide.server.glossaries import (
    TERM_RETRY_MAX_LOSS,
    TERM_SCORE,
    OwnTranslations,
    count_applied,
    swap_own_words,
    term_pieces,
    terms_json,
)
from tm_guide.server.layouts import joined_translation, verbatim_translation
from tm_guide.server.services import Services
from tm_guide.server.translation import collect_pieces_until, translations_json
from tm_guide.text import Layout, layout_of
from tm_guide.text.glossary import Glossary, Term, all_applied
from tm_guide.text.placeholders import Masked, enclosed, kept, mask, protected, runs_layout


@dataclass(frozen=True)
class SegmentTranslation:
    """One segment's translation record (translations_json's shape, joined); the fuzzy matches
    its retrieval found when the segment was one sentence as it is (None: search the segment);
    and its stage timings."""

    record: dict[str, Any]
    matches: list[Any] | None
    stage_ms: dict[str, float]


@dataclass(frozen=True)
class _Decoded:
    records: list[dict[str, Any]]
    pieces: list[Any]
    stage_ms: list[dict[str, float]]


def translate_segments(
    services: Services,
    translator: Any,
    mt_options: Any,
    names: dict[int, str],
    sources: Sequence[str],
    language: str,
    penalties: dict[int, int] | None = None,
    deadline: float | None = None,
    glossary: Glossary | None = None,
) -> list[SegmentTranslation]:
    """Every segment translated through the pipeline above, in one batch (two when a sentence
    lost a non-translatable). With `penalties` (memory id -> points, as the request's), a
    sentence that a memory holds verbatim, within a segment that is more than that sentence,
    takes the TM target, as a CAT tool inserts a 100% match (a segment that is one sentence as
    it is gets that from suggest(), which says so in its origin). With a `deadline`
    (time.perf_counter() seconds), decoding may be degraded to meet it (tm_guide.server.batching);
    each record says how in `degraded`. A `glossary`'s applying terms are asked for in every
    sentence (_decode)."""
    layouts = [layout_of(source, language) for source in sources]
    edges = [enclosed(unit) for layout in layouts for unit in layout.units]
    units = [core for _, core, _ in edges]  # what the model translates of each sentence
    masks = [mask(unit) for unit in units]
    wanted = [i for i, unit in enumerate(units) if runs_layout(unit).units]
    decoded = _decode(
        services,
        translator,
        mt_options,
        names,
        [(masks[i].text if masks[i] else units[i]) for i in wanted],  # type: ignore[union-attr]
        deadline,
        glossary,
    )
    records: list[dict[str, Any]] = [verbatim_translation(unit) for unit in units]
    stage_ms: list[dict[str, float]] = [{} for _ in units]
    pieces: list[Any] = [None] * len(units)
    lost = []
    # the sentences of segments that are more than one sentence as it is
    inside = {
        i
        for layout, span in zip(layouts, _spans(layouts), strict=True)
        for i in range(span.start, span.stop)
        if not _whole(layout, edges, span)
    }
    for at, i in enumerate(wanted):
        pieces[i], stage_ms[i] = decoded.pieces[at], decoded.stage_ms[at]
        verbatim = (
            _tm_target(units[i], decoded.pieces[at], penalties)
            if penalties is not None and i in inside
            else None
        )
        if verbatim is not None:
            records[i] = {**decoded.records[at], "text": verbatim, "pieces_used": []}
            continue
        record = _checked(units[i], masks[i], decoded.records[at])
        if record is None:
            lost.append(i)
        else:
            records[i] = record
    if lost:
        _translate_runs(
            services,
            translator,
            mt_options,
            names,
            units,
            lost,
            records,
            stage_ms,
            deadline,
            glossary,
        )
    records = [
        _enclosed(record, lead, trail)
        for record, (lead, _, trail) in zip(records, edges, strict=True)
    ]

    out = []
    for source, layout, span in zip(sources, layouts, _spans(layouts), strict=True):
        own = records[span]
        record = joined_translation(layout, own) if own else verbatim_translation(source)
        record["non_translatables"] = _how_kept(own)
        record["degraded"] = worst_level([one.get("degraded") for one in own])
        matches = None
        if _whole(layout, edges, span):  # its retrieval was the segment's
            collected = pieces[span.start]
            matches = list(collected.matches) if collected is not None else []
        out.append(SegmentTranslation(record, matches, _summed(stage_ms[span])))
    return out


def _whole(layout: Layout, edges: Sequence[tuple[str, str, str]], span: slice) -> bool:
    """Whether the segment is one sentence as it is, which the model saw whole."""
    return layout.plain and edges[span.start][0] == edges[span.start][2] == ""


def _spans(layouts: Sequence[Layout]) -> list[slice]:
    """Which of the batch's sentences are each segment's."""
    spans, start = [], 0
    for layout in layouts:
        spans.append(slice(start, start + len(layout.units)))
        start += len(layout.units)
    return spans


def _tm_target(unit: str, collected: Any, penalties: dict[int, int]) -> str | None:
    """The target of a TM segment whose source is `unit` verbatim (100 or more after its
    memory's penalty, chosen as suggest() chooses one), or None."""
    if collected is None:
        return None
    scored = []
    for match in collected.matches:
        segment = match.segment
        raw = match_percentage(unit, segment.source)
        scored.append((max(0, raw - penalties.get(segment.memory_id, 0)), segment))
    chosen = exact_match(scored)
    return str(chosen[1].target) if chosen is not None else None


def _decode(
    services: Services,
    translator: Any,
    mt_options: Any,
    names: dict[int, str],
    texts: list[str],
    deadline: float | None = None,
    glossary: Glossary | None = None,
) -> _Decoded:
    """One guided batch: pieces collected in this thread (so that a segment added just before
    is seen), decoding shared with concurrent requests (batching.py); with a `glossary`, its
    terms put in (_follow_glossary)."""
    if not texts:
        return _Decoded([], [], [])
    stop_at = None
    if deadline is not None:  # retrieval leaves the rest of the time to decoding
        now = time.perf_counter()
        stop_at = now + RETRIEVAL_SHARE * max(0.0, deadline - now)
    collected, skipped = collect_pieces_until(translator, texts, mt_options, stop_at)
    decoded = _search(
        services, translator, mt_options, names, texts, list(collected), deadline, skipped
    )
    terms = [glossary.terms_in(text) for text in texts] if glossary else [[] for _ in texts]
    if any(terms):
        _follow_glossary(services, translator, mt_options, names, texts, collected, terms, decoded)
    return decoded


def _follow_glossary(
    services: Services,
    translator: Any,
    mt_options: Any,
    names: dict[int, str],
    texts: list[str],
    collected: list[Any],
    terms: list[list[Term]],
    decoded: _Decoded,
) -> None:
    """The glossary's terms put into the decoded records (tm_guide.server.glossaries), each
    record listing its terms in `glossary`."""
    decodable = [i for i, r in enumerate(decoded.records) if r.get("degraded") != "tm-only"]

    def own_words(sources: list[str]) -> list[str]:
        alone = _search(
            services, translator, mt_options, names, sources, [None] * len(sources), None, 0
        )
        return [record["text"] for record in alone.records]

    own = OWN_TRANSLATIONS.of([t.source for i in decodable for t in terms[i]], own_words)
    for i in decodable:
        if terms[i]:
            decoded.records[i] = swap_own_words(decoded.records[i], terms[i], own)
    missing = [i for i in decodable if not all_applied(terms[i], decoded.records[i]["text"])]
    if missing:
        again = _search(
            services,
            translator,
            mt_options,
            names,
            [texts[i] for i in missing],
            term_pieces(
                translator,
                [texts[i] for i in missing],
                [collected[i] for i in missing],
                [terms[i] for i in missing],
                TERM_SCORE,
                keep_template=False,
            ),
            None,
            0,
        )
        for k, i in enumerate(missing):
            record = swap_own_words(again.records[k], terms[i], own)
            before = decoded.records[i]
            if (
                count_applied(terms[i], record["text"]) > count_applied(terms[i], before["text"])
                and record["model_score"] >= before["model_score"] - TERM_RETRY_MAX_LOSS
            ):
                decoded.records[i] = record
                decoded.stage_ms[i] = _summed([decoded.stage_ms[i], again.stage_ms[k]])
    for record, wanted in zip(decoded.records, terms, strict=True):
        record["glossary"] = terms_json(wanted, record["text"])


def _search(
    services: Services,
    translator: Any,
    mt_options: Any,
    names: dict[int, str],
    texts: list[str],
    pieces: list[Any],
    deadline: float | None,
    skipped: int,
) -> _Decoded:
    """The sentences decoded with their pieces, by their deadline (tm_guide.server.batching)."""
    prepared = translator.prepare(texts, mt_options, pieces)
    decoded = services.decoder().translate(prepared, mt_options, deadline)
    if skipped and decoded.degraded != "tm-only":
        decoded = replace(decoded, degraded="unguided")
    if decoded.degraded is not None:
        services.metrics.degraded.labels(level=decoded.degraded).inc()
    if decoded.degraded == "tm-only":
        return _Decoded(
            [
                _tm_only(text, collected, services, mt_options)
                for text, collected in zip(texts, pieces, strict=True)
            ],
            pieces,
            [_stage_timings(collected, {}, decoded.queued_s) for collected in pieces],
        )
    services.metrics.batch_sentences.observe(decoded.batch_sentences)
    results = translator.finish(prepared, decoded.results, mt_options)
    records = translations_json(translator, results, services.store(), names, pieces)
    for record in records:
        record["degraded"] = decoded.degraded
    stage_ms = [
        _stage_timings(collected, record.pop("timings_ms"), decoded.queued_s)
        for collected, record in zip(pieces, records, strict=True)
    ]
    return _Decoded(records, pieces, stage_ms)


# the model's own translation of glossary terms, kept for every request of this process
OWN_TRANSLATIONS = OwnTranslations()

# a TM target stands in for a translation not decoded in time from this similarity (eq. 9) up
TM_ONLY_MIN_SIMILARITY = 0.5
# Of the time left before a deadline, the share that collecting TM pieces may take: on a loaded
# server retrieval, not decoding, is what runs late (32 Weblate batches of 20 strings on 2 cores:
# 0.46 s of wall time per sentence in retrieval, 8 ms in decoding); a sentence not reached by
# then is decoded without pieces, which costs next to nothing.
RETRIEVAL_SHARE = 0.6


def _tm_only(text: str, collected: Any, services: Services, mt_options: Any) -> dict[str, Any]:
    """The record of a sentence not decoded in time: the target of its closest TM match, when
    that is close and keeps the sentence's non-translatables; else the sentence itself. A
    sentence whose pieces were not collected is looked up in the index alone."""
    record = {**verbatim_translation(text), "degraded": "tm-only"}
    if collected is not None:
        candidates = [(m.similarity, m.segment) for m in collected.matches]
    elif mt_options.memory_ids:
        hits = services.store().search(list(mt_options.memory_ids), text, limit=1)
        candidates = [(match_percentage(text, h.segment.source) / 100, h.segment) for h in hits]
    else:
        candidates = []
    if not candidates:
        return record
    similarity, segment = max(candidates, key=lambda candidate: candidate[0])
    if similarity >= TM_ONLY_MIN_SIMILARITY and kept(text, segment.target):
        record.update(text=segment.target, best_match_similarity=round(similarity, 4))
    return record


def worst_level(levels: Sequence[str | None]) -> str | None:
    """The lowest of the levels its sentences were decoded at (None: all as asked)."""
    ranked = [level for level in levels if level is not None]
    return max(ranked, key=DEGRADED_LEVELS.index) if ranked else None


def _checked(unit: str, masked: Masked | None, record: dict[str, Any]) -> dict[str, Any] | None:
    """The record with its markers put back, if it kept every non-translatable of `unit`."""
    text = record["text"]
    if masked is not None:
        unmasked = masked.unmask(text)
        if unmasked is None:
            return None
        pieces = []
        for piece in record["pieces_used"]:
            span = piece["span"]
            if span is not None:
                span = [masked.moved(text, span[0]), masked.moved(text, span[1])]
            pieces.append({**piece, "span": span})
        unguided = record["unguided"]
        if unguided is not None:
            unguided = masked.unmask(unguided) or unguided
        record = {**record, "text": unmasked, "unguided": unguided, "pieces_used": pieces}
    if not kept(unit, record["text"]):
        return None
    return {**record, "non_translatables": "model" if protected(unit) else None}


def _translate_runs(
    services: Services,
    translator: Any,
    mt_options: Any,
    names: dict[int, str],
    units: Sequence[str],
    lost: Sequence[int],
    records: list[dict[str, Any]],
    stage_ms: list[dict[str, float]],
    deadline: float | None = None,
    glossary: Glossary | None = None,
) -> None:
    """The sentences whose translation lost a non-translatable, translated run by run."""
    layouts: list[Layout] = [runs_layout(units[i]) for i in lost]
    texts = [run for layout in layouts for run in layout.units]
    decoded = _decode(services, translator, mt_options, names, texts, deadline, glossary)
    start = 0
    for i, layout in zip(lost, layouts, strict=True):
        span = slice(start, start + len(layout.units))
        start = span.stop
        records[i] = {
            **joined_translation(layout, decoded.records[span]),
            "non_translatables": "runs",
            "degraded": worst_level([one.get("degraded") for one in decoded.records[span]]),
        }
        stage_ms[i] = _summed([stage_ms[i], *decoded.stage_ms[span]])


def _enclosed(record: dict[str, Any], lead: str, trail: str) -> dict[str, Any]:
    """The record of a sentence's text with the tags that enclosed it put back around it."""
    if not lead and not trail:
        return record
    pieces = []
    for piece in record["pieces_used"]:
        span = piece["span"]
        pieces.append(
            {**piece, "span": [span[0] + len(lead), span[1] + len(lead)] if span else None}
        )
    unguided = record["unguided"]
    return {
        **record,
        "text": lead + record["text"] + trail,
        "unguided": lead + unguided + trail if unguided is not None else None,
        "pieces_used": pieces,
        "non_translatables": record.get("non_translatables") or "model",
    }


def _how_kept(records: Sequence[dict[str, Any]]) -> str | None:
    """runs when any sentence fell back to its runs, model when the model kept them all, None
    for a segment without non-translatables."""
    ways = {record.get("non_translatables") for record in records}
    return "runs" if "runs" in ways else "model" if "model" in ways else None


def _stage_timings(pieces: Any, decoded_ms: dict[str, float], queued_s: float) -> dict[str, float]:
    """Retrieval and piece collection as the piece builder measured them, the wait for the
    decoding thread, then decoding (this sentence's share of its engine call)."""
    timings = {
        "retrieval": 0.0,
        "pieces": 0.0,
        "queue": round(queued_s * 1000, 3),
        "decoding": decoded_ms.get("decoding", 0.0),
    }
    if pieces is not None:
        retrieval = pieces.timings.get("retrieval", 0.0)
        timings["retrieval"] = round(retrieval * 1000, 3)
        timings["pieces"] = round((pieces.timings.get("total", 0.0) - retrieval) * 1000, 3)
    timings["total"] = round(sum(timings.values()), 3)
    return timings


def _summed(timings: Sequence[dict[str, float]]) -> dict[str, float]:
    """A segment's stage timings: its sentences' added up (the queue wait counted once)."""
    present = [one for one in timings if one]
    if len(present) == 1:
        return present[0]
    out: dict[str, float] = {}
    for one in present:
        for stage, ms in one.items():
            out[stage] = (
                max(out.get(stage, 0.0), ms) if stage == "queue" else out.get(stage, 0.0) + ms
            )
    if "total" in out:
        out["total"] = sum(v for k, v in out.items() if k != "total")
    return {k: round(v, 3) for k, v in out.items()}
