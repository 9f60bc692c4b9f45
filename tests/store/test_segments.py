"""Segments: duplicate merge, tuid replace, reading back every field, analysis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from tm_guide.errors import InvalidInput, NotFound
from tm_guide.records import SegmentRecord
from tm_guide.store import SegmentAnalysis, Store


def test_every_record_field_round_trips(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    created = datetime(2020, 5, 17, 10, 30, tzinfo=timezone(timedelta(hours=2)))
    record = SegmentRecord(
        source="Click Save.",
        target="Klicken Sie auf Speichern.",
        tuid="u-1",
        context="dialog:save",
        source_markup='Click <bpt i="1">&lt;b&gt;</bpt>Save<ept i="1">&lt;/b&gt;</ept>.',
        target_markup=(
            'Klicken Sie auf <bpt i="1">&lt;b&gt;</bpt>Speichern<ept i="1">&lt;/b&gt;</ept>.'
        ),
        created_at=created,
        created_by="anna",
        changed_at=created + timedelta(days=1),
        changed_by="ben",
        usage_count=4,
        props={"x-project": "p1", "note": "menu"},
        source_lang="en-GB",
        target_lang="de-AT",
        line=12,
    )
    segment = store.add_segment(memory, record)
    [stored] = store.get_segments([segment.id])
    assert stored == segment
    for name in (
        "source", "target", "tuid", "context", "source_markup", "target_markup",
        "created_by", "changed_by", "usage_count", "props", "source_lang", "target_lang",
    ):  # fmt: skip
        assert getattr(stored, name) == getattr(record, name), name
    assert stored.created_at == created.astimezone(UTC)
    assert stored.changed_at == (created + timedelta(days=1)).astimezone(UTC)
    assert stored.memory_id == memory.id
    assert (stored.source_tokens, stored.alignment, stored.aligner_id) == (None, None, None)


def test_duplicate_pairs_are_merged(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    pair = ("Open the file", "Datei öffnen")
    report = store.import_records(
        memory,
        [
            SegmentRecord(*pair),
            SegmentRecord("Close the file", "Datei schließen"),
            SegmentRecord(*pair, changed_by="carla"),
        ],
    )
    assert (report.added, report.merged, report.updated) == (2, 1, 0)
    report = store.import_records(memory, [SegmentRecord(*pair, usage_count=3)])
    assert (report.added, report.merged) == (0, 1)

    memory = store.get_memory("ui")
    assert memory.segment_count == 2
    [merged] = [s for s in store.iter_segments(memory) if s.source == pair[0]]
    assert merged.usage_count == 1 + 3
    assert merged.changed_by is None  # the newest change (the last import) had no author


def test_same_pair_in_another_context_is_kept_apart(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    report = store.import_records(
        memory,
        [
            SegmentRecord("Open", "Öffnen", context="menu"),
            SegmentRecord("Open", "Offen", context="status"),
            SegmentRecord("Open", "Öffnen", context="status"),
        ],
    )
    assert (report.added, report.merged) == (3, 0)


def test_same_tuid_replaces_the_segment(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    first = store.add_segment(memory, SegmentRecord("Open the file", "Datei öffnen", tuid="t1"))
    store.set_analysis(
        [
            SegmentAnalysis(
                first.id, ["Open", "the", "file"], ["Datei", "öffnen"], [(2, 0)], "tok", "al"
            )
        ]
    )
    second = store.update_segment(memory, "t1", SegmentRecord("Open the folder", "Ordner öffnen"))
    assert second.id == first.id
    assert (second.source, second.target, second.tuid) == ("Open the folder", "Ordner öffnen", "t1")
    assert second.alignment is None and second.source_tokens is None  # text changed: re-analyse
    assert store.get_memory("ui").segment_count == 1

    report = store.import_records(
        memory, [SegmentRecord("Open the menu", "Menü öffnen", tuid="t1")]
    )
    assert (report.added, report.updated) == (0, 1)
    [only] = list(store.iter_segments(memory))
    assert only.source == "Open the menu"


def test_tuid_replacement_onto_an_existing_pair_absorbs_it(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.add_segment(memory, SegmentRecord("Save", "Speichern", usage_count=2))
    store.add_segment(memory, SegmentRecord("Sav", "Speichen", tuid="t9", usage_count=1))
    fixed = store.update_segment(memory, "t9", SegmentRecord("Save", "Speichern"))
    assert [s.id for s in store.iter_segments(memory)] == [fixed.id]
    assert fixed.usage_count == 3
    assert store.get_memory("ui").segment_count == 1


def test_update_of_unknown_tuid_is_not_found(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    with pytest.raises(NotFound, match="t404"):
        store.update_segment(memory, "t404", SegmentRecord("a", "b"))


def test_empty_sides_are_skipped_on_import_and_refused_on_add(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    report = store.import_records(
        memory,
        [SegmentRecord("Hello", ""), SegmentRecord("  ", "Hallo"), SegmentRecord("Hi", "Hallo")],
    )
    assert (report.added, report.skipped) == (1, 2)
    with pytest.raises(InvalidInput):
        store.add_segment(memory, SegmentRecord("Hello", " "))


def test_delete_segment(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    segment = store.add_segment(memory, SegmentRecord("Open the file", "Datei öffnen"))
    store.delete_segment(memory, segment.id)
    assert store.get_segments([segment.id]) == []
    assert store.get_memory("ui").segment_count == 0
    with pytest.raises(NotFound):
        store.delete_segment(memory, segment.id)


def test_every_change_bumps_the_revision(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    revisions = [store.get_memory("ui").revision]
    segment = store.add_segment(memory, SegmentRecord("a b", "c d", tuid="x"))
    revisions.append(store.get_memory("ui").revision)
    store.update_segment(memory, "x", SegmentRecord("a b e", "c d"))
    revisions.append(store.get_memory("ui").revision)
    store.add_segment(memory, SegmentRecord("a b e", "c d"))  # merge counts as a change too
    revisions.append(store.get_memory("ui").revision)
    store.delete_segment(memory, segment.id)
    revisions.append(store.get_memory("ui").revision)
    assert revisions == sorted(set(revisions)) and len(revisions) == 5


def test_get_segments_keeps_order_and_iter_segments_pages(store: Store, db_url: str) -> None:
    from tm_guide.store import StoreOptions

    memory = store.create_memory("ui", "en", "de")
    store.import_records(memory, (SegmentRecord(f"source {i}", f"target {i}") for i in range(25)))
    ids = [s.id for s in store.iter_segments(memory)]
    assert len(ids) == 25 and ids == sorted(ids)
    picked = [ids[7], ids[2], ids[19]]
    assert [s.id for s in store.get_segments(picked)] == picked
    # numbers no id can be are no segment, on either database (not a driver's overflow)
    assert [s.id for s in store.get_segments([2**63, ids[0], -1, 0, 10**30])] == [ids[0]]

    small_pages = Store(store.engine, store.index, StoreOptions(read_batch=4))
    assert [s.id for s in small_pages.iter_segments(memory)] == ids


def test_analysis_round_trips(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    segment = store.add_segment(memory, SegmentRecord("Open the file", "Datei öffnen"))
    store.set_analysis(
        [
            SegmentAnalysis(
                segment.id, ["▁Open", "▁the", "▁file"], ["▁Datei", "▁öffnen"], [(0, 1), (2, 0)],
                "tok-1", "eflomal-1",
            )
        ]
    )  # fmt: skip
    [stored] = store.get_segments([segment.id])
    assert stored.source_tokens == ["▁Open", "▁the", "▁file"]
    assert stored.target_tokens == ["▁Datei", "▁öffnen"]
    assert stored.alignment == [(0, 1), (2, 0)]
    assert (stored.tokenizer_id, stored.aligner_id) == ("tok-1", "eflomal-1")
    assert store.get_memory("ui").revision == 1  # analysis does not change the text


def test_concordance(store: Store) -> None:
    memory = store.create_memory("ui", "en", "de")
    store.import_records(
        memory,
        [
            SegmentRecord("Open the File", "Datei öffnen"),
            SegmentRecord("100% done", "100 % erledigt"),
            SegmentRecord("Close", "Schließen"),
        ],
    )
    assert [s.source for s in store.concordance(memory, "the file")] == ["Open the File"]
    assert [s.source for s in store.concordance(memory, "0%")] == ["100% done"]
    assert [s.target for s in store.concordance(memory, "DATEI", side="target")] == ["Datei öffnen"]
    with pytest.raises(InvalidInput):
        store.concordance(memory, "x", side="both")


def test_variant_tags_survive_import_store_and_export(store: Store, tmp_path) -> None:
    """A unit keeps the tags it came with where they differ from its memory's: en-US/de-AT text
    in an en/de memory is exported as en-US/de-AT, de-DE as de-DE, plain de as de."""
    from pathlib import Path

    from tm_guide.formats import read_tmx, write_tmx

    data = Path(__file__).parents[1] / "formats" / "data" / "variants.tmx"
    memory = store.create_memory("variants", "en", "de")
    store.import_records(memory, read_tmx(data, "en", "de"))
    out = tmp_path / "out.tmx"
    write_tmx(
        out,
        source_lang=memory.source_lang,
        target_lang=memory.target_lang,
        segments=store.iter_segments(memory),
    )
    back = {(r.source_lang, r.target_lang, r.target) for r in read_tmx(out, "en", "de")}
    assert back == {
        ("en-US", "de-DE", "Die Farbe ist rot."),
        ("en-US", "de-AT", "Die Farbe ist rot (AT)."),
        (None, None, "Schlichtes Deutsch."),
    }
    assert b'xml:lang="de-AT"' in out.read_bytes()
