"""The full-text index follows every change, and a stale or missing index is repaired."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.index import WhooshIndex
from tm_guide.records import SegmentRecord
from tm_guide.store import Store, StoreOptions

SENTENCES = [
    ("Open the file in a new window", "Öffnen Sie die Datei in einem neuen Fenster"),
    ("Save the document before closing", "Speichern Sie das Dokument vor dem Schließen"),
    ("The printer is out of paper", "Der Drucker hat kein Papier mehr"),
    ("Restart the computer to finish the update", "Starten Sie den Computer neu"),
]


def sources(hits) -> list[str]:  # type: ignore[no-untyped-def]
    return [hit.segment.source for hit in hits]


def test_search_ranks_the_most_similar_source_first(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
    hits = store.search([memory.id], "Open the file in the window", limit=2)
    assert sources(hits)[0] == SENTENCES[0][0]
    assert hits[0].score >= hits[-1].score
    assert store.search([memory.id], "zebra xylophone") == []


def test_index_follows_add_update_delete(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
    added = store.add_segment(
        memory, SegmentRecord("Empty the recycle bin", "Papierkorb leeren", tuid="rb")
    )
    assert sources(store.search([memory.id], "recycle bin", limit=1)) == ["Empty the recycle bin"]

    store.update_segment(memory, "rb", SegmentRecord("Empty the trash can", "Papierkorb leeren"))
    assert store.search([memory.id], "recycle") == []
    assert sources(store.search([memory.id], "trash", limit=1)) == ["Empty the trash can"]

    store.delete_segment(memory, added.id)
    assert store.search([memory.id], "trash") == []
    assert all(state.current for state in store.index_states())


def test_search_over_several_memories_and_only_those(store: Store) -> None:
    ui = store.create_memory("ui", "en", "de")
    docs = store.create_memory("docs", "en", "de")
    other = store.create_memory("other", "en", "de")
    store.add_segment(ui, SegmentRecord("Print the page", "Seite drucken"))
    store.add_segment(docs, SegmentRecord("Print the whole document", "Ganzes Dokument drucken"))
    store.add_segment(other, SegmentRecord("Print everything", "Alles drucken"))
    hits = store.search([ui.id, docs.id], "print the page", limit=10)
    assert sorted(h.segment.memory_id for h in hits) == sorted([ui.id, docs.id])
    assert sources(hits)[0] == "Print the page"


def test_missing_index_is_rebuilt_on_open(db_url: str, index_dir: Path) -> None:
    with Store.open(db_url, index_dir) as store:
        memory = store.create_memory("ui", "en", "de")
        store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
    shutil.rmtree(index_dir)
    with Store.open(db_url, index_dir) as store:
        assert all(state.current for state in store.index_states())
        assert sources(store.search([memory.id], "printer paper", limit=1)) == [SENTENCES[2][0]]


def test_stale_index_is_detected_and_caught_up(db_url: str, tmp_path: Path) -> None:
    """An index that missed changes (a crash between commit and index write) is never used as is."""
    live, old = tmp_path / "live", tmp_path / "old"
    with Store.open(db_url, live) as store:
        memory = store.create_memory("ui", "en", "de")
        store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
        shutil.copytree(live, old)  # the index as it was before the next changes
        store.add_segment(memory, SegmentRecord("Empty the recycle bin", "Papierkorb leeren"))
        [printer] = store.concordance(memory, "printer")
        store.delete_segment(memory, printer.id)

    no_repair = StoreOptions(repair_index_on_open=False)
    with Store.open(db_url, old, no_repair) as store:
        [state] = store.index_states()
        assert not state.current and state.indexed_revision == 1
        assert sources(store.search([memory.id], "recycle bin", limit=1)) == [
            "Empty the recycle bin"
        ]
        assert store.search([memory.id], "printer paper") == []
        assert all(state.current for state in store.index_states())


def test_rebuild_index_restores_search(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.import_records(memory, [SegmentRecord(s, t) for s, t in SENTENCES])
    before = sources(store.search([memory.id], "save the document"))
    store.rebuild_index(store.get_memory("ui"))
    assert sources(store.search([memory.id], "save the document")) == before
    assert all(state.current for state in store.index_states())


def test_a_store_takes_any_source_index_it_is_given(db_url: str, tmp_path: Path) -> None:
    """Store.open builds a WhooshIndex in index_dir unless it is handed a SourceIndex."""
    given = WhooshIndex(tmp_path / "elsewhere")
    with Store.open(db_url, index=given) as store:
        assert store.index is given
        memory = store.create_memory("given", "en", "de")
        store.add_segment(memory, SegmentRecord("Open the file.", "Öffnen Sie die Datei."))
        assert store.search([memory.id], "open file", limit=1)[0].segment.source == "Open the file."
    assert (tmp_path / "elsewhere" / memory.uuid).is_dir()
    with pytest.raises(InvalidInput, match="not both"):
        Store.open(db_url, tmp_path / "index", index=WhooshIndex(tmp_path / "other"))
