"""XLIFF 1.2 and 2.x bilingual files as translation-memory records.

XLIFF is what CAT tools exchange project files in (Trados, memoQ, OmegaT, Okapi, Weblate, Matecat).
Only units a translator confirmed become records:

- XLIFF 1.2 (and 1.1): a <trans-unit> with approved="yes", or whose <target> state is final,
  signed-off or translated, or that has neither a state nor approved="no"; needs-* and new are
  skipped ("not confirmed"), as are units with translate="no" and gettext's header unit. With a
  <seg-source>, each <mrk mtype="seg"> is paired with the target's <mrk> of the same mid.
- XLIFF 2.0/2.1: each <segment> whose state is translated, reviewed or final, or has no state and a
  target; initial is skipped.

The text is plain: an inline code (<ph>, <bpt>/<ept>, <x/>, <sc/>/<ec/>...) becomes its text
equivalent (`equiv` in 2.x, `equiv-text` in 1.2) or nothing, and the text of paired tags (<g>,
<pc>, <mrk>) is kept. <note>s go to props["note"], a unit's resname (1.2) or name (2.x) becomes
the record's context. The file's languages follow tm_guide.languages: another language or script
than the memory's is refused, another region warned about and kept on the records (exported as
it came). The file is streamed (lxml iterparse, no entities, no network), as TMX is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from lxml import etree

from tm_guide import languages
from tm_guide.formats.common import (
    ReadStats,
    RecordReader,
    Source,
    language_rank,
    own_tag,
)
from tm_guide.formats.xml_input import XmlImport, import_errors, safe_iterparse
from tm_guide.records import SegmentRecord, text_xml_cannot_hold

SKIP_UNCONFIRMED = "not confirmed"
SKIP_NOT_TRANSLATABLE = "not translatable"
SKIP_EMPTY = "empty source or target"
SKIP_NOT_XML = "a character a TMX cannot hold"

_CONFIRMED_1 = {"final", "signed-off", "translated"}
_CONFIRMED_2 = {"translated", "reviewed", "final"}
_DROPPED = {"ph", "bpt", "ept", "it", "sub"}  # native code, not text (1.2)


def read_xliff(source: Source, source_lang: str, target_lang: str) -> RecordReader:
    """Stream the confirmed units of an XLIFF 1.2 or 2.x file."""
    stats = ReadStats()
    return RecordReader(_XliffParser(source, source_lang, target_lang, stats).records(), stats)


def _local(element: Any) -> str:
    tag = element.tag
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def plain_text(element: Any) -> str:
    """The text of a <source>/<target> (or <mrk>) without its inline codes."""
    parts = [element.text or ""]
    for child in element:
        name = _local(child)
        if name == "cp":  # XLIFF 2: a character XML cannot carry literally
            with contextlib.suppress(ValueError):
                parts.append(chr(int(child.get("hex", ""), 16)))
        elif child.get("equiv") is not None or child.get("equiv-text") is not None:
            # the code's text equivalent, which the specifications give for plain text
            parts.append(child.get("equiv") or child.get("equiv-text") or "")
        elif name and name not in _DROPPED:
            parts.append(plain_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


class _XliffParser(XmlImport):
    kind = "XLIFF"

    def __init__(
        self, source: Source, source_lang: str, target_lang: str, stats: ReadStats
    ) -> None:
        super().__init__(source, source_lang, target_lang, stats)
        self.version = ""
        self.tags: tuple[str | None, str | None] = (None, None)  # the file's own, where inexact

    def records(self) -> Iterator[SegmentRecord]:
        seen_root = False
        with import_errors(self.name):
            context = safe_iterparse(self.source, events=("start", "end"))
            for event, element in context:
                if not seen_root:
                    seen_root = True
                    self.check_root(element.getroottree().getroot())
                name = _local(element)
                if event == "start":
                    if name == "file" and self.version.startswith("1"):
                        self.check_languages(
                            element, element.get("source-language"), element.get("target-language")
                        )
                    continue
                if name == "trans-unit" and self.version.startswith("1"):
                    yield from self.unit_1(element)
                elif name == "unit" and self.version.startswith("2"):
                    yield from self.unit_2(element)
                else:
                    continue
                element.clear(keep_tail=True)
        if not seen_root:
            raise self.error(None, "not an XLIFF file: no root element")

    def check_root(self, root: Any) -> None:
        self.refuse_entities(root)
        if _local(root) != "xliff":
            raise self.error(root.sourceline, f"not an XLIFF file: the root is <{_local(root)}>")
        self.version = (root.get("version") or "").strip()
        if not self.version.startswith(("1.", "2.")):
            raise self.error(
                root.sourceline, f"XLIFF version {self.version!r}: 1.2 and 2.x are read"
            )
        if self.version.startswith("2"):
            self.check_languages(root, root.get("srcLang"), root.get("trgLang"))

    def check_languages(self, element: Any, source: str | None, target: str | None) -> None:
        for declared, wanted, side in (
            (source, self.source_lang, "source"),
            (target, self.target_lang, "target"),
        ):
            if not declared:
                continue
            rank = language_rank(declared, wanted)
            if rank is None:
                raise self.error(
                    element.sourceline,
                    f"the file's {side} language is {declared!r}, but the memory's is {wanted!r} "
                    "(another language or script)",
                )
            if rank == languages.SAME_SCRIPT:
                self.stats.warn(f"{declared.strip()} text imported as the memory's {wanted}")
        self.tags = (own_tag(source, self.source_lang), own_tag(target, self.target_lang))

    def unit_1(self, unit: Any) -> Iterator[SegmentRecord]:
        if unit.get("translate") == "no" or unit.get("restype") == "x-gettext-domain-header":
            self.stats.skip(SKIP_NOT_TRANSLATABLE)
            return
        children = {_local(child): child for child in unit}
        source, target = children.get("source"), children.get("target")
        if source is None or target is None:
            self.stats.skip(SKIP_UNCONFIRMED)
            return
        state = (target.get("state") or "").strip()
        approved = unit.get("approved")
        confirmed = approved == "yes" or (state in _CONFIRMED_1 if state else approved != "no")
        if not confirmed:
            self.stats.skip(SKIP_UNCONFIRMED)
            return
        notes = [plain_text(c) for c in unit if _local(c) == "note"]
        context = unit.get("resname") or None
        seg_source = children.get("seg-source")
        if seg_source is not None:
            targets = {m.get("mid"): m for m in target.iter() if _is_segment_mark(m)}
            for mark in seg_source.iter():
                if _is_segment_mark(mark):
                    paired = targets.get(mark.get("mid"))
                    if paired is None:
                        self.stats.skip(SKIP_UNCONFIRMED)
                        continue
                    yield from self.record(unit, mark, paired, notes, context)
            return
        yield from self.record(unit, source, target, notes, context)

    def unit_2(self, unit: Any) -> Iterator[SegmentRecord]:
        if unit.get("translate") == "no":
            self.stats.skip(SKIP_NOT_TRANSLATABLE)
            return
        notes = [
            plain_text(note)
            for notes in unit
            if _local(notes) == "notes"
            for note in notes
            if _local(note) == "note"
        ]
        context = unit.get("name") or None
        for segment in unit:
            if _local(segment) != "segment":
                continue
            children = {_local(child): child for child in segment}
            source, target = children.get("source"), children.get("target")
            state = (segment.get("state") or "").strip()
            if source is None or target is None or (state and state not in _CONFIRMED_2):
                self.stats.skip(SKIP_UNCONFIRMED)
                continue
            yield from self.record(unit, source, target, notes, context)

    def record(
        self, unit: Any, source: Any, target: Any, notes: list[str], context: str | None
    ) -> Iterator[SegmentRecord]:
        source_text, target_text = plain_text(source), plain_text(target)
        if not source_text.strip() or not target_text.strip():
            self.stats.skip(SKIP_EMPTY)
            return
        props = {"note": "\n".join(notes)} if notes else {}
        record = SegmentRecord(
            source=source_text,
            target=target_text,
            context=context,
            props=props,
            source_lang=self.tags[0],
            target_lang=self.tags[1],
            line=unit.sourceline,
        )
        if text_xml_cannot_hold(record) is not None:  # a <cp/> of a control character
            self.stats.skip(SKIP_NOT_XML)
            return
        yield record


def _is_segment_mark(element: Any) -> bool:
    return _local(element) == "mrk" and element.get("mtype") == "seg"
