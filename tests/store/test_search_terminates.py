"""Every search answers, whatever sequence of adds, tuid updates and deletes came before it.

A segment rewritten by its tuid leaves older documents of it on disk that the index's in-memory
overlay hides; the search widens its window past them. These tests drive random sequences of
changes, with searches between them and restarts of the store, on both backends, and require
each search to answer within a bound, with no segment twice and only segments that exist.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tm_guide.errors import NotFound
from tm_guide.index import IndexOptions
from tm_guide.records import SegmentRecord
from tm_guide.store import Store, StoreOptions

SEARCH_BOUND_S = 10.0  # a search takes milliseconds; this only tells a hang from slowness
WORDS = ["open", "the", "dialog", "save", "file", "menu", "print", "window", "close", "page"]
TUIDS = [f"t{i}" for i in range(6)]
MEMORY_NUMBERS = itertools.count()  # a new memory for every example

sentence = st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(" ".join)
operation = st.one_of(
    st.tuples(st.just("add"), sentence, st.sampled_from([None, *TUIDS])),
    st.tuples(st.just("update"), sentence, st.sampled_from(TUIDS)),
    st.tuples(st.just("delete"), st.integers(0, 40), st.none()),
    st.tuples(st.just("search"), sentence, st.integers(1, 6)),
    st.tuples(st.just("import"), st.lists(sentence, min_size=1, max_size=12), st.booleans()),
    st.tuples(st.just("reopen"), st.none(), st.none()),
)


def bounded_search(store: Store, memory_id: int, text: str, limit: int) -> list[Any]:
    answer: list[Any] = []
    worker = threading.Thread(
        target=lambda: answer.append(store.search([memory_id], text, limit)), daemon=True
    )
    worker.start()
    worker.join(SEARCH_BOUND_S)
    assert not worker.is_alive(), f"search {text!r} (limit {limit}) did not answer"
    return answer[0]


def options() -> StoreOptions:
    # a small buffer, so that changes reach the disk often and old documents pile up there
    return StoreOptions(index=IndexOptions(buffer_docs=4, refresh_interval_s=0.0))


def run(db_url: str, index_dir: Path, name: str, operations: list[tuple[Any, Any, Any]]) -> None:
    store = Store.open(db_url, index_dir, options())
    try:
        memory = store.create_memory(name, "en", "de")
        for kind, text, extra in operations:
            memory = store.get_memory(memory.id)
            if kind == "add":
                store.write_segment(memory, SegmentRecord(text, f"{text} (de)", tuid=extra))
            elif kind == "update":
                with contextlib.suppress(NotFound):  # no segment has that tuid yet
                    store.update_segment(
                        memory, extra, SegmentRecord(text, f"{text} (neu)", tuid=extra)
                    )
            elif kind == "delete":
                ids = [s.id for s in store.iter_segments(memory)]
                if ids:
                    store.delete_segment(memory, ids[text % len(ids)])
            elif kind == "import":  # with tuids, the ones updates and adds then reuse
                records = [
                    SegmentRecord(t, f"{t} (imp)", tuid=TUIDS[i % len(TUIDS)] if extra else None)
                    for i, t in enumerate(text)
                ]
                store.import_records(memory, records)
            elif kind == "reopen":
                store.close()
                store = Store.open(db_url, index_dir, options())
            else:
                hits = bounded_search(store, memory.id, text, extra)
                ids = [hit.segment.id for hit in hits]
                assert len(ids) == len(set(ids)), ids
                assert len(ids) <= extra
                existing = {s.id for s in store.iter_segments(store.get_memory(memory.id))}
                assert set(ids) <= existing
        for text in ("open the dialog", "save file menu"):  # the final state too
            bounded_search(store, memory.id, text, 10)
    finally:
        store.close()


def test_update_by_tuid_then_add_with_that_tuid_answers(db_url: str, index_dir: Path) -> None:
    """The sequence that once spun a worker thread forever: a 30-unit import, an update by
    tuid, then an add that reuses the tuid, then a lookup of that text, before and after a
    restart."""
    with Store.open(db_url, index_dir) as store:
        memory = store.create_memory("dup", "en", "de")
        store.import_records(
            memory,
            [
                SegmentRecord(f"Open the dialog number {i} now.", f"Öffnen {i}.", tuid=f"dup-{i}")
                for i in range(30)
            ],
        )
        text = "Open the dialog number 5 now."
        store.update_segment(
            store.get_memory("dup"), "dup-5", SegmentRecord(text, "Neu 5.", tuid="dup-5")
        )
        store.write_segment(store.get_memory("dup"), SegmentRecord(text, "Neuer 5.", tuid="dup-5"))
        hits = bounded_search(store, memory.id, text, 10)
        assert hits[0].segment.source == text and hits[0].segment.target == "Neuer 5."
        assert len({hit.segment.id for hit in hits}) == len(hits) == 10
    with Store.open(db_url, index_dir) as store:
        hits = bounded_search(store, memory.id, text, 10)
        assert hits[0].segment.target == "Neuer 5."


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(operation, min_size=1, max_size=30))
def test_random_changes_never_hang_a_search(
    db_url: str, index_dir: Path, operations: list[tuple[Any, Any, Any]]
) -> None:
    run(db_url, index_dir, f"m{next(MEMORY_NUMBERS)}", operations)
