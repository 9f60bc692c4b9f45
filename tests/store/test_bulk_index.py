"""A large import is indexed in bulk; searches then answer as after incremental indexing."""

from __future__ import annotations

from pathlib import Path

from tm_guide.records import SegmentRecord
from tm_guide.store import Store, StoreOptions


def records() -> list[SegmentRecord]:
    out = [
        SegmentRecord(f"Open the file number {i} in the editor", f"Datei {i} im Editor öffnen")
        for i in range(1200)
    ]
    out += [SegmentRecord("Open the file number 7 in the editor", "Datei 7 im Editor öffnen")] * 3
    out.append(SegmentRecord("Old caption", "Alter Titel", tuid="cap"))
    out.append(SegmentRecord("New caption text", "Neuer Titel", tuid="cap"))
    out.append(SegmentRecord("Grüße aus München, naïve café", "Grüße aus München"))
    return out


def search_all(store: Store, memory_id: int) -> list[list[tuple[str, float]]]:
    queries = ["file number 7 editor", "caption", "Old caption", "münchen café", "number 1199"]
    return [
        [(hit.segment.source, round(hit.score, 6)) for hit in store.search([memory_id], q, 5)]
        for q in queries
    ]


def import_into(store: Store, name: str) -> tuple[int, list[list[tuple[str, float]]]]:
    memory = store.create_memory(name, "en", "de")
    store.import_records(memory, [SegmentRecord("Close the window", "Fenster schließen")])
    report = store.import_records(store.get_memory(name), records())
    assert (report.added, report.merged, report.updated) == (1202, 3, 1)
    assert all(state.current for state in store.index_states())
    assert store.get_memory(name).segment_count == 1203
    return memory.id, search_all(store, memory.id)


def test_bulk_and_incremental_indexing_answer_alike(db_url: str, tmp_path: Path) -> None:
    with Store.open(db_url, tmp_path / "index") as store:
        _, bulk = import_into(store, "bulk")
    with Store.open(db_url, tmp_path / "index", StoreOptions(bulk_index_min=10**9)) as store:
        memory_id, incremental = import_into(store, "incremental")
        store.rebuild_index(store.get_memory(memory_id))
        rebuilt = search_all(store, memory_id)
    # Same ranking as incremental indexing (whose scores still count replaced documents), and
    # the very scores of a rebuild from the database.
    assert [[s for s, _ in hits] for hits in bulk] == [[s for s, _ in hits] for hits in incremental]
    assert bulk == rebuilt
    assert bulk[0][0][0] == "Open the file number 7 in the editor"
    assert [source for source, _ in bulk[1]] == ["New caption text"]
    assert bulk[3][0][0] == "Grüße aus München, naïve café"
