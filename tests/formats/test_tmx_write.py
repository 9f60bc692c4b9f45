"""TMX export: what was imported comes back unchanged, markup included, and the output streams."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from tm_guide.formats import ToolInfo, iter_tmx, read_tmx, write_tmx
from tm_guide.formats.tmx_writer import FLUSH_EVERY
from tm_guide.records import SegmentRecord

from .helpers import DATA, without_lines

FIXTURES = ["entities.tmx", "oldlang.tmx", "variants.tmx", "markup.tmx", "meta.tmx"]


def export_bytes(records: list[SegmentRecord], source_lang: str, target_lang: str) -> bytes:
    out = io.BytesIO()
    write_tmx(out, source_lang=source_lang, target_lang=target_lang, segments=records)
    return out.getvalue()


@pytest.mark.parametrize("name", FIXTURES)
def test_import_export_import_gives_equal_records(name: str, tmp_path: Path) -> None:
    imported = list(read_tmx(DATA / name, "en", "de"))
    assert imported
    exported = tmp_path / "out.tmx"
    count = write_tmx(exported, source_lang="en", target_lang="de", segments=imported)
    assert count == len(imported)
    again = list(read_tmx(exported, "en", "de"))
    assert without_lines(again) == without_lines(imported)


def test_export_restores_the_inline_elements() -> None:
    imported = list(read_tmx(DATA / "markup.tmx", "en", "de"))
    root = etree.fromstring(export_bytes(imported, "en", "de"))
    first_seg = root.find("body/tu/tuv/seg")
    assert [child.tag for child in first_seg] == ["bpt", "ept", "ph"]
    assert first_seg.find("ph").text == "{count}"
    assert root.find("body/tu/tuv").get("{http://www.w3.org/XML/1998/namespace}lang") == "en"


def test_header_names_languages_and_tool() -> None:
    record = SegmentRecord(source="a", target="b")
    data = b"".join(
        iter_tmx(
            source_lang="en-US",
            target_lang="de",
            segments=[record],
            tool=ToolInfo(name="acme", version="9"),
        )
    )
    assert data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">')
    header = etree.fromstring(data).find("header")
    assert header.get("srclang") == "en-US"
    assert header.get("creationtool") == "acme"
    assert header.get("creationtoolversion") == "9"


def test_stale_markup_is_dropped_when_the_text_was_edited() -> None:
    [record] = [r for r in read_tmx(DATA / "markup.tmx", "en", "de") if r.tuid == "m-1"]
    record.source = "Click Save to keep all files."  # edited after import; markup is outdated
    [again] = read_tmx(io.BytesIO(export_bytes([record], "en", "de")), "en", "de")
    assert again.source == "Click Save to keep all files."
    assert again.source_markup is None
    assert again.target_markup == record.target_markup  # the untouched side keeps its markup


def test_context_without_props_is_written_as_x_context() -> None:
    record = SegmentRecord(source="Open", target="Öffnen", tuid="t1", context="menu.file")
    data = export_bytes([record], "en", "de")
    assert b'<prop type="x-context">menu.file</prop>' in data
    [again] = read_tmx(io.BytesIO(data), "en", "de")
    assert again.context == "menu.file"
    assert again.props == {}


def test_edited_context_wins_over_neighbour_props() -> None:
    record = SegmentRecord(
        source="a",
        target="b",
        context="new key",
        props={"x-context-pre": "before", "x-context-post": "after"},
    )
    [again] = read_tmx(io.BytesIO(export_bytes([record], "en", "de")), "en", "de")
    assert again.context == "new key"
    assert again.props == record.props


def test_dates_are_written_in_utc() -> None:
    berlin = timezone(timedelta(hours=1))
    record = SegmentRecord(
        source="a",
        target="b",
        created_at=datetime(2024, 1, 31, 13, 0, 0, tzinfo=berlin),
        changed_at=datetime(2024, 2, 1, 8, 0, 0),  # naive: taken as UTC
        created_by="alice",
        usage_count=4,
    )
    data = export_bytes([record], "en", "de")
    assert b'creationdate="20240131T120000Z"' in data
    assert b'changedate="20240201T080000Z"' in data
    [again] = read_tmx(io.BytesIO(data), "en", "de")
    assert again.created_at == datetime(2024, 1, 31, 12, 0, 0, tzinfo=UTC)
    assert again.usage_count == 4
    assert again.created_by == "alice"


def test_a_segment_xml_cannot_carry_is_left_out_and_reported(tmp_path: Path) -> None:
    """Text stored before the store refused control characters does not stop a backup: the
    segment is left out, the caller is told which and why, and the file says so at its end."""
    records = [
        SegmentRecord(source="Open the file.", target="Datei öffnen."),
        SegmentRecord(source="bell \x07", target="b", tuid="t-9"),
        SegmentRecord(source="Close.", target="Schließen."),
    ]
    told: list[str] = []
    target = tmp_path / "out.tmx"
    written = write_tmx(
        target, source_lang="en", target_lang="de", segments=records, on_skip=told.append
    )
    assert written == 2
    assert told == [
        "left out a segment (tuid 't-9'): its source holds U+0007, which XML 1.0 cannot carry"
    ]
    data = target.read_bytes()
    assert b"tm-guide left 1 segment(s) out of this export" in data and b"t-9" in data
    assert [r.source for r in read_tmx(target, "en", "de")] == ["Open the file.", "Close."]


def test_a_failed_export_leaves_no_file(tmp_path: Path) -> None:
    def segments() -> Iterator[SegmentRecord]:
        yield SegmentRecord(source="a", target="b")
        raise RuntimeError("database went away")

    target = tmp_path / "out.tmx"
    with pytest.raises(RuntimeError):
        write_tmx(target, source_lang="en", target_lang="de", segments=segments())
    assert list(tmp_path.iterdir()) == []


def test_output_is_streamed_in_chunks() -> None:
    """A large export is handed out piece by piece, not built in memory first."""
    produced = 0

    def segments() -> Iterator[SegmentRecord]:
        nonlocal produced
        for number in range(FLUSH_EVERY * 3):
            produced += 1
            yield SegmentRecord(source=f"source {number}", target=f"target {number}")

    chunks = iter_tmx(source_lang="en", target_lang="de", segments=segments())
    first = next(chunks)
    assert first.startswith(b"<?xml")
    assert produced <= FLUSH_EVERY + 1  # the first chunk came before the rest was read
    rest = list(chunks)
    assert len(rest) >= 2
    records = list(read_tmx(io.BytesIO(first + b"".join(rest)), "en", "de"))
    assert len(records) == FLUSH_EVERY * 3
    assert records[-1].source == f"source {FLUSH_EVERY * 3 - 1}"


# Text XML 1.0 can carry; "\r" is excluded because XML parsers normalise line ends.
xml_text = (
    st.lists(
        st.characters(
            exclude_categories=["Cs"],
            exclude_characters="\r\ufffe\uffff",
            min_codepoint=0x20,
        )
        | st.sampled_from(["\n", "\t", "&", "<", ">", '"', "'", "]]>", "&amp;", "<ph/>"]),
        min_size=1,
        max_size=20,
    )
    .map("".join)
    .filter(lambda text: text.strip() != "")
)

records_strategy = st.builds(
    SegmentRecord,
    source=xml_text,
    target=xml_text,
    tuid=st.none() | st.text(alphabet="abcdefghij0123456789-_.", min_size=1, max_size=8),
    context=st.none() | xml_text,
    created_at=st.none()
    | st.datetimes(
        min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ).map(lambda moment: moment.replace(microsecond=0)),
    created_by=st.none() | st.text(alphabet="abcxyz", min_size=1, max_size=5),
    usage_count=st.integers(min_value=0, max_value=10_000),
    props=st.dictionaries(
        st.sampled_from(["x-client", "note", "x-domain", "source:note", "target:x-origin"]),
        xml_text,
        max_size=3,
    ),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(records_strategy, min_size=1, max_size=5))
def test_any_plain_records_round_trip(records: list[SegmentRecord]) -> None:
    again = list(read_tmx(io.BytesIO(export_bytes(records, "en", "de")), "en", "de"))
    assert without_lines(again) == records
