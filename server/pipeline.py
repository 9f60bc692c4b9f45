"""The text pipeline around the model, for every protocol: what a CAT tool sends in, what a
translator can insert as it is out.

1. Each segment is cut into sentences, its layout kept aside (tm_guide.text.layout): lines,
   indentation, surrounding whitespace, and lines with nothing to translate.
2. Tags enclosing a sentence stay where they are, outside what the model sees; markers the
   model garbles are masked as placeholders it copies (tm_guide.text.placeholders).
3. Every sentence of the batch is decoded in one guided batch (tm_guide.server.sentences: by
   the protocol's deadline, a glossary's terms put in).
4. Each translation must hold its sentence's non-translatables exactly once each; one that does
   not is translated again with all of them masked as placeholders (a second batch, only for
   those). Where that loses one even so, the lost ones are put back beside the words their
   neighbours were aligned to (tm_guide.text.placement); only for a model without alignment
   priors is the sentence replaced by the translation of the runs between them, the
   non-translatables kept in their order (a third batch).
5. The sentences' records are joined into the segment's (tm_guide.server.layouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tm_guide.matching import exact_match, match_percentage
from tm_guide.server.layouts import joined_translation
from tm_guide.server.results import Timing, Translation
from tm_guide.server.sentences import SentenceDecoder, worst_level
from tm_guide.text import Layout, layout_of
from tm_guide.text.layout import LONG_SENTENCE_WORDS
from tm_guide.text.placeholders import (
    Masked,
    enclosed,
    kept,
    mask,
    mask_all,
    protected,
    runs_layout,
)
from tm_guide.text.placement import place_lost


@dataclass(frozen=True)
class SegmentTranslation:
    """One segment's translation (its sentences' joined); the fuzzy matches its retrieval
    found when the segment was one sentence as it is (None: search the segment); and its stage
    timings."""

    translation: Translation
    matches: list[Any] | None
    timing: Timing


def translate_segments(
    decoder: SentenceDecoder,
    sources: Sequence[str],
    language: str,
    penalties: dict[int, int] | None = None,
) -> list[SegmentTranslation]:
    """Every segment translated through the pipeline above, in one batch (more when a sentence
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
    records = [Translation.verbatim(unit) for unit in units]
    timings = [Timing() for _ in units]
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
        pieces[i], timings[i] = decoded.pieces[at], decoded.timings[at]
        verbatim = (
            _tm_target(units[i], decoded.pieces[at], penalties)
            if penalties is not None and i in inside
            else None
        )
        if verbatim is not None:
            records[i] = decoded.translations[at].with_text(verbatim, ())
            continue
        record = _checked(units[i], masks[i], decoded.translations[at])
        if record is None:
            lost.append(i)
        else:
            records[i] = record
    if lost:
        lost, masked = _translate_masked(decoder, units, lost, records, timings)
        lost = _placed(decoder, units, lost, masked, records)
    if lost:
        _translate_runs(decoder, units, lost, records, timings)
    records = [
        _enclosed(record, lead, trail)
        for record, (lead, _, trail) in zip(records, edges, strict=True)
    ]

    out = []
    for source, layout, span in zip(sources, layouts, spans, strict=True):
        own = records[span]
        record = joined_translation(layout, own) if own else Translation.verbatim(source)
        record = replace(
            record,
            non_translatables=_how_kept(own),
            degraded=worst_level([one.degraded for one in own]),
        )
        matches = None
        if _whole(layout, edges, span):  # its retrieval was the segment's
            collected = pieces[span.start]
            matches = list(collected.matches) if collected is not None else []
        out.append(SegmentTranslation(record, matches, Timing.summed(timings[span])))
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


def _checked(unit: str, masked: Masked | None, record: Translation) -> Translation | None:
    """The translation with its markers put back, if it kept every non-translatable of `unit`."""
    if masked is not None:
        text = record.text
        unmasked = masked.unmask(text)
        if unmasked is None:
            return None
        pieces = [piece.remapped(lambda at: masked.moved(text, at)) for piece in record.pieces_used]
        unguided = record.unguided
        if unguided is not None:
            unguided = masked.unmask(unguided) or unguided
        record = replace(record, text=unmasked, unguided=unguided, pieces_used=tuple(pieces))
    if not kept(unit, record.text):
        return None
    return replace(record, non_translatables="model" if protected(unit) else None)


def _translate_masked(
    decoder: SentenceDecoder,
    units: Sequence[str],
    lost: Sequence[int],
    records: list[Translation],
    timings: list[Timing],
) -> tuple[list[int], dict[int, tuple[Masked, Translation]]]:
    """The sentences whose translation lost a non-translatable, translated again with all of
    them masked; those that lose one again (or cannot be masked) are returned, with the masked
    translation of each that could be masked."""
    masks = {i: mask_all(units[i]) for i in lost}
    wanted = [i for i in lost if masks[i] is not None]
    still = [i for i in lost if masks[i] is None]
    failed: dict[int, tuple[Masked, Translation]] = {}
    if not wanted:
        return still, failed
    decoded = decoder.decode([masks[i].text for i in wanted])  # type: ignore[union-attr]
    for at, i in enumerate(wanted):
        timings[i] = Timing.summed([timings[i], decoded.timings[at]])
        record = _checked(units[i], masks[i], decoded.translations[at])
        if record is None:
            still.append(i)
            failed[i] = (masks[i], decoded.translations[at])  # type: ignore[assignment]
        else:
            records[i] = replace(record, non_translatables="masked")
    return sorted(still), failed


def _placed(
    decoder: SentenceDecoder,
    units: Sequence[str],
    lost: Sequence[int],
    masked: dict[int, tuple[Masked, Translation]],
    records: list[Translation],
) -> list[int]:
    """The masked translations that lost a stand-in anyway, each stand-in put back where the
    word alignment says (tm_guide.text.placement); those without a masked translation, or
    where the model has no alignment priors, are returned."""
    wanted = [i for i in lost if i in masked]
    if not wanted:
        return list(lost)
    aligner = decoder.services.word_aligner()
    if aligner is None:
        return list(lost)
    still = [i for i in lost if i not in masked]
    for i in wanted:
        stand_ins, translation = masked[i]
        placed = place_lost(stand_ins.text, translation.text, len(stand_ins.originals), aligner)
        pieces = [piece.remapped(placed.moved) for piece in translation.pieces_used]
        record = _checked(units[i], stand_ins, translation.with_text(placed.text, pieces))
        if record is None:
            still.append(i)
        else:
            records[i] = replace(record, non_translatables="aligned")
    return sorted(still)


def _translate_runs(
    decoder: SentenceDecoder,
    units: Sequence[str],
    lost: Sequence[int],
    records: list[Translation],
    timings: list[Timing],
) -> None:
    """The sentences whose translation lost a non-translatable, translated run by run."""
    layouts: list[Layout] = [runs_layout(units[i]) for i in lost]
    texts = [run for layout in layouts for run in layout.units]
    decoded = decoder.decode(texts)
    start = 0
    for i, layout in zip(lost, layouts, strict=True):
        span = slice(start, start + len(layout.units))
        start = span.stop
        records[i] = replace(
            joined_translation(layout, decoded.translations[span]),
            non_translatables="runs",
            degraded=worst_level([one.degraded for one in decoded.translations[span]]),
        )
        timings[i] = Timing.summed([timings[i], *decoded.timings[span]])


def _enclosed(record: Translation, lead: str, trail: str) -> Translation:
    """The translation of a sentence's text with the tags that enclosed it put back around it."""
    if not lead and not trail:
        return record
    unguided = record.unguided
    return replace(
        record,
        text=lead + record.text + trail,
        unguided=lead + unguided + trail if unguided is not None else None,
        pieces_used=tuple(piece.moved(len(lead)) for piece in record.pieces_used),
        non_translatables=record.non_translatables or "model",
    )


def _how_kept(records: Sequence[Translation]) -> str | None:
    """The segment's worst way of keeping them: runs when any sentence fell back to its runs,
    aligned when any had one put back by alignment, masked when any was translated again with
    them masked, model when the model kept them all; None for a segment without
    non-translatables."""
    ways = {record.non_translatables for record in records}
    return next((way for way in ("runs", "aligned", "masked", "model") if way in ways), None)
