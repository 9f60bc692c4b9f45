"""Single adds wait in memory instead of paying a commit, yet every process finds them at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
from whoosh import index as whoosh_index
from whoosh import query

from tm_guide.index import IndexOptions, MemoryKey, WhooshIndex
from tm_guide.index.bm25 import PostingsCache
from tm_guide.records import SegmentRecord
from tm_guide.store import Store, StoreOptions
from tm_guide.store.types import Memory

SENTENCES = [
    ("Open the file in a new window", "Öffnen Sie die Datei in einem neuen Fenster"),
    ("Save the document before closing", "Speichern Sie das Dokument vor dem Schließen"),
    ("The printer is out of paper", "Der Drucker hat kein Papier mehr"),
    ("Restart the computer to finish the update", "Starten Sie den Computer neu"),
    ("Open the print dialog and choose a printer", "Öffnen Sie den Druckdialog"),
    ("Close the window without saving the file", "Schließen Sie das Fenster ohne zu speichern"),
]


def disk_revision(index_dir: Path, memory: Memory) -> int:
    """The revision the committed index files record, as a freshly started process sees it."""
    with whoosh_index.open_dir(str(index_dir / memory.uuid)).searcher() as searcher:
        return int(searcher.document(id="meta")["revision"])


def sources(hits) -> list[str]:  # type: ignore[no-untyped-def]
    return [hit.segment.source for hit in hits]


def test_added_segment_is_found_without_a_commit(db_url: str, index_dir: Path) -> None:
    with Store.open(db_url, index_dir) as store:
        memory = store.create_memory("ui", "en", "de")
        store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
        committed = disk_revision(index_dir, store.get_memory("ui"))
        store.add_segment(memory, SegmentRecord("Empty the recycle bin", "Papierkorb leeren"))
        memory = store.get_memory("ui")
        assert disk_revision(index_dir, memory) == committed < memory.revision
        assert sources(store.search([memory.id], "recycle bin", limit=1)) == [
            "Empty the recycle bin"
        ]
        assert all(state.current for state in store.index_states())
    # Closing commits what waited in memory.
    assert disk_revision(index_dir, memory) == memory.revision


def test_another_store_catches_up_on_unflushed_adds(db_url: str, index_dir: Path) -> None:
    """A second store on the same database and index (another worker, or a restart after a
    crash that lost the buffer) finds the add through the database revision."""
    writer = Store.open(db_url, index_dir)
    try:
        memory = writer.create_memory("ui", "en", "de")
        writer.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
        with Store.open(db_url, index_dir, StoreOptions(repair_index_on_open=False)) as reader:
            assert sources(reader.search([memory.id], "save document", limit=1)) == [
                SENTENCES[1][0]
            ]
            writer.add_segment(memory, SegmentRecord("Empty the recycle bin", "Papierkorb leeren"))
            assert sources(reader.search([memory.id], "recycle bin", limit=1)) == [
                "Empty the recycle bin"
            ]
        # A restart that never saw the buffer: caught up from the database on open.
        with Store.open(db_url, index_dir) as restarted:
            assert all(state.current for state in restarted.index_states())
            assert sources(restarted.search([memory.id], "recycle bin", limit=1)) == [
                "Empty the recycle bin"
            ]
    finally:
        writer.index._open.clear()  # type: ignore[attr-defined]  # a crash: the buffer is lost
        writer.engine.dispose()


def test_update_of_a_committed_segment_hides_its_old_text(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.import_records(
        memory, [SegmentRecord(s, t, tuid=f"t{i}") for i, (s, t) in enumerate(SENTENCES)]
    )
    store.update_segment(memory, "t2", SegmentRecord("The scanner is jammed", "Scanner klemmt"))
    assert "The printer is out of paper" not in sources(store.search([memory.id], "paper"))
    assert sources(store.search([memory.id], "scanner jammed", limit=1)) == [
        "The scanner is jammed"
    ]


def test_full_buffer_is_committed(db_url: str, index_dir: Path) -> None:
    options = StoreOptions(index=IndexOptions(buffer_docs=3))
    with Store.open(db_url, index_dir, options) as store:
        memory = store.create_memory("ui", "en", "de")
        for source, target in SENTENCES:
            store.add_segment(memory, SegmentRecord(source, target))
        memory = store.get_memory("ui")
        assert disk_revision(index_dir, memory) >= memory.revision - 3
        found = sources(store.search([memory.id], "open file window", limit=len(SENTENCES)))
        assert sorted(found) == sorted(
            s for s, _ in SENTENCES if {"open", "file", "window"} & set(s.lower().split())
        )


def _add_in_child(db_url: str, index_dir: str) -> None:
    with Store.open(db_url, Path(index_dir)) as store:
        memory = store.get_memory("ui")
        store.add_segment(memory, SegmentRecord("Empty the recycle bin", "Papierkorb leeren"))
        # Exit without closing: the add never reaches the index files.
        store.index._open.clear()  # type: ignore[attr-defined]


def test_add_in_another_process_is_found(db_url: str, index_dir: Path) -> None:
    with Store.open(db_url, index_dir) as store:
        memory = store.create_memory("ui", "en", "de")
        store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
        assert store.search([memory.id], "recycle bin") == []
        child = multiprocessing.get_context("spawn").Process(
            target=_add_in_child, args=(db_url, str(index_dir))
        )
        child.start()
        child.join(120)
        assert child.exitcode == 0
        assert sources(store.search([memory.id], "recycle bin", limit=1)) == [
            "Empty the recycle bin"
        ]


def test_scores_are_whoosh_bm25(store: Store, index_dir: Path) -> None:
    """The vectorised scorer ranks and scores exactly like whoosh's own BM25F search."""
    memory = store.create_memory("ui", "en", "de")
    store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES[:3]])
    store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES[3:]])
    [gone] = store.concordance(memory, "printer is out")
    store.delete_segment(memory, gone.id)  # a deleted document must not count
    memory = store.get_memory("ui")
    key = MemoryKey(memory.id, memory.uuid, memory.revision)
    wide = WhooshIndex(index_dir, IndexOptions(max_query_terms=100, posting_budget=10**9))
    try:
        text = "open the printer window and close the file"
        ours = wide.search(key, text, limit=10)
        with whoosh_index.open_dir(str(index_dir / memory.uuid)).searcher() as searcher:
            words = sorted(set(text.lower().split()))
            results = searcher.search(query.Or([query.Term("source", w) for w in words]), limit=10)
            theirs = [(int(hit["id"]), hit.score) for hit in results]
        assert len(ours) == len(theirs) > 3
        assert {sid for sid, _ in ours} == {sid for sid, _ in theirs}
        by_id = dict(theirs)
        for sid, score in ours:
            assert abs(score - by_id[sid]) < 1e-9
        assert gone.id not in by_id
    finally:
        wide._open.clear()


def test_cached_postings_follow_committed_changes(db_url: str, index_dir: Path) -> None:
    """Postings decoded once are reused, yet a delete or update that reaches the disk (new
    segment readers, merges) is seen at once, and the ranking stays that of an uncached index."""
    options = StoreOptions(index=IndexOptions(buffer_docs=1))  # every change is committed
    with Store.open(db_url, index_dir, options) as store:
        memory = store.create_memory("ui", "en", "de")
        added = [
            store.add_segment(memory, SegmentRecord(source, target, tuid=source))
            for source, target in SENTENCES  # one whoosh segment per add
        ]
        text = "open the file window"
        assert SENTENCES[0][0] in sources(store.search([memory.id], text, limit=10))
        store.delete_segment(memory, added[0].id)
        store.update_segment(
            memory, SENTENCES[5][0], SegmentRecord("Close the dialog", "Dialog schließen")
        )
        hits = store.search([memory.id], text, limit=10)
        assert SENTENCES[0][0] not in sources(hits)
        assert SENTENCES[5][0] not in sources(hits)
        memory = store.get_memory("ui")
        key = MemoryKey(memory.id, memory.uuid, memory.revision)
        store.index.flush(key)  # type: ignore[attr-defined]
        hits = store.search([memory.id], text, limit=10)
        assert {SENTENCES[0][0], SENTENCES[5][0]}.isdisjoint(sources(hits))
        uncached = WhooshIndex(index_dir, IndexOptions(postings_cache=0))
        try:
            assert [(h.segment.id, h.score) for h in hits] == uncached.search(key, text, 10)
        finally:
            uncached._open.clear()


def test_postings_cache_keeps_its_budget() -> None:
    cache = PostingsCache(budget=100)
    block = (np.arange(25), np.ones(25))
    for word in ("a", "b", "c"):
        cache.put((1, word), block)
    assert cache.get((1, "a")) is not None  # now the most recently used
    cache.put((1, "d"), block)
    cache.put((1, "e"), block)
    assert cache.size == 100
    assert cache.get((1, "b")) is None  # the least recently used went first
    assert cache.get((1, "a")) is not None and cache.get((1, "d")) is not None
    cache.put((1, "huge"), (np.arange(60), np.ones(60)))  # over a quarter of the budget
    assert cache.get((1, "huge")) is None
    cache.retain({2})
    assert cache.size == 0 and cache.get((1, "a")) is None
    absent = (np.zeros(0, dtype=np.int64), np.zeros(0))  # a word missing from a segment
    for number in range(150):
        cache.put((2, f"absent{number}"), absent)
    assert cache.size == 100  # empty entries count too, so they cannot pile up
    assert cache.get((2, "absent0")) is None and cache.get((2, "absent149")) is not None


def test_a_commit_of_caught_up_documents_replaces_each_once_through_one_searcher(
    db_url: str, index_dir: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A second worker on the same index catches up on the first one's adds (so they may be on
    disk already) and commits them: each is written once, and the older versions are looked up
    through one searcher for the whole commit, not one per document."""
    from whoosh.writing import SegmentWriter

    opened = []
    searcher = SegmentWriter.searcher

    def counted(self, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(1)
        return searcher(self, **kwargs)

    first = Store.open(db_url, index_dir)
    try:
        memory = first.create_memory("ui", "en", "de")
        first.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
        with Store.open(db_url, index_dir, StoreOptions(repair_index_on_open=False)) as second:
            added = [
                first.add_segment(memory, SegmentRecord(f"Empty bin number {i}", f"Eimer {i}"))
                for i in range(20)
            ]
            assert sources(second.search([memory.id], "bin number 7", limit=1)) == [
                "Empty bin number 7"
            ]  # caught up from the database into the second worker's buffer
            monkeypatch.setattr(SegmentWriter, "searcher", counted)
            second.index.flush(MemoryKey(memory.id, memory.uuid, 0))
            monkeypatch.undo()
            assert len(opened) == 1
        with whoosh_index.open_dir(str(index_dir / memory.uuid)).searcher() as disk:
            for segment in added:
                found = list(disk.documents(id=str(segment.id)))
                assert len(found) == 1, segment.id
    finally:
        first.index._open.clear()  # type: ignore[attr-defined]
        first.engine.dispose()
