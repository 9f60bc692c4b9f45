"""A damaged index under a revision that still reads: lookups are answered from the database, the
index is rebuilt in the background, and `tm-guide index check` reports it without deleting it."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from tm_guide.cli import main
from tm_guide.index import IndexOptions
from tm_guide.records import SegmentRecord
from tm_guide.store import Store, StoreOptions

QUERY = "Open the dialog number 17 and press the key 3."


def damaged_memory(db_url: str, index_dir: Path) -> int:
    """A memory whose index segments (written by small commits) have their postings files cut
    short; the revision document still reads, so the index looks current."""
    options = StoreOptions(index=IndexOptions(buffer_docs=20))
    with Store.open(db_url, index_dir, options) as store:
        memory = store.create_memory("help", "en", "de")
        for i in range(120):
            record = SegmentRecord(f"Open the dialog number {i} and press the key {i % 7}.", f"{i}")
            store.write_segment(store.get_memory("help"), record)
        memory = store.get_memory("help")
    postings = list((index_dir / memory.uuid).glob("*.pst"))
    assert postings, "the small commits wrote no separate postings file"
    for path in postings:
        with open(path, "r+b") as handle:
            handle.truncate(int(path.stat().st_size * 0.9))
    return memory.id


def test_lookups_are_answered_from_the_database_while_the_index_is_rebuilt(
    db_url: str, index_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tm_guide.store.fallback")
    memory_id = damaged_memory(db_url, index_dir)
    with Store.open(db_url, index_dir) as store:
        assert [state.current for state in store.index_states()] == [True]  # looks fine
        assert store.verify_index(store.get_memory(memory_id)) is not None
        hits = store.search([memory_id], QUERY, 5)
        assert hits[0].segment.source == QUERY and len(hits) == 5
        deadline = time.monotonic() + 60
        while store.index_repairs():
            assert time.monotonic() < deadline, "the background rebuild did not end"
            time.sleep(0.1)
        assert "index of memory 'help' is current again (120 segments indexed" in caplog.text
        assert store.verify_index(store.get_memory(memory_id)) is None
        hits = store.search([memory_id], QUERY, 5)
        assert hits[0].segment.source == QUERY
        assert hits[0].score < 100  # a BM25 score again: the index answered


def test_index_check_reports_damage_and_deletes_nothing(
    db_url: str, index_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    damaged_memory(db_url, index_dir)
    files_before = sorted(p.name for p in index_dir.rglob("*"))
    monkeypatch.setenv("TM_GUIDE_INDEX_DIR", str(index_dir))
    assert main(["--db", db_url, "index", "check"]) == 1
    out = capsys.readouterr().out
    assert "help: " in out and "DAMAGED" in out
    assert sorted(p.name for p in index_dir.rglob("*")) == files_before
    assert main(["--db", db_url, "index", "rebuild", "-q"]) == 0
    assert main(["--db", db_url, "index", "check"]) == 0
    assert "help: database revision 120, index revision 120: ok" in capsys.readouterr().out


def test_an_index_far_behind_is_caught_up_off_the_lookup_path(db_url: str, tmp_path: Path) -> None:
    """A second process (its own index) finds thousands of segments another one imported: its
    lookups are answered from the database at once while its index catches up in the
    background, and its writes meanwhile are neither lost nor held."""
    with Store.open(db_url, tmp_path / "index-a") as writer:
        memory = writer.create_memory("shared", "en", "de")
    options = StoreOptions(background_index_min=500)
    with Store.open(db_url, tmp_path / "index-b", options) as reader:
        reader.search([memory.id], QUERY, 5)  # its index is current (empty)
        with Store.open(db_url, tmp_path / "index-a") as writer:
            writer.import_records(
                writer.get_memory(memory.id),
                [
                    SegmentRecord(f"Open the dialog number {i} and press the key {i % 7}.", f"{i}")
                    for i in range(3000)
                ],
            )
        started = time.monotonic()
        hits = reader.search([memory.id], QUERY, 5)
        assert hits[0].segment.source == QUERY
        # catching up behind the answer; /ready lists it with its progress
        (repair,) = reader.index_repairs_under_way()
        assert (repair.memory_id, repair.reason, repair.total) == (memory.id, "behind", 3000)
        added = reader.add_segment(
            reader.get_memory(memory.id), SegmentRecord("Added now.", "Neu.")
        )
        assert time.monotonic() - started < 30
        deadline = time.monotonic() + 120
        while reader.index_repairs():
            assert time.monotonic() < deadline, "the background catch-up did not end"
            time.sleep(0.1)
        assert reader.search([memory.id], QUERY, 5)[0].score < 100  # BM25: the index answers
        assert repair.indexed in (3000, 3001)  # the add meanwhile, if it committed before
        assert [h.segment.id for h in reader.search([memory.id], "Added now.", 1)] == [added.id]
        state = {s.memory.id: s for s in reader.index_states()}[memory.id]
        assert state.current
