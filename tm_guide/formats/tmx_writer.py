"""Streamed TMX 1.4b writer: the inverse of `read_tmx`, so that import -> export -> import keeps
every record as it was (text, inline markup, tuid, dates, usage count, context, props, notes)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any, Protocol

from lxml import etree

from tm_guide import __version__
from tm_guide.errors import InvalidInput
from tm_guide.formats.tmx import (
    SOURCE_PREFIX,
    TARGET_PREFIX,
    TMX_DATE_FORMAT,
    XML_LANG,
    context_from_props,
)
from tm_guide.formats.tmx_inline import InlineMarkupError, parse_markup, plain_text
from tm_guide.records import NOT_XML, text_xml_cannot_hold

FLUSH_EVERY = 500  # <tu> elements per chunk handed to the output


class SegmentLike(Protocol):
    """What the writer needs of a segment: a SegmentRecord or the store's Segment both fit."""

    source: str
    target: str
    tuid: str | None
    context: str | None
    source_markup: str | None
    target_markup: str | None
    created_at: datetime | None
    created_by: str | None
    changed_at: datetime | None
    changed_by: str | None
    usage_count: int
    props: dict[str, str]
    source_lang: str | None
    target_lang: str | None


@dataclass(frozen=True)
class ToolInfo:
    """The creationtool/creationtoolversion written into the TMX header."""

    name: str = "tm-guide"
    version: str = __version__


def write_tmx(
    destination: str | os.PathLike[str] | IO[bytes],
    *,
    source_lang: str,
    target_lang: str,
    segments: Iterable[SegmentLike],
    tool: ToolInfo | None = None,
    on_skip: Callable[[str], None] | None = None,
) -> int:
    """Write a TMX file (path or binary stream) one <tu> at a time; returns the number written.
    A segment XML cannot carry is left out and `on_skip` told why (see iter_tmx).

    A path is written to a temporary file next to it and renamed at the end, so a failed export
    never leaves a half-written file under the final name.
    """
    chunks = _Chunks()
    units = iter_tmx(
        source_lang=source_lang,
        target_lang=target_lang,
        segments=segments,
        tool=tool,
        counter=chunks,
        on_skip=on_skip,
    )
    if isinstance(destination, str | os.PathLike):
        final = os.fspath(destination)
        partial = final + ".partial"
        try:
            with open(partial, "wb") as out:
                out.writelines(units)
            os.replace(partial, final)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    else:
        for chunk in units:
            destination.write(chunk)
    return chunks.units


def iter_tmx(
    *,
    source_lang: str,
    target_lang: str,
    segments: Iterable[SegmentLike],
    tool: ToolInfo | None = None,
    counter: _Chunks | None = None,
    on_skip: Callable[[str], None] | None = None,
) -> Iterator[bytes]:
    """The TMX document as a stream of byte chunks (for a streamed HTTP response).

    A segment that XML cannot carry (a control character stored before the store refused them)
    does not stop the export: it is left out, `on_skip` is told why, and a comment at the end of
    the body lists what was left out."""
    tool = tool or ToolInfo()
    sink = counter or _Chunks()
    sink.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    with etree.xmlfile(sink, encoding="utf-8") as xf, xf.element("tmx", version="1.4"):
        xf.write("\n  ")
        header = etree.Element(
            "header",
            creationtool=tool.name,
            creationtoolversion=tool.version,
            segtype="sentence",
            **{"o-tmf": tool.name},
            adminlang="en",
            srclang=source_lang,
            datatype="plaintext",
            creationdate=datetime.now(UTC).strftime(TMX_DATE_FORMAT),
        )
        xf.write(header)
        xf.write("\n  ")
        with xf.element("body"):
            for segment in segments:
                try:
                    tu = _tu_element(segment, source_lang, target_lang)
                except InvalidInput as exc:  # stored before the store refused such text
                    sink.left_out.append(exc.message)
                    if on_skip is not None:
                        on_skip(exc.message)
                    continue
                xf.write("\n    ")
                xf.write(tu)
                sink.units += 1
                if sink.units % FLUSH_EVERY == 0:
                    xf.flush()
                    yield from sink.drain()
            if sink.left_out:  # said in the file too, as the HTTP status is sent by now
                xf.write("\n    ")
                xf.write(etree.Comment(_left_out_note(sink.left_out)))
            xf.write("\n  ")
        xf.write("\n")
    sink.write(b"\n")
    yield from sink.drain()


class _Chunks:
    """A write() target that collects bytes until the generator hands them on."""

    def __init__(self) -> None:
        self.left_out: list[str] = []
        self.parts: list[bytes] = []
        self.units = 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)

    def drain(self) -> Iterator[bytes]:
        if self.parts:
            data = b"".join(self.parts)
            self.parts.clear()
            yield data


def _tu_element(segment: SegmentLike, source_lang: str, target_lang: str) -> Any:
    tu = etree.Element("tu")
    try:
        _fill_tu(tu, segment, source_lang, target_lang)
    except ValueError:  # lxml refuses control characters that XML cannot carry
        raise InvalidInput(f"left out {_describe(segment)}") from None
    return tu


def _describe(segment: SegmentLike) -> str:
    """Which segment, and which of its fields holds what XML 1.0 cannot carry."""
    name = getattr(segment, "id", None)
    where = f"segment {name}" if name is not None else "a segment"
    if segment.tuid:
        where += f" (tuid {segment.tuid!r})"
    found = text_xml_cannot_hold(segment)
    if found is None:
        return f"{where}: it holds a character XML 1.0 cannot carry"
    field, _, char = found
    return f"{where}: its {field} holds U+{ord(char):04X}, which XML 1.0 cannot carry"


def _left_out_note(left_out: list[str]) -> str:
    shown = "; ".join(left_out[:20]) + ("; ..." if len(left_out) > 20 else "")
    text = f" tm-guide left {len(left_out)} segment(s) out of this export: {shown} "
    return NOT_XML.sub("?", text).replace("--", "- -")


def _fill_tu(tu: Any, segment: SegmentLike, source_lang: str, target_lang: str) -> None:
    if segment.tuid is not None:
        tu.set("tuid", segment.tuid)
    _set_date(tu, "creationdate", segment.created_at)
    if segment.created_by:
        tu.set("creationid", segment.created_by)
    _set_date(tu, "changedate", segment.changed_at)
    if segment.changed_by:
        tu.set("changeid", segment.changed_by)
    if segment.usage_count:
        tu.set("usagecount", str(segment.usage_count))

    props = dict(segment.props or {})
    tu_meta = {k: v for k, v in props.items() if not k.startswith((SOURCE_PREFIX, TARGET_PREFIX))}
    if segment.context is not None and segment.context != context_from_props(tu_meta):
        _add_meta(tu, "x-context", segment.context)
    for key, value in tu_meta.items():
        _add_meta(tu, key, value)
    # a unit's own tags (de-AT text in a de memory) go back out as it came in
    source_tag = segment.source_lang or source_lang
    target_tag = segment.target_lang or target_lang
    _add_tuv(tu, source_tag, segment.source, segment.source_markup, props, SOURCE_PREFIX)
    _add_tuv(tu, target_tag, segment.target, segment.target_markup, props, TARGET_PREFIX)
    tu.text = "\n      "
    tu[-1].tail = "\n    "


def _add_tuv(
    tu: Any, lang: str, text: str, markup: str | None, props: dict[str, str], prefix: str
) -> None:
    tuv = etree.SubElement(tu, "tuv", {XML_LANG: lang})
    for key, value in props.items():
        if key.startswith(prefix):
            _add_meta(tuv, key[len(prefix) :], value)
    tuv.append(_seg_element(text, markup))
    tuv.tail = "\n      "


def _seg_element(text: str, markup: str | None) -> Any:
    """The <seg>, with its inline markup restored when that markup still matches the text.

    Markup whose plain text differs from `text` is stale (the text was edited after import) and is
    dropped rather than exported with the wrong words.
    """
    if markup:
        try:
            seg = parse_markup(markup)
        except InlineMarkupError:
            seg = None
        if seg is not None and plain_text(seg) == text:
            return seg
    seg = etree.Element("seg")
    seg.text = text
    return seg


def _add_meta(parent: Any, key: str, value: str) -> None:
    if key == "note":
        element = etree.SubElement(parent, "note")
    else:
        element = etree.SubElement(parent, "prop", type=key)
    element.text = value
    element.tail = "\n      "


def _set_date(tu: Any, name: str, value: datetime | None) -> None:
    if value is None:
        return
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    tu.set(name, value.strftime(TMX_DATE_FORMAT))
