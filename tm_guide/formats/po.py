"""gettext PO and MO catalogues as translation-memory records (read with polib).

msgid -> source, msgstr -> target, msgctxt -> context. Entries that are fuzzy, untranslated or
obsolete are skipped and counted. A plural entry gives two records: msgid with the form the
catalogue's Plural-Forms expression picks for n = 1, and msgid_plural with the form it picks for
n = 100 (CLDR's "other" in the languages gettext knows: Arabic's msgstr[5], Russian's and Polish's
msgstr[2], English's msgstr[1]). A catalogue without a Plural-Forms header gets its language's
from CLDR (Babel's table, as pybabel and msginit write it); only for a language Babel does not
know are msgstr[0] and msgstr[1] taken. The other forms have no source text of their
own and are counted as skipped. Translator comments go to props["note"], extracted
comments to props["x-po-comment"], source references to props["x-po-references"], flags to
props["x-po-flags"]; a plural entry's two records carry the whole entry (PROP_* below). PO records
carry the line of their entry; MO files have no lines. An MO file's system-dependent messages
(`%<PRIu64>`) are read too (tm_guide.formats.mo_sysdep), as msgunfmt shows them.

When the catalogue's Language header is set and names another language or script than the
memory's target language (tm_guide.languages: zh_CN is not zh-TW), the import is refused: it is
almost always the wrong file; another region of the same language (pt_BR into pt-PT) is imported
with a warning.
"""

from __future__ import annotations

import gettext
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import polib

from tm_guide import languages
from tm_guide.errors import ImportFormatError, InvalidInput
from tm_guide.formats.common import ReadStats, RecordReader, language_rank, own_tag
from tm_guide.formats.mo_sysdep import system_dependent_messages
from tm_guide.records import SegmentRecord

SKIP_FUZZY = "fuzzy"
SKIP_UNTRANSLATED = "untranslated"
SKIP_OBSOLETE = "obsolete"
SKIP_EXTRA_PLURAL = "plural forms without a source text"

_LINE_IN_MESSAGE = re.compile(r"\(line (\d+)\)")
_PLURAL = re.compile(r"plural\s*=\s*([^;]+)")

# Props that keep a catalogue entry whole in the TM (TMX <prop>s on export; a PO export reads
# them back): its flags, and for the two records of a plural entry, which form each is, the
# msgid_plural (and on the plural record the msgid), every msgstr[N] and the Plural-Forms header.
PROP_FLAGS = "x-po-flags"
PROP_PLURAL = "x-po-plural"
PROP_MSGID = "x-po-msgid"
PROP_MSGID_PLURAL = "x-po-msgid-plural"
PROP_FORMS = "x-po-msgstr-plural"
PROP_PLURAL_FORMS = "x-po-plural-forms"
# polib silently drops entries with some syntax errors (an unterminated string), so every line of
# a PO file is checked first: blank, a comment, or an optional keyword with one quoted string.
_KEYWORD = rb"(?:msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)"
_VALID_LINE = re.compile(rb"\s*(?:#.*|(?:" + _KEYWORD + rb'\s+)?"(?:[^"\\]|\\.)*"\s*|)\Z', re.S)
_STARTS_STRING = re.compile(rb"\s*(?:" + _KEYWORD + rb'\s+)?"')
_MSGID_LINE = re.compile(rb"\s*msgid\s")


def read_po(path: str | os.PathLike[str], source_lang: str, target_lang: str) -> RecordReader:
    """Records of a PO file, each with the line of its entry."""
    stats = ReadStats()
    return RecordReader(_records(path, target_lang, stats, _load_po), stats)


def read_mo(path: str | os.PathLike[str], source_lang: str, target_lang: str) -> RecordReader:
    """Records of a compiled MO file (no line numbers: the format has none)."""
    stats = ReadStats()
    return RecordReader(_records(path, target_lang, stats, _load_mo), stats)


def _records(
    path: str | os.PathLike[str],
    target_lang: str,
    stats: ReadStats,
    load: Callable[[str], Any],
) -> Iterator[SegmentRecord]:
    name = os.fspath(path)
    catalogue = _load(name, load)
    language = (catalogue.metadata.get("Language") or "").strip()
    rank = language_rank(language, target_lang) if language else languages.EXACT
    if rank is None:
        raise ImportFormatError(
            name,
            None,
            f"the catalogue's Language header is {language!r}, but the memory translates "
            f"into {target_lang!r} (another language or script)",
        )
    if rank == languages.SAME_SCRIPT:
        stats.warn(f"a {language} catalogue imported as the memory's {target_lang}")
    plural_forms = (catalogue.metadata.get("Plural-Forms") or "").strip()
    if not plural_forms:  # the language's rule from CLDR (Babel), as msginit would write it
        plural_forms = cldr_plural_forms(language or target_lang) or ""
    forms_for = plural_forms_for(plural_forms, name)
    target_tag = own_tag(language, target_lang)
    for entry in catalogue:
        for record in _entry_records(entry, stats, forms_for, plural_forms):
            record.target_lang = target_tag
            yield record


def _entry_records(
    entry: Any, stats: ReadStats, forms_for: tuple[int, int] | None, plural_forms: str
) -> Iterator[SegmentRecord]:
    if entry.obsolete:
        stats.skip(SKIP_OBSOLETE)
    elif "fuzzy" in entry.flags:
        stats.skip(SKIP_FUZZY)
    elif not entry.msgid:
        return  # the header entry (MO files list it among the messages)
    elif entry.msgid_plural:
        yield from _plural_records(entry, stats, forms_for, plural_forms)
    elif not entry.msgstr:
        stats.skip(SKIP_UNTRANSLATED)
    else:
        yield _record(entry, entry.msgid, entry.msgstr)


def _load_po(name: str) -> Any:
    first_msgid_line = _check_po_lines(name)
    catalogue = polib.pofile(name, wrapwidth=0)
    for entry in catalogue:
        if not entry.linenum:  # polib leaves the first entry of a file without header at 0
            entry.linenum = first_msgid_line
    return catalogue


def _load_mo(name: str) -> Any:
    """polib's catalogue, with the system-dependent messages polib leaves out (mo_sysdep)."""
    catalogue = polib.mofile(name)
    with open(name, "rb") as file:
        data = file.read()
    for message in system_dependent_messages(data, catalogue.encoding or "utf-8"):
        entry = polib.MOEntry(msgid=message.msgid, msgctxt=message.context)
        if message.msgid_plural is None:
            entry.msgstr = message.msgstrs[0]
        else:
            entry.msgid_plural = message.msgid_plural
            entry.msgstr_plural = dict(enumerate(message.msgstrs))
        catalogue.append(entry)
    return catalogue


def _check_po_lines(name: str) -> int | None:
    """Raise at the first line that is not PO syntax; return the line of the first msgid."""
    first_msgid_line = None
    with open(name, "rb") as lines:
        for number, line in enumerate(lines, start=1):
            if number == 1:
                line = line.removeprefix(b"\xef\xbb\xbf")
            if not _VALID_LINE.match(line):
                what = (
                    "unterminated or malformed quoted string"
                    if _STARTS_STRING.match(line)
                    else "expected msgctxt, msgid, msgid_plural, msgstr[N] or a quoted string"
                )
                raise ImportFormatError(name, number, f"syntax error: {what}")
            if first_msgid_line is None and _MSGID_LINE.match(line):
                first_msgid_line = number
    return first_msgid_line


def _load(name: str, load: Callable[[str], Any]) -> Any:
    # polib takes a string that is not an existing file for the catalogue's content
    if not os.path.isfile(name):
        raise ImportFormatError(name, None, "no such file")
    try:
        return load(name)
    except UnicodeDecodeError as exc:
        line = None
        if isinstance(exc.object, bytes) and len(exc.object) == os.path.getsize(name):
            line = exc.object[: exc.start].count(b"\n") + 1
        what = f"not valid {exc.encoding}: {exc.reason} (the catalogue's charset is wrong?)"
        raise ImportFormatError(name, line, what) from None
    except (OSError, ValueError) as exc:
        message = str(exc)
        match = _LINE_IN_MESSAGE.search(message)
        line = int(match.group(1)) if match else None
        what = _LINE_IN_MESSAGE.sub("", message).replace(name, "").strip() or "unreadable catalogue"
        raise ImportFormatError(name, line, what) from None


def _plural_records(
    entry: Any, stats: ReadStats, forms_for: tuple[int, int] | None, plural_forms: str
) -> Iterator[SegmentRecord]:
    forms = [entry.msgstr_plural[index] for index in sorted(entry.msgstr_plural)]
    if not forms or not all(forms):
        stats.skip(SKIP_UNTRANSLATED)
        return
    one, other = forms_for or (0, 1)
    one, other = min(one, len(forms) - 1), min(other, len(forms) - 1)
    # the whole entry rides along, so that a PO export rebuilds it (tm_guide.formats.po_writer)
    together = {
        PROP_MSGID_PLURAL: entry.msgid_plural,
        PROP_FORMS: json.dumps(forms, ensure_ascii=False),
    }
    if plural_forms:
        together[PROP_PLURAL_FORMS] = plural_forms
    singular = _record(entry, entry.msgid, forms[one])
    singular.props.update(together, **{PROP_PLURAL: "one"})
    plural = _record(entry, entry.msgid_plural, forms[other])
    plural.props.update(together, **{PROP_PLURAL: "other", PROP_MSGID: entry.msgid})
    yield singular
    yield plural
    if len(forms) > len({one, other}):
        stats.skip(SKIP_EXTRA_PLURAL)


def cldr_plural_forms(tag: str) -> str | None:
    """The Plural-Forms header of a language from Babel's CLDR-derived table (what pybabel and
    msginit write), or None for a language Babel does not know."""
    from babel.core import UnknownLocaleError
    from babel.messages.plurals import get_plural

    try:
        return str(get_plural(languages.primary(tag)).plural_forms)
    except (UnknownLocaleError, ValueError, InvalidInput):
        return None


def plural_forms_for(header: str, where: str) -> tuple[int, int] | None:
    """The msgstr indexes a Plural-Forms header picks for n = 1 and n = 100 (None without a
    header); an expression gettext cannot evaluate is an import error naming the header."""
    match = _PLURAL.search(header or "")
    if not match:
        return None
    try:
        plural = gettext.c2py(match.group(1).strip().rstrip(";"))
        return int(plural(1)), int(plural(100))
    except (ValueError, SyntaxError, RecursionError, ZeroDivisionError) as exc:
        raise ImportFormatError(where, None, f"unreadable Plural-Forms header ({exc})") from None


def _record(entry: Any, source: str, target: str) -> SegmentRecord:
    props: dict[str, str] = {}
    if entry.tcomment:
        props["note"] = entry.tcomment
    if entry.comment:
        props["x-po-comment"] = entry.comment
    flags = [flag for flag in entry.flags if flag != "fuzzy"]
    if flags:
        props[PROP_FLAGS] = ", ".join(flags)
    if entry.occurrences:
        props["x-po-references"] = " ".join(
            f"{file}:{line}" if line else file for file, line in entry.occurrences
        )
    return SegmentRecord(
        source=source,
        target=target,
        context=entry.msgctxt,
        props=props,
        line=getattr(entry, "linenum", None),
    )
