"""The background aligner: queued segments get aligned in batches; what changed meanwhile is
counted, not redone; a failing run loses nothing and the thread goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tm_guide.pieces.align import AlignOptions, MemoryAligner
from tm_guide.pieces.deferred import DeferredAligner, DeferredOptions
from tm_guide.records import SegmentRecord


def _recorder() -> tuple[dict[str, int], Any]:
    seen: dict[str, int] = {}

    def record(outcome: str, count: int) -> None:
        seen[outcome] = seen.get(outcome, 0) + count

    return seen, record


@pytest.fixture
def aligner(store, gold_tokenizer, tmp_path: Path) -> MemoryAligner:  # type: ignore[no-untyped-def]
    return MemoryAligner(store, gold_tokenizer, AlignOptions(cache_dir=tmp_path / "priors"))


def test_queued_segments_are_aligned_and_changes_meanwhile_are_counted(store, aligner):  # type: ignore[no-untyped-def]
    memory = store.get_memory("ui")
    seen, record = _recorder()
    deferred = DeferredAligner(aligner, DeferredOptions(linger_s=0.05), on_outcome=record)
    added = [
        store.add_segment(memory, SegmentRecord(f"the new house {i}", f"das neue Haus {i}"))
        for i in range(5)
    ]
    aligner.align_segments(added[:1])  # a query aligned this one on demand first
    store.delete_segment(memory, added[1].id)  # and this one was deleted
    deferred.submit(s.id for s in added)
    assert deferred.drain(60)
    assert deferred.pending() == 0
    assert seen == {"aligned": 3, "current": 1, "gone": 1}
    for segment in store.get_segments([s.id for s in added[2:]]):
        assert aligner.is_current(segment)
    deferred.close()
    deferred.submit([added[0].id])  # after close: ignored, not an error
    assert deferred.pending() == 0


def test_a_failing_run_loses_nothing_and_the_next_run_goes_on(store, aligner):  # type: ignore[no-untyped-def]
    memory = store.get_memory("ui")
    seen, record = _recorder()
    deferred = DeferredAligner(aligner, DeferredOptions(linger_s=0), on_outcome=record)
    first = store.add_segment(memory, SegmentRecord("the broken house", "das kaputte Haus"))
    real = aligner.align_segments
    calls = []

    def fail_once(segments):  # type: ignore[no-untyped-def]
        calls.append(len(segments))
        if len(calls) == 1:
            raise RuntimeError("eflomal crashed")
        return real(segments)

    aligner.align_segments = fail_once  # type: ignore[method-assign]
    deferred.submit([first.id])
    assert deferred.drain(60)
    assert seen == {"failed": 1}
    assert not aligner.is_current(store.get_segments([first.id])[0])  # stored, unaligned
    second = store.add_segment(memory, SegmentRecord("the whole house", "das ganze Haus"))
    deferred.submit([second.id])
    assert deferred.drain(60)
    assert seen == {"failed": 1, "aligned": 1}
    deferred.close()


@pytest.mark.parametrize(("max_batch", "linger_s"), [(0, 0.0), (1, -1.0)])
def test_bad_options_are_refused(max_batch: int, linger_s: float) -> None:
    with pytest.raises(ValueError):
        DeferredOptions(max_batch=max_batch, linger_s=linger_s)
