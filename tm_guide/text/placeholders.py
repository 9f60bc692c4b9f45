"""Non-translatables: the parts of a segment that must come back verbatim, exactly once each.

printf (`%s`, `%1$s`, `%(name)s`, `%.250s`), brace (`{0}`, `{name}`), Weblate's markers
(`[X15X]`; DeepL's `<x id="15"></x>`), XML/HTML tags and entities, URLs, e-mail addresses and
paths. A translation is kept only when it holds the source's non-translatables as a multiset
(`kept`): the model may move them where the target language wants them, never drop, duplicate
or alter one.

The model copies printf and brace placeholders, tags and URLs as they are (it learnt them from
software catalogues), but garbles Weblate's markers (`[X19X]` came back as `[X19X19X]`). Those
are masked (`mask`) as numbered brace placeholders, which it copies, and put back after
(`Masked.unmask`), each where the model put its stand-in.

A sentence whose translation loses one anyway is translated again with every non-translatable
standing in so (`mask_all`): the model still sees the whole sentence and places each where the
target language wants it, and it copies the short stand-ins more surely than a tag or a path
("<commits>" inside a quoted command). Where that loses one too, the lost one is put back by
word alignment (tm_guide.text.placement); without an aligner, the sentence is replaced by the
translation of the runs between them, with every non-translatable kept in its source order
(`runs_layout`): a worse sentence, but nothing a translator must retype.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tm_guide.text.edits import edited
from tm_guide.text.layout import Layout, Paragraph

_PRINTF = (
    r"%(?:\([A-Za-z_][\w.-]*\))?(?:\d+\$)?[-+0#']*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
    r"(?:hh|h|ll|l|L|q|j|z|t|I64|I32)?[diouxXeEfFgGaAcCsSpnr%@]"
)
_BRACE = r"\{[A-Za-z0-9_]*(?:[.:!][^{}\s]*)?\}"
# Weblate's stand-ins for a placeholder: [X15X] (LibreTranslate, ModernMT), <x id="15"></x>
# (DeepL, inside a tag's attribute too)
_MARKER = r"\[X\d+X\]|<x id=\"\d+\"></x>"
_TAG = r"<!--[\s\S]*?-->|</?[A-Za-z_][^<>]*>"
_ENTITY = r"&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);"
_URL = r"\b(?:https?|ftp|file)://[^\s<>\"']*[^\s<>\"'.,;:!?)\]]"
_EMAIL = r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
_PATH = r"(?<![\w/~.])(?:~|\.{1,2})?/(?:[\w.+-]+/)*[\w.+-]+/?"

PROTECTED = re.compile("|".join([_MARKER, _TAG, _URL, _EMAIL, _PRINTF, _BRACE, _ENTITY, _PATH]))
_MARKER_RE = re.compile(_MARKER)
# a stand-in for a non-translatable while the model translates (`mask`, `mask_all`): {n}
STAND_IN = re.compile(r"\{(\d+)\}")


def protected(text: str) -> list[str]:
    """The non-translatables of `text`, in order."""
    return [m.group() for m in PROTECTED.finditer(text)]


def kept(source: str, translation: str) -> bool:
    """Whether `translation` holds exactly the non-translatables of `source` (in any order)."""
    return Counter(protected(source)) == Counter(protected(translation))


@dataclass(frozen=True)
class Masked:
    """`text` with each marker of `originals` standing in as `{n}` (n its index)."""

    text: str
    originals: tuple[str, ...]

    def unmask(self, translation: str) -> str | None:
        """The translation with the markers back where their stand-ins went; None when a
        stand-in is missing, repeated or unknown."""
        seen = [int(m.group(1)) for m in STAND_IN.finditer(translation)]
        if sorted(seen) != list(range(len(self.originals))):
            return None
        return STAND_IN.sub(lambda m: self.originals[int(m.group(1))], translation)

    def moved(self, translation: str, position: int) -> int:
        """Where character `position` of the masked translation is in the unmasked one."""
        shift = 0
        for m in STAND_IN.finditer(translation):
            if m.start() >= position:
                break
            original = self.originals[int(m.group(1))]
            shift += len(original) - len(m.group())
        return position + shift


def mask(text: str) -> Masked | None:
    """`text` with its Weblate markers as numbered brace placeholders; None when it has no
    marker, or already holds braces (whose stand-ins could not be told apart)."""
    originals = [m.group() for m in _MARKER_RE.finditer(text)]
    if not originals or "{" in text or "}" in text:
        return None
    counter = iter(range(len(originals)))
    return Masked(_MARKER_RE.sub(lambda _: f"{{{next(counter)}}}", text), tuple(originals))


# command-line options, masked with the non-translatables by mask_all: a model that lost one of
# those in a usage line garbles the options beside it too ("-refsnapsnapshot")
_OPTION = r"(?<![\w-])--?[A-Za-z][\w-]*"
_MASKED = re.compile(f"{PROTECTED.pattern}|{_OPTION}")
_JOINER = re.compile(r"[^\w\s]*")


def mask_all(text: str) -> Masked | None:
    """`text` with every non-translatable and command-line option as a numbered brace
    placeholder, those joined by punctuation alone as one (`--pack=<pack>`: the model drops the
    "=" between two stand-ins); None when it has no non-translatable, or holds braces outside
    them (whose stand-ins could not be told apart)."""
    rest = _MASKED.sub("", text)
    if not PROTECTED.search(text) or "{" in rest or "}" in rest:
        return None
    spans: list[list[int]] = []
    for m in _MASKED.finditer(text):
        if spans and _JOINER.fullmatch(text, spans[-1][1], m.start()):
            spans[-1][1] = m.end()
        else:
            spans.append([m.start(), m.end()])
    stand_ins = edited(text, [(start, end, f"{{{n}}}") for n, (start, end) in enumerate(spans)])
    return Masked(stand_ins.text, tuple(text[start:end] for start, end in spans))


# at a text's edges: tags, markers, and symbols between them (`</p><br/> &amp; </b>`)
_EDGE_ITEM = rf"(?:{_TAG}|{_MARKER}|[&|/+*#~\u2022\u00b7\u2013\u2014-]+(?=\s|<|\[X|$))"
_ENCLOSING = re.compile(rf"^((?:\s*{_EDGE_ITEM})*\s*)([\s\S]*?)((?:\s*{_EDGE_ITEM})*\s*)$")


def enclosed(text: str) -> tuple[str, str, str]:
    """(tags before, the text they enclose, tags after): `<i>No service selected.</i>` is
    translated without its enclosing tags, which stay where they are, as every markup-aware
    engine keeps them. Weblate's markers count as tags here: they stand for a tag as often as
    for a placeholder, and either stays at the edge it was at."""
    match = _ENCLOSING.match(text)
    if match is None or not re.search(r"\w", _MARKER_RE.sub("", match.group(2))):
        return "", text, ""
    return match.group(1), match.group(2), match.group(3)


def runs_layout(text: str) -> Layout:
    """`text` cut at its non-translatables: each run between them with a letter or digit is a
    unit; the non-translatables and the spaces around the runs are kept verbatim, in order."""
    parts: list[str | None] = []
    units: list[str] = []
    position = 0
    for m in PROTECTED.finditer(text):
        _add_run(text[position : m.start()], parts, units)
        _add_verbatim(m.group(), parts)
        position = m.end()
    _add_run(text[position:], parts, units)
    return Layout((Paragraph(tuple(parts)),), tuple(units))


# kept beside the non-translatable they enclose: `'%s'` keeps its quotes out of the run
_EDGE = " \t\r\n'\"`\u00ab\u00bb\u201c\u201d\u201e\u2018\u2019()[]"


def _add_run(run: str, parts: list[str | None], units: list[str]) -> None:
    stripped = run.strip(_EDGE)
    if not stripped or not re.search(r"\w", stripped):
        _add_verbatim(run, parts)
        return
    start = run.index(stripped)
    _add_verbatim(run[:start], parts)
    parts.append(None)
    units.append(stripped)
    _add_verbatim(run[start + len(stripped) :], parts)


def _add_verbatim(text: str, parts: list[str | None]) -> None:
    if not text:
        return
    if parts and parts[-1] is not None:
        parts[-1] = parts[-1] + text
    else:
        parts.append(text)
