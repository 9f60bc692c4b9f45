"""The text pipeline around the model, for every protocol: what a CAT tool sends in, what a
translator can insert as it is out.

1. Each segment is cut into sentences, its layout kept aside (tm_guide.text.layout): lines,
   indentation, surrounding whitespace, and lines with nothing to translate.
2. Tags enclosing a sentence stay where they are, outside what the model sees; markers the
   model garbles are masked as placeholders it copies (tm_guide.text.placeholders).
3. Every sentence of the batch is decoded in one guided batch (tm_guide.server.sentences: by
   the protocol's deadline, a glossary's terms put in).
4. Each translation must hold its sentence's non-translatables exactly once each; one that does
   not is replaced by the translation of the runs between them, the non-translatables kept in
   their order (a second batch, only for those).
5. The sentences' records are joined into the segment's (tm_guide.server.layouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tm_guide.matching import exact_match, match_percentage
from tm_guide.server.layouts import joined_translation, moved_pieces, verbatim_translation
from tm_guide.server.sentences import SentenceDecoder, summed, worst_level
from tm_guide.text import Layout, layout_of
from tm_guide.text.layout import LONG_SENTENCE_WORDS
from tm_guide.text.placeholders import Masked, enclosed, kept, mask, protected, runs_layout


@dataclass(frozen=True)
class SegmentTranslation:
    """One segment's translation record (translations_json's shape, joined); the fuzzy matches
    its retrieval found when the segment was one sentence as it is (None: search the segment);
    and its stage timings."""

    record: dict[str, Any]
    matches: list[Any] | None
    stage_ms: dict[str, float]


def translate_segments(
    decoder: SentenceDecoder,
    sources: Sequence[str],
    language: str,
    penalties: dict[int, int] | None = None,
) -> list[SegmentTranslation]:
    """Every segment translated through the pipeline above, in one batch (two when a sentence
    lost a non-translatable), by `decoder` (its deadline and glossary: tm_guide.server.sentences).
    With `penalties` (memory id -> points, as the request's), a sentence that a memory holds
    verbatim, within a segment that is more than that sentence, takes the TM target, as a CAT
    tool inserts a 100% match (a segment that is one sentence as it is gets that from suggest(),
    which says so in its origin)."""
    layouts = [_layout(decoder, source, language) for source in sources]
    edges = [enclosed(unit) for layout in layouts for unit in layout.units]
    units = [core for _, core, _ in edges]  # what the model translates of each sentence
    masks = [mask(unit) for unit in units]
    wanted = [i for i, unit in enumerate(units) if runs_layout(unit).units]
    decoded = decoder.decode(
        [(masks[i].text if masks[i] else units[i]) for i in wanted]  # type: ignore[union-attr]
    )
    records: list[dict[str, Any]] = [verbatim_translation(unit) for unit in units]
    stage_ms: list[dict[str, float]] = [{} for _ in units]
    pieces: list[Any] = [None] * len(units)
    lost = []
    spans = _spans(layouts)
    # the sentences of segments that are more than one sentence as it is
    inside = {
        i
        for layout, span in zip(layouts, spans, strict=True)
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
        _translate_runs(decoder, units, lost, records, stage_ms)
    records = [
        _enclosed(record, lead, trail)
        for record, (lead, _, trail) in zip(records, edges, strict=True)
    ]

    out = []
    for source, layout, span in zip(sources, layouts, spans, strict=True):
        own = records[span]
        record = joined_translation(layout, own) if own else verbatim_translation(source)
        record["non_translatables"] = _how_kept(own)
        record["degraded"] = worst_level([one.get("degraded") for one in own])
        matches = None
        if _whole(layout, edges, span):  # its retrieval was the segment's
            collected = pieces[span.start]
            matches = list(collected.matches) if collected is not None else []
        out.append(SegmentTranslation(record, matches, summed(stage_ms[span])))
    return out


def _layout(decoder: SentenceDecoder, source: str, language: str) -> Layout:
    """The segment's layout: a long sentence cut into clauses (tm_guide.text.layout), unless the
    memories hold a close match of the segment, which is repaired whole."""
    layout = layout_of(source, language)
    if len(source.split()) <= LONG_SENTENCE_WORDS:  # no sentence of it was cut
        return layout
    whole = layout_of(source, language, max_words=0)
    if len(layout.units) > len(whole.units) and decoder.has_close_match(source):
        return whole
    return layout


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
    decoder: SentenceDecoder,
    units: Sequence[str],
    lost: Sequence[int],
    records: list[dict[str, Any]],
    stage_ms: list[dict[str, float]],
) -> None:
    """The sentences whose translation lost a non-translatable, translated run by run."""
    layouts: list[Layout] = [runs_layout(units[i]) for i in lost]
    texts = [run for layout in layouts for run in layout.units]
    decoded = decoder.decode(texts)
    start = 0
    for i, layout in zip(lost, layouts, strict=True):
        span = slice(start, start + len(layout.units))
        start = span.stop
        records[i] = {
            **joined_translation(layout, decoded.records[span]),
            "non_translatables": "runs",
            "degraded": worst_level([one.get("degraded") for one in decoded.records[span]]),
        }
        stage_ms[i] = summed([stage_ms[i], *decoded.stage_ms[span]])


def _enclosed(record: dict[str, Any], lead: str, trail: str) -> dict[str, Any]:
    """The record of a sentence's text with the tags that enclosed it put back around it."""
    if not lead and not trail:
        return record
    unguided = record["unguided"]
    return {
        **record,
        "text": lead + record["text"] + trail,
        "unguided": lead + unguided + trail if unguided is not None else None,
        "pieces_used": moved_pieces(record["pieces_used"], len(lead)),
        "non_translatables": record.get("non_translatables") or "model",
    }


def _how_kept(records: Sequence[dict[str, Any]]) -> str | None:
    """runs when any sentence fell back to its runs, model when the model kept them all, None
    for a segment without non-translatables."""
    ways = {record.get("non_translatables") for record in records}
    return "runs" if "runs" in ways else "model" if "model" in ways else None
