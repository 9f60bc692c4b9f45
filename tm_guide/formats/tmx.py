"""Streamed TMX 1.4b reader.

The file is parsed with lxml's iterparse and every <tu> is cleared once it has been turned into
records, so memory use does not grow with the file. The parser never loads a DTD, never touches
the network and never expands entities: a file that declares entities (the "billion laughs" bomb,
external entities reading local files) is rejected with an ImportFormatError before any of its
content is read.

Mapping of a <tu> to SegmentRecord:

* Source: the <tuv> in the memory's source language (xml:lang, or the older `lang` attribute);
  language variants match (de-AT matches a `de` memory), an exact tag match is preferred, and
  the first one wins when several remain.
* Targets: one record per <tuv> in the memory's target language (same matching rule). A tuid
  names one stored pair, so when one <tu> gives several records, the second and later get
  "<tuid>#2", "<tuid>#3"... (the writer writes each as its own <tu>, so a re-import gives the
  same ids).
* A <tu> without a target-language <tuv> is skipped and counted (`reader.stats.skipped`), as is
  one without a source-language <tuv> when the file or the <tu> declares another source language
  (multilingual files, srclang="*all*"). A <tu> whose declared srclang is the memory's source
  language but that has no such <tuv> is an error, as is a <tuv> without <seg>. A pair with an
  empty (or blank) source or target is skipped and counted.
* Inline markup (bpt, ept, ph, it, ut, hi, sub): `source`/`target` hold the plain text, that is
  the text of <seg> without the native codes inside bpt/ept/ph/it/ut; the text inside <hi> is
  kept because it is part of the sentence. <sub> only occurs inside a code element and holds a
  separate text flow (a footnote, an alt text); it is not part of the sentence and so is not in
  the plain text, but it is kept in the markup. `source_markup`/`target_markup` hold the inner
  XML of <seg>, only when it has inline elements, so that the TMX writer restores it.
* <prop type="x-context"> (also "context", "x-context-key") gives `context`. Neighbour props
  (x-context-pre/-post, x-context-prev/-next, context-prev/-next, prev/next) are kept in `props`
  under their own type, and when no context key is present `context` is "<previous>\\n<next>"
  made from them. Other <tu> props go to `props[type]`, <note> to `props["note"]`; props and
  notes of the chosen source and target <tuv> go to `props["source:<type>"]` and
  `props["target:<type>"]` ("source:note", "target:note"). Repeated types are joined with a
  newline.
* creationdate/creationid/changedate/changeid/usagecount are taken from the target <tuv> when it
  has them, else from the <tu>. Dates are TMX UTC dates (20240131T120000Z) and become aware
  datetimes in UTC.
* Props and notes of the <header> describe the file, not a unit, and are not carried over.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from tm_guide.formats.common import (
    ReadStats,
    RecordReader,
    Source,
    language_matches,
    own_tag,
    pick_language,
)
from tm_guide.formats.tmx_inline import InlineMarkupError, inner_xml, plain_text
from tm_guide.formats.xml_input import XmlImport, import_errors, safe_iterparse
from tm_guide.records import SegmentRecord

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
TMX_DATE_FORMAT = "%Y%m%dT%H%M%SZ"

CONTEXT_KEY_PROPS = frozenset({"x-context", "context", "x-context-key"})
CONTEXT_PREV_PROPS = frozenset({"x-context-pre", "x-context-prev", "context-prev", "prev"})
CONTEXT_NEXT_PROPS = frozenset({"x-context-post", "x-context-next", "context-next", "next"})
TUID_VARIANT_SEPARATOR = "#"
SOURCE_PREFIX = "source:"
TARGET_PREFIX = "target:"

SKIP_NO_SOURCE = "without a source-language variant"
SKIP_NO_TARGET = "without a target-language variant"
SKIP_EMPTY = "with an empty source or target"


def read_tmx(source: Source, source_lang: str, target_lang: str) -> RecordReader:
    """Stream the records of a TMX file for a memory from `source_lang` into `target_lang`."""
    stats = ReadStats()
    return RecordReader(_TmxParser(source, source_lang, target_lang, stats).records(), stats)


def parse_tmx_date(value: str) -> datetime:
    """TMX dates are UTC in the basic ISO 8601 form YYYYMMDDThhmmssZ."""
    parsed = datetime.strptime(value, TMX_DATE_FORMAT)
    return parsed.replace(tzinfo=UTC)


def context_from_props(props: dict[str, str]) -> str | None:
    """The context that neighbour props imply, or None; the writer uses it to avoid duplicates."""
    previous = next((props[k] for k in props if k.lower() in CONTEXT_PREV_PROPS), None)
    following = next((props[k] for k in props if k.lower() in CONTEXT_NEXT_PROPS), None)
    if previous is None and following is None:
        return None
    return f"{previous or ''}\n{following or ''}"


class _TmxParser(XmlImport):
    kind = "TMX"

    def __init__(
        self, source: Source, source_lang: str, target_lang: str, stats: ReadStats
    ) -> None:
        super().__init__(source, source_lang, target_lang, stats)
        self.header_srclang: str | None = None

    def records(self) -> Iterator[SegmentRecord]:
        seen_root = False
        seen_header = False
        with import_errors(self.name):
            context = safe_iterparse(
                self.source,
                events=("start", "end"),
                tag=("tmx", "header", "tu"),  # fewer events: other elements are read via <tu>
            )
            for event, element in context:
                if not seen_root:  # the root and the DOCTYPE exist once any element is seen
                    seen_root = True
                    self.check_root(element.getroottree().getroot())
                if event == "start":
                    continue
                tag = element.tag
                if tag == "tu":
                    if not seen_header:
                        raise self.error(element.sourceline, "<tu> before the <header> element")
                    yield from self.tu_records(element)
                    element.clear(keep_tail=True)
                    parent = element.getparent()
                    while element.getprevious() is not None:
                        del parent[0]
                elif tag == "header":
                    seen_header = True
                    self.read_header(element)
        if not seen_root and context.root is not None:
            self.check_root(context.root)
        if not seen_header:
            raise self.error(None, "not a TMX file: no <header> element")

    def check_root(self, root: Any) -> None:
        self.refuse_entities(root)
        if root.tag != "tmx":
            raise self.error(root.sourceline, f"not a TMX file: the root element is <{root.tag}>")

    def read_header(self, header: Any) -> None:
        srclang = header.get("srclang")
        if not srclang or not srclang.strip():
            raise self.error(header.sourceline, "the <header> has no srclang attribute")
        self.header_srclang = srclang.strip()

    def tu_records(self, tu: Any) -> Iterator[SegmentRecord]:
        line = tu.sourceline
        variants: list[tuple[str, Any]] = []
        tu_props: dict[str, str] = {}
        for child in tu:
            tag = child.tag
            if tag == "tuv":
                lang = child.get(XML_LANG) or child.get("lang")
                if not lang:
                    raise self.error(child.sourceline, "<tuv> without an xml:lang attribute")
                variants.append((lang, child))
            elif tag in ("prop", "note"):
                self.add_meta(tu_props, child, "")
            elif isinstance(tag, str):
                raise self.error(child.sourceline, f"unexpected element <{tag}> in <tu>")

        sources = pick_language(variants, self.source_lang, self.stats)
        if not sources:
            declared = tu.get("srclang") or self.header_srclang or ""
            if declared != "*all*" and language_matches(declared, self.source_lang):
                raise self.error(line, f"<tu> has no <tuv> in its source language {declared!r}")
            self.stats.skip(SKIP_NO_SOURCE)
            return
        source_tuv = sources[0]
        targets = [
            t for t in pick_language(variants, self.target_lang, self.stats) if t is not source_tuv
        ]
        if not targets:
            self.stats.skip(SKIP_NO_TARGET)
            return

        source_text, source_markup, source_props = self.read_tuv(source_tuv, SOURCE_PREFIX)
        source_tag = own_tag(_tuv_lang(source_tuv), self.source_lang)
        tuid = tu.get("tuid")
        for number, target_tuv in enumerate(targets, start=1):
            target_text, target_markup, target_props = self.read_tuv(target_tuv, TARGET_PREFIX)
            if not source_text.strip() or not target_text.strip():
                self.stats.skip(SKIP_EMPTY)
                continue
            props = {**tu_props, **source_props, **target_props}
            yield SegmentRecord(
                source=source_text,
                target=target_text,
                tuid=_variant_tuid(tuid, number),
                context=_context(props),
                source_markup=source_markup,
                target_markup=target_markup,
                created_at=self.date_attr(target_tuv, tu, "creationdate"),
                created_by=_attr(target_tuv, tu, "creationid"),
                changed_at=self.date_attr(target_tuv, tu, "changedate"),
                changed_by=_attr(target_tuv, tu, "changeid"),
                usage_count=self.count_attr(target_tuv, tu, "usagecount"),
                props=props,
                source_lang=source_tag,
                target_lang=own_tag(_tuv_lang(target_tuv), self.target_lang),
                line=line,
            )

    def read_tuv(self, tuv: Any, prefix: str) -> tuple[str, str | None, dict[str, str]]:
        props: dict[str, str] = {}
        seg = None
        for child in tuv:
            tag = child.tag
            if tag == "seg":
                seg = child
            elif tag in ("prop", "note"):
                self.add_meta(props, child, prefix)
            elif isinstance(tag, str):
                raise self.error(child.sourceline, f"unexpected element <{tag}> in <tuv>")
        if seg is None:
            raise self.error(tuv.sourceline, "<tuv> without a <seg>")
        try:
            text = plain_text(seg)
        except InlineMarkupError as exc:
            raise self.error(exc.line or seg.sourceline, exc.message) from None
        return text, inner_xml(seg), props

    def add_meta(self, props: dict[str, str], element: Any, prefix: str) -> None:
        if len(element):
            raise self.error(element.sourceline, f"<{element.tag}> must hold plain text only")
        _add_meta(props, element, prefix)

    def date_attr(self, tuv: Any, tu: Any, name: str) -> datetime | None:
        value = _attr(tuv, tu, name)
        if value is None:
            return None
        try:
            return parse_tmx_date(value)
        except ValueError:
            raise self.error(
                tu.sourceline, f"bad {name} {value!r}: expected a UTC date like 20240131T120000Z"
            ) from None

    def count_attr(self, tuv: Any, tu: Any, name: str) -> int:
        value = _attr(tuv, tu, name)
        if value is None:
            return 0
        if not value.isdigit():
            raise self.error(tu.sourceline, f"bad {name} {value!r}: expected a whole number >= 0")
        return int(value)


def _tuv_lang(tuv: Any) -> str | None:
    value = tuv.get(XML_LANG) or tuv.get("lang")
    return str(value) if value is not None else None


def _variant_tuid(tuid: str | None, number: int) -> str | None:
    """The 2nd, 3rd... target of one <tu> gets its own id, since a tuid names one stored pair."""
    if tuid is None or number == 1:
        return tuid
    return f"{tuid}{TUID_VARIANT_SEPARATOR}{number}"


def _attr(tuv: Any, tu: Any, name: str) -> str | None:
    value = tuv.get(name)
    if value is None:
        value = tu.get(name)
    return value


def _add_meta(props: dict[str, str], element: Any, prefix: str) -> None:
    if element.tag == "note":
        key = prefix + "note"
    else:
        key = prefix + (element.get("type") or "x-unnamed")
    text = element.text or ""
    props[key] = f"{props[key]}\n{text}" if key in props else text


def _context(props: dict[str, str]) -> str | None:
    """Take the context key out of `props`; neighbour props stay in props and imply a context."""
    for key in list(props):
        if key.lower() in CONTEXT_KEY_PROPS:
            return props.pop(key)
    return context_from_props(props)
