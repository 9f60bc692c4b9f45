"""An import is one transaction: a failure midway leaves database and index exactly as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tm_guide.errors import ImportFormatError, InvalidInput
from tm_guide.formats import read_tmx
from tm_guide.records import SegmentRecord
from tm_guide.store import Store, StoreOptions


def failing_records(path: str) -> Iterator[SegmentRecord]:
    yield SegmentRecord("New sentence about rivers", "Neuer Satz über Flüsse")
    yield SegmentRecord("Open the file", "Datei öffnen", usage_count=5)  # would merge
    yield SegmentRecord("Changed by tuid", "Per tuid geändert", tuid="t1")  # would replace
    raise ImportFormatError(path, 42, "<seg> not closed")


def snapshot(store: Store, name: str) -> tuple[object, ...]:
    memory = store.get_memory(name)
    return memory, [s for s in store.iter_segments(memory)]


def test_failing_import_changes_nothing(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.import_records(
        memory,
        [
            SegmentRecord("Open the file", "Datei öffnen"),
            SegmentRecord("Old text", "Alter Text", tuid="t1"),
        ],
    )
    before = snapshot(store, "ui")
    with pytest.raises(ImportFormatError, match="bad.tmx:42"):
        store.import_records(store.get_memory("ui"), failing_records("bad.tmx"))
    assert snapshot(store, "ui") == before
    assert store.search([memory.id], "rivers") == []
    assert store.search([memory.id], "Changed by tuid") == []
    assert all(state.current for state in store.index_states())


def test_malformed_tmx_file_rolls_back_a_large_import(store: Store, tmp_path: Path) -> None:
    units = "".join(
        f'<tu><tuv xml:lang="en"><seg>Sentence {i}</seg></tuv>'
        f'<tuv xml:lang="de"><seg>Satz {i}</seg></tuv></tu>\n'
        for i in range(5000)
    )
    path = tmp_path / "broken.tmx"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en"/>'
        f"<body>\n{units}<tu><tuv xml:lang='en'><seg>unclosed</tuv></tu></body></tmx>\n",
        encoding="utf-8",
    )
    memory = store.create_memory("ui", "en", "de")
    with pytest.raises(ImportFormatError) as info:
        store.import_records(memory, read_tmx(path, "en", "de"))
    assert "broken.tmx" in str(info.value)
    after = store.get_memory("ui")
    assert (after.segment_count, after.revision) == (0, 0)
    assert list(store.iter_segments(after)) == []
    assert store.search([memory.id], "Sentence 12") == []


def test_import_across_statistics_refreshes(db_url: str, index_dir: Path) -> None:
    """A large import refreshes PostgreSQL's planner statistics midway (inside the transaction):
    duplicates across batches still merge, and a failure after a refresh still rolls back."""
    options = StoreOptions(import_batch=100, statistics_refresh_min=150)
    with Store.open(db_url, index_dir, options) as store:
        memory = store.create_memory("ui", "en", "de")
        records = [SegmentRecord(f"Sentence {i}", f"Satz {i}") for i in range(1000)]
        report = store.import_records(memory, records + records[:10])
        assert (report.added, report.merged) == (1000, 10)
        assert store.get_memory("ui").segment_count == 1000
        before = snapshot(store, "ui")

        def more_then_broken() -> Iterator[SegmentRecord]:
            for i in range(1000, 3500):
                yield SegmentRecord(f"Sentence {i}", f"Satz {i}")
            raise ImportFormatError("big.tmx", 7, "<tuv> without <seg>")

        with pytest.raises(ImportFormatError, match="big.tmx:7"):
            store.import_records(store.get_memory("ui"), more_then_broken())
        assert snapshot(store, "ui") == before
        hits = store.search([memory.id], "Sentence 3000", limit=100)
        assert hits and all(hit.segment.source != "Sentence 3000" for hit in hits)


def test_a_character_xml_cannot_hold_fails_the_import_naming_file_line_and_field(
    store: Store,
) -> None:
    """Stored, it would make every later TMX export of the memory fail; refused, the import is
    rolled back like any other failure."""
    memory = store.create_memory("ui", "en", "de")
    store.import_records(memory, [SegmentRecord("Open the file", "Datei öffnen")])
    before = snapshot(store, "ui")
    records = [
        SegmentRecord("Fine", "Gut", line=3),
        SegmentRecord("Bell", "Glocke\x07", line=7),
    ]
    with pytest.raises(InvalidInput, match=r"app\.po:7: target holds U\+0007") as raised:
        store.import_records(store.get_memory("ui"), records, source_name="app.po")
    assert raised.value.field == "target"
    assert snapshot(store, "ui") == before
