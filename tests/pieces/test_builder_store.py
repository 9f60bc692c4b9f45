"""The aligner and the piece builder on a real store (SQLite file + full-text index)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.pieces.align import ALIGNER_ID, AlignOptions, MemoryAligner
from tm_guide.pieces.builder import PieceBuilder, PieceOptions
from tm_guide.pieces.priors import AlignmentPriors
from tm_guide.pieces.tokenizer import WhitespaceTokenizer
from tm_guide.pieces.weighting import PieceWeighting
from tm_guide.records import SegmentRecord


def ngrams_of(tokens, max_n=4):  # type: ignore[no-untyped-def]
    return {
        tuple(tokens[i : j + 1])
        for i in range(len(tokens))
        for j in range(i, min(len(tokens), i + max_n))
    }


@pytest.fixture
def memory(store):  # type: ignore[no-untyped-def]
    return store.get_memory("ui")


@pytest.fixture
def aligner(store, gold_tokenizer, tmp_path: Path) -> MemoryAligner:  # type: ignore[no-untyped-def]
    return MemoryAligner(store, gold_tokenizer, AlignOptions(cache_dir=tmp_path / "tm" / "priors"))


def test_bulk_alignment_records_tokenizer_and_aligner(  # type: ignore[no-untyped-def]
    store, memory, aligner, gold_tokenizer, aligned_template
):
    report = aligned_template[1]
    assert (report.mode, report.aligned) == ("full", memory.segment_count)
    for segment in store.iter_segments(memory):
        assert segment.tokenizer_id == gold_tokenizer.tokenizer_id
        assert segment.aligner_id == ALIGNER_ID
        assert segment.source_tokens == gold_tokenizer.encode_source(segment.source)
        assert segment.target_tokens == gold_tokenizer.encode_target(segment.target)
        assert all(
            0 <= s < len(segment.source_tokens) and 0 <= t < len(segment.target_tokens)
            for s, t in segment.alignment
        )
    assert aligner.align_memory(memory, mode="stale").mode == "none"


def test_priors_are_cached_and_reloadable(memory, aligner, tmp_path: Path):  # type: ignore[no-untyped-def]
    [path] = (tmp_path / "tm" / "priors").iterdir()
    priors = AlignmentPriors.load(path)
    assert priors.pairs == memory.segment_count
    assert priors.lexical == aligner.priors_for(memory).lexical


def test_exact_match_yields_every_target_ngram_with_score_1(store, memory, aligner, gold_tokenizer):  # type: ignore[no-untyped-def]
    builder = PieceBuilder(store, gold_tokenizer, aligner=aligner)
    text = "You do not have permission to open this file ."
    pieces = builder.collect(text, [memory.id])
    best = pieces.matches[0]
    assert best.segment.source == text and best.similarity == 1.0
    expected = ngrams_of(best.segment.target_tokens)
    assert expected <= set(pieces.ngrams)
    assert all(pieces.ngrams[ngram] == 1.0 for ngram in expected)
    assert all(best.segment.id in pieces.provenance[ngram] for ngram in expected)
    assert set(best.segment.target_tokens) <= pieces.unigrams
    assert all(0.0 <= score <= 1.0 for score in pieces.ngrams.values())
    assert len(pieces.matches) <= 10
    assert {"retrieval", "edit_distance", "collection", "total"} <= set(pieces.timings)


def test_options_change_scores_and_filter(store, memory, aligner, gold_tokenizer):  # type: ignore[no-untyped-def]
    builder = PieceBuilder(store, gold_tokenizer, aligner=aligner)
    text = "Do you want to save the document ?"
    graded = builder.collect(text, [memory.id], PieceOptions(m=20))
    assert any(score < 1.0 for score in graded.ngrams.values())
    binary = builder.collect(text, [memory.id], PieceOptions(m=20, binary_reward=True))
    assert set(binary.ngrams) == set(graded.ngrams)
    assert set(binary.ngrams.values()) == {1.0}
    strict = builder.collect(text, [memory.id], PieceOptions(m=20, min_similarity=0.8))
    assert set(strict.ngrams) < set(graded.ngrams)
    kept = {m.segment.id for m in strict.matches if m.similarity >= 0.8}
    assert all(set(ids) & kept for ids in strict.provenance.values())
    assert len(builder.collect(text, [memory.id], PieceOptions(m=3)).matches) <= 3


def test_weighting_and_clipping_follow_the_match(store, memory, aligner, gold_tokenizer):  # type: ignore[no-untyped-def]
    builder = PieceBuilder(store, gold_tokenizer, aligner=aligner)
    text = "Do you want to save the document ?"
    graded = builder.collect(text, [memory.id], PieceOptions(m=20))
    assert graded.limits == {}  # not clipped: the search's pieces-once limits apply
    squared = builder.collect(
        text, [memory.id], PieceOptions(m=20, weighting=PieceWeighting("power", power=2.0))
    )
    assert set(squared.ngrams) == set(graded.ngrams)
    for ngram, score in graded.ngrams.items():
        assert squared.ngrams[ngram] == pytest.approx(score**2)
    clipped = builder.collect(text, [memory.id], PieceOptions(m=20, clipped=True))
    assert set(clipped.limits) == set(clipped.ngrams)
    for ngram, limit in clipped.limits.items():
        # at most the times one TM target it came from holds it (piece_counts: only occurrences
        # aligned to unedited source words count), in any case and however its text is cut
        # into tokens: the target's first word is written small, and encoded again, where the
        # input no longer leads with its source's (letter_case.py)
        counts = []
        text = "".join(ngram).casefold()
        for match in clipped.matches:
            if match.segment.id in clipped.provenance[ngram]:
                counts.append("".join(match.segment.target_tokens).casefold().count(text))
        assert 1 <= limit <= max(counts), ngram


def test_piece_weighting_rules() -> None:
    assert PieceWeighting.parse("linear").weight(0.7) == 0.7
    assert PieceWeighting.parse("power:2").weight(0.5) == 0.25
    step = PieceWeighting.parse("step:0.8:2")
    assert (step.weight(0.5), step.weight(0.9)) == (0.5, 1.8)
    assert PieceWeighting.parse("power:2.5") == PieceWeighting("power", power=2.5)
    for bad in ("cubic", "power", "power:x", "step:0.5", "power:0", "step:1.5:2"):
        with pytest.raises(InvalidInput):
            PieceWeighting.parse(bad)


def test_unrelated_input_yields_no_pieces(store, memory, aligner, gold_tokenizer):  # type: ignore[no-untyped-def]
    pieces = PieceBuilder(store, gold_tokenizer, aligner=aligner).collect("zzz qqq", [memory.id])
    assert not pieces and pieces.unigrams == frozenset()


def test_added_segment_is_aligned_at_once_and_used(store, memory, aligner, gold_tokenizer):  # type: ignore[no-untyped-def]
    record = SegmentRecord("Export the table as PDF .", "Exportieren Sie die Tabelle als PDF .")
    segment = store.add_segment(memory, record)
    started = time.perf_counter()
    analyses = aligner.align_segments([segment])
    assert time.perf_counter() - started < 5  # generous: the bench measures the real figure
    assert analyses[segment.id].tokenizer_id == gold_tokenizer.tokenizer_id
    [stored] = store.get_segments([segment.id])
    assert aligner.is_current(stored)
    pieces = PieceBuilder(store, gold_tokenizer, aligner=aligner).collect(
        record.source, [memory.id]
    )
    assert pieces.matches[0].segment.id == segment.id
    assert tuple(gold_tokenizer.encode_target("als PDF .")) in pieces.ngrams


def test_builder_aligns_unaligned_segments_on_the_fly(store, memory, aligner, gold_tokenizer):  # type: ignore[no-untyped-def]
    record = SegmentRecord("Print the selected table .", "Drucken Sie die ausgewählte Tabelle .")
    segment = store.add_segment(memory, record)
    pieces = PieceBuilder(store, gold_tokenizer, aligner=aligner).collect(
        record.source, [memory.id]
    )
    assert segment.id in {m.segment.id for m in pieces.matches}
    assert ngrams_of(gold_tokenizer.encode_target(record.target)) <= set(pieces.ngrams)
    [stored] = store.get_segments([segment.id])
    assert aligner.is_current(stored)


def test_another_tokenizer_makes_alignments_stale(store, memory, aligner):  # type: ignore[no-untyped-def]
    words = MemoryAligner(store, WhitespaceTokenizer())
    assert not any(words.is_current(s) for s in store.iter_segments(memory))
    assert words.align_memory(memory).mode == "full"
    for segment in store.iter_segments(memory):
        assert segment.tokenizer_id == "whitespace"
        assert segment.source_tokens == segment.source.split()


def test_piece_options_are_checked() -> None:
    with pytest.raises(InvalidInput, match="m must be between 1 and 100"):
        PieceOptions(m=101)
    with pytest.raises(InvalidInput, match="min_similarity"):
        PieceOptions(min_similarity=1.5)


def test_a_new_small_memory_is_aligned_with_its_first_segments(store, gold_pairs, gold_tokenizer):  # type: ignore[no-untyped-def]
    """Too few pairs for priors: the new segment is aligned together with the whole (small)
    memory, which comes out aligned as well."""
    small = store.create_memory("small", "en", "de")
    store.import_records(
        small, [SegmentRecord(" ".join(p.source), " ".join(p.target)) for p in gold_pairs[:60]]
    )
    small = store.get_memory(small.id)
    aligner = MemoryAligner(store, gold_tokenizer)
    assert aligner.priors_for(small) is None
    segment = store.add_segment(
        small, SegmentRecord("Close all windows .", "Alle Fenster schließen .")
    )
    aligner.align_segments([segment])
    segments = list(store.iter_segments(small))
    assert len(segments) == 61 and all(aligner.is_current(s) for s in segments)


def _count_estimations(aligner: MemoryAligner) -> list[int]:
    calls: list[int] = []
    estimate = aligner._estimate_from_store

    def counted(memory):  # type: ignore[no-untyped-def]
        calls.append(memory.id)
        time.sleep(0.05)  # long enough for the other callers to arrive meanwhile
        return estimate(memory)

    aligner._estimate_from_store = counted  # type: ignore[method-assign]
    return calls


def test_priors_of_an_import_aligned_through_an_older_memory_object_stay_fresh(  # type: ignore[no-untyped-def]
    store, gold_pairs, gold_tokenizer, tmp_path: Path
):
    """An import job holds the memory as read before the import (0 segments) and aligns with
    it: the priors still count the segments they came from, so the first add does not
    re-estimate them from the whole memory."""
    before_import = store.create_memory("job", "en", "de")
    store.import_records(
        before_import,
        [SegmentRecord(" ".join(p.source), " ".join(p.target)) for p in gold_pairs],
    )
    aligner = MemoryAligner(store, gold_tokenizer, AlignOptions(cache_dir=tmp_path / "p"))
    aligner.align_memory(before_import)
    estimations = _count_estimations(aligner)
    assert aligner.priors_for(store.get_memory("job")) is not None
    assert estimations == []


def test_concurrent_adds_share_one_estimation_of_due_priors(  # type: ignore[no-untyped-def]
    store, memory, gold_tokenizer
):
    import threading

    aligner = MemoryAligner(store, gold_tokenizer)  # no priors known: estimation is due
    estimations = _count_estimations(aligner)
    found: list[object] = []
    threads = [
        threading.Thread(target=lambda: found.append(aligner.priors_for(memory))) for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert estimations == [memory.id]
    assert len(found) == 6 and all(p is found[0] and p is not None for p in found)


def test_segments_aligned_one_batch_at_a_time_grow_the_priors_without_rereading(  # type: ignore[no-untyped-def]
    store, memory, aligner
):
    """A memory growing by single adds (past the refresh fraction) keeps its priors: each aligned
    batch is counted into them instead of a re-estimation that reads the whole memory."""
    priors = aligner.priors_for(memory)
    assert priors is not None
    pairs_before = priors.pairs
    estimations = _count_estimations(aligner)
    grow_by = int(memory.segment_count * aligner.options.refresh_fraction) + 5
    for start in range(0, grow_by, 7):  # added and aligned a few at a time, as a server does
        batch = [
            store.add_segment(memory, SegmentRecord(f"the new house {i}", f"das neue Haus {i}"))
            for i in range(start, min(start + 7, grow_by))
        ]
        aligner.align_segments(batch)
    grown = store.get_memory(memory.id)
    assert estimations == []
    assert priors.pairs == pairs_before + grow_by
    assert aligner.priors_for(grown) is priors
