"""Memories: create, find, list, delete."""

from __future__ import annotations

import pytest

from tm_guide.errors import Conflict, InvalidInput, NotFound
from tm_guide.records import SegmentRecord
from tm_guide.store import Store


def test_create_get_list_delete(store: Store) -> None:
    ui = store.create_memory("ui", "en", "de-DE", "user interface strings")
    docs = store.create_memory("docs", "en", "fr")
    assert (ui.name, ui.source_lang, ui.target_lang, ui.description) == (
        "ui", "en", "de-DE", "user interface strings",
    )  # fmt: skip
    assert (ui.revision, ui.segment_count) == (0, 0)
    assert store.get_memory("ui") == ui
    assert store.get_memory(ui.id) == ui
    assert [m.name for m in store.list_memories()] == ["docs", "ui"]

    store.import_records(docs, [SegmentRecord("Hello", "Bonjour")])
    store.delete_memory("docs")
    with pytest.raises(NotFound):
        store.get_memory("docs")
    assert [m.name for m in store.list_memories()] == ["ui"]


def test_duplicate_name_conflicts(store: Store) -> None:
    store.create_memory("ui", "en", "de")
    with pytest.raises(Conflict, match="ui"):
        store.create_memory("ui", "en", "fr")


@pytest.mark.parametrize(
    ("name", "source", "target", "field"),
    [
        ("", "en", "de", "name"),
        ("x", "english!", "de", "source_lang"),
        ("x", "en", "", "target_lang"),
    ],
)
def test_invalid_memory_is_refused(
    store: Store, name: str, source: str, target: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        store.create_memory(name, source, target)
    assert info.value.field == field


def test_unknown_memory_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound, match="nope"):
        store.get_memory("nope")
    with pytest.raises(NotFound):
        store.delete_memory("nope")


def test_deleting_a_memory_deletes_its_segments(store: Store) -> None:
    ui = store.create_memory("ui", "en", "de")
    store.import_records(ui, [SegmentRecord("Open the file", "Datei öffnen")])
    [segment] = list(store.iter_segments(ui))
    store.delete_memory("ui")
    assert store.get_segments([segment.id]) == []
    again = store.create_memory("ui", "en", "de")
    assert store.search([again.id], "Open the file") == []


@pytest.mark.parametrize(
    ("given", "stored"),
    [("zh_CN", "zh-CN"), ("sr@latin", "sr-Latn"), ("de_DE.UTF-8", "de-DE"), ("EN-gb", "en-GB")],
)
def test_language_tags_are_stored_in_bcp47_form(store: Store, given: str, stored: str) -> None:
    """One spelling in the database, whichever a catalogue or a CAT tool used."""
    memory = store.create_memory("m", "en", given)
    assert memory.target_lang == stored
    assert store.get_memory("m").target_lang == stored


def test_a_read_of_a_memory_deleted_meanwhile_ends_in_an_error(store: Store) -> None:
    """Pages are read apart (no long read transaction); a memory deleted between two of them
    ends the read with NotFound, so an export cannot pass for complete."""
    memory = store.create_memory("doomed", "en", "de")
    count = store.options.read_batch + 5
    store.import_records(memory, [SegmentRecord(f"Line {i}.", f"Zeile {i}.") for i in range(count)])
    read = store.iter_segments(memory)
    first = [next(read) for _ in range(3)]
    assert [s.source for s in first] == ["Line 0.", "Line 1.", "Line 2."]
    store.delete_memory("doomed")
    with pytest.raises(NotFound, match="deleted while it was read"):
        list(read)
    assert [s.source for s in store.iter_segments(store.create_memory("kept", "en", "de"))] == []
