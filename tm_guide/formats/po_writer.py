"""A memory as a gettext PO catalogue that `msgfmt -c` accepts.

The inverse of tm_guide.formats.po where the TM allows: a plural entry imported from a catalogue
comes back whole (msgid, msgid_plural, every msgstr[N], from the props its two records carry),
with its flags, comments and references. A catalogue holds one translation per msgid and context,
so the first segment of each wins; the others are left out and reported through `on_skip`, as are
segments msgfmt would refuse (a plural entry whose number of forms is not the catalogue's, a
msgid and msgstr of which one ends in a newline and the other not). Unlike the TMX writer this
builds the catalogue in memory: PO files are catalogues, not backups.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import IO, Any

import polib

from tm_guide import __version__
from tm_guide.formats.po import (
    PROP_FLAGS,
    PROP_FORMS,
    PROP_MSGID,
    PROP_MSGID_PLURAL,
    PROP_PLURAL,
    PROP_PLURAL_FORMS,
    cldr_plural_forms,
)

# the Plural-Forms where neither the catalogues nor CLDR tell one (English's, most languages')
DEFAULT_PLURAL_FORMS = "nplurals=2; plural=(n != 1);"


def write_po(
    destination: str | os.PathLike[str] | IO[bytes],
    *,
    source_lang: str,
    target_lang: str,
    segments: Iterable[Any],
    on_skip: Callable[[str], None] | None = None,
) -> int:
    """Write the catalogue; returns the number of entries (a plural entry counts once)."""
    segments = list(segments)
    plural_forms = _plural_forms(segments, target_lang)
    nplurals = _nplurals(plural_forms)
    catalogue = polib.POFile(wrapwidth=0)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M+0000")
    catalogue.metadata = {
        "Project-Id-Version": f"tm-guide export ({source_lang} -> {target_lang})",
        "Report-Msgid-Bugs-To": "",
        "POT-Creation-Date": now,
        "PO-Revision-Date": now,
        "Last-Translator": f"tm-guide {__version__}",
        "Language-Team": target_lang,
        "Language": target_lang,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": plural_forms,
    }
    written: set[tuple[str | None, str]] = set()
    # a plural entry's two records: the singular one writes it, the plural one only without it
    singulars = {
        (s.context, s.source)
        for s in segments
        if (s.props or {}).get(PROP_PLURAL) == "one" and (s.props or {}).get(PROP_MSGID_PLURAL)
    }

    def skip(segment: Any, why: str) -> None:
        if on_skip is not None:
            name = getattr(segment, "id", None)
            where = f"segment {name}" if name is not None else "a segment"
            on_skip(f"left out {where} ({segment.source[:40]!r}): {why}")

    for segment in segments:
        props = dict(segment.props or {})
        entry = _entry(segment, props, nplurals)
        if isinstance(entry, str):
            skip(segment, entry)
            continue
        key = (entry.msgctxt, entry.msgid)
        if props.get(PROP_PLURAL) == "other" and key in singulars:
            continue  # its singular record writes the entry
        if key in written:
            skip(segment, "the catalogue already holds a translation of this msgid and context")
            continue
        written.add(key)
        catalogue.append(entry)
    data = catalogue.__unicode__().encode("utf-8")
    if isinstance(destination, str | os.PathLike):
        partial = os.fspath(destination) + ".partial"
        with open(partial, "wb") as out:
            out.write(data)
        os.replace(partial, destination)
    else:
        destination.write(data)
    return len(catalogue)


def _entry(segment: Any, props: dict[str, str], nplurals: int) -> polib.POEntry | str:
    """The segment's entry, or why msgfmt would refuse it."""
    common: dict[str, Any] = {
        "msgctxt": segment.context,
        "flags": [f.strip() for f in props.get(PROP_FLAGS, "").split(",") if f.strip()],
        "tcomment": props.get("note", ""),
        "comment": props.get("x-po-comment", ""),
        "occurrences": _occurrences(props.get("x-po-references", "")),
    }
    form = props.get(PROP_PLURAL)
    if form in ("one", "other") and props.get(PROP_MSGID_PLURAL):
        msgid = segment.source if form == "one" else props.get(PROP_MSGID, "")
        if form == "other" and not msgid:
            return "a plural form without its msgid"
        try:
            forms = [str(f) for f in json.loads(props.get(PROP_FORMS, "[]"))]
        except ValueError:
            forms = []
        if not forms:
            forms = [segment.target] * nplurals
        if len(forms) != nplurals:
            return f"{len(forms)} plural forms where the catalogue's Plural-Forms has {nplurals}"
        entry = polib.POEntry(
            msgid=msgid,
            msgid_plural=props[PROP_MSGID_PLURAL],
            msgstr_plural=dict(enumerate(forms)),
            **common,
        )
        if any(_newline_mismatch(msgid, f) for f in forms):
            return "msgid and msgstr differ in a leading or trailing newline"
        return entry
    if _newline_mismatch(segment.source, segment.target):
        return "msgid and msgstr differ in a leading or trailing newline"
    return polib.POEntry(msgid=segment.source, msgstr=segment.target, **common)


def _newline_mismatch(msgid: str, msgstr: str) -> bool:
    return msgid.startswith("\n") != msgstr.startswith("\n") or (
        msgid.endswith("\n") != msgstr.endswith("\n")
    )


def _occurrences(references: str) -> list[tuple[str, str]]:
    found = []
    for reference in references.split():
        path, _, line = reference.rpartition(":")
        found.append((path, line) if path and line.isdigit() else (reference, ""))
    return found


def _plural_forms(segments: list[Any], target_lang: str) -> str:
    """The rule the imported catalogues told most often, else the language's from CLDR."""
    counts = Counter(
        s.props[PROP_PLURAL_FORMS] for s in segments if (s.props or {}).get(PROP_PLURAL_FORMS)
    )
    if counts:
        return str(counts.most_common(1)[0][0])
    return cldr_plural_forms(target_lang) or DEFAULT_PLURAL_FORMS


def _nplurals(plural_forms: str) -> int:
    for part in plural_forms.split(";"):
        name, _, value = part.partition("=")
        if name.strip() == "nplurals" and value.strip().isdigit():
            return int(value.strip())
    return 2
