"""Two writers at once: nothing lost, duplicates merged, index complete."""

from __future__ import annotations

import threading

from tm_guide.records import SegmentRecord
from tm_guide.store import Store


def test_two_threads_adding(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(30):
                store.add_segment(memory, SegmentRecord(f"{name} sentence {i}", f"{name} Satz {i}"))
                store.add_segment(memory, SegmentRecord(f"shared sentence {i}", f"Satz {i}"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    after = store.get_memory("ui")
    assert after.segment_count == 30 + 30 + 30
    # concurrent writes may share a commit (group_commit.py): one revision per transaction
    assert 2 * 30 <= after.revision <= 4 * 30
    shared = [s for s in store.iter_segments(after) if s.source.startswith("shared")]
    assert len(shared) == 30 and all(s.usage_count == 1 for s in shared)
    assert all(state.current for state in store.index_states())
    for i in (0, 17, 29):
        hits = store.search([memory.id], f"beta sentence {i}", limit=1)
        assert hits[0].segment.source == f"beta sentence {i}"
