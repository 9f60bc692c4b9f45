"""A segment as CAT tools send it, cut into the sentences a model translates and the text around
them that must come back exactly: line breaks, indentation, leading and trailing whitespace,
and lines with nothing to translate.

A sentence-level model fed a whole `--help` block or a paragraph of several sentences joins the
lines, drops content past its length budget, and loses the layout. Translating each sentence on
its own and putting the layout back around the translations keeps every line and every space
the translator would otherwise retype.

- Lines are kept: each line's break, indentation and trailing spaces come back verbatim, and a
  line with no letter or digit (a rule, an empty line) is not translated.
- A sentence wrapped over several lines (gettext's `Written by %s, %s, %s,\\nand %s.`: a line
  that does not end a sentence, followed by one of the same indentation that goes on in lower
  case) is translated once, whole, and wrapped again into as many lines, each break at the word
  boundary nearest to where the source broke (in proportion to the length).
- A line's columns (text separated by two spaces or more, or tabs, as `--help` aligns an option
  and its description) are translated one by one, the gaps kept.
- Sentences are found by sentencex (the segmenter of Wikimedia's machine translation service:
  rules per language, abbreviations included), never by hand-written regexes; the spaces between
  them are kept verbatim.
- A sentence longer than `max_words` is translated clause by clause: cut after the clause mark
  (`;`, `:`, `,`, a dash) nearest its middle, again until every part is short enough. A model
  trained on sentences of a few dozen words drops content from longer ones (the demo model,
  on 42 single sentences of 35 words or more: median output length 0.78 of the reference's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

_LINE = re.compile(r"([^\r\n\u2028\u2029]*)(\r\n|\r|\n|\u2028|\u2029|$)")
_WORDLIKE = re.compile(r"\w", re.UNICODE)
_TAGS = re.compile(r"<[^<>]*>")
# columns of a line (`--help`'s options and their descriptions): translated one by one
_COLUMN_GAP = re.compile(r"( {2,}|\t+)")
# a sentence of more words than this is translated clause by clause (layout_of)
LONG_SENTENCE_WORDS = 30
# where a clause ends: a mark followed by a space (not "1,5" or "a:b")
_CLAUSE_END = re.compile(r"[;:,\u2014\u2013](?=\s)|\s[\u2013\u2014-](?=\s)")
# a line whose text ends so (a closing quote or bracket allowed after) ends its sentence
_SENTENCE_END = re.compile(r"[.!?:;\u2026\u3002\uff01\uff1f]['\"\u00bb\u201d\u2019)\]]*$")


@dataclass(frozen=True)
class Paragraph:
    """Sentences that run over `len(breaks) + 1` lines (one, mostly): `parts` as in Layout,
    for the text of the lines joined by one space each; `breaks[i]` is what stood between
    line i and line i+1 (its trailing spaces, the line break, the next line's indentation), and
    `at[i]` where line i ended, as a fraction of the joined text's length."""

    parts: tuple[str | None, ...]
    breaks: tuple[str, ...] = ()
    at: tuple[float, ...] = ()

    def join_at(self, translations: Iterator[str]) -> tuple[str, list[int]]:
        """The paragraph's text with the next translations in its slots, and where each
        starts in it."""
        pieces: list[str] = []
        starts: list[int] = []
        length = 0
        for part in self.parts:
            piece = next(translations) if part is None else part
            if part is None:
                starts.append(length)
            pieces.append(piece)
            length += len(piece)
        text = "".join(pieces)
        if not self.breaks:
            return text, starts
        wrapped, taken = _wrap(text, self.breaks, self.at)
        # a break written over the space at p moves what follows p by its length less one
        return wrapped, [s + sum(len(b) - 1 for p, b in taken if p < s) for s in starts]

    @property
    def units(self) -> int:
        return sum(part is None for part in self.parts)


@dataclass(frozen=True)
class Layout:
    """`parts` in order: a string is kept verbatim, a Paragraph holds the units' slots.
    Joining `units` into the slots gives the source back."""

    parts: tuple[str | Paragraph, ...]
    units: tuple[str, ...]

    @property
    def plain(self) -> bool:
        """One unit that is the whole segment: translated as it is, nothing around it."""
        return self.parts == (Paragraph((None,)),)

    def join(self, translations: Sequence[str]) -> str:
        """The target segment: each unit's translation in its slot, the layout around them."""
        return self.join_at(translations)[0]

    def join_at(self, translations: Sequence[str]) -> tuple[str, list[int]]:
        """`join`, and where each unit's translation starts in the target segment."""
        if len(translations) != len(self.units):
            raise ValueError(f"{len(translations)} translations for {len(self.units)} units")
        it = iter(translations)
        pieces: list[str] = []
        starts: list[int] = []
        length = 0
        for part in self.parts:
            if isinstance(part, str):
                piece = part
            else:
                piece, inside = part.join_at(it)
                starts.extend(length + start for start in inside)
            pieces.append(piece)
            length += len(piece)
        return "".join(pieces), starts


def layout_of(text: str, language: str, max_words: int = LONG_SENTENCE_WORDS) -> Layout:
    """The layout of `text`, a segment in `language` (a BCP 47 tag; its primary subtag picks
    sentencex's rules, and a language it has no rules for gets its generic ones); a sentence of
    more than `max_words` words is cut into clauses (0: never)."""
    segment = _segmenter(language.replace("_", "-").split("-")[0].lower() or "en")
    parts: list[str | Paragraph] = []
    units: list[str] = []
    lines = _lines(text)
    i = 0
    while i < len(lines):
        lead, content, trail, brk = lines[i]
        if not _WORDLIKE.search(content):
            parts.append(lead + content + trail + brk)
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and _continues(lines[j], lines[j + 1]):
            j += 1
        wrapped = lines[i : j + 1]
        joined = " ".join(line[1] for line in wrapped)
        breaks, at, length = [], [], 0
        for k, (_, line_text, line_trail, line_break) in enumerate(wrapped[:-1]):
            length += len(line_text) + (1 if k else 0)
            breaks.append(line_trail + line_break + wrapped[k + 1][0])
            at.append(length / len(joined))
        if lead:
            parts.append(lead)
        paragraph_parts: list[str | None] = []
        for column in _COLUMN_GAP.split(joined) if len(wrapped) == 1 else [joined]:
            if _COLUMN_GAP.fullmatch(column) or not _WORDLIKE.search(column):
                paragraph_parts.append(column)
                continue
            for sentence in _sentences(segment, column):
                for clause in _clauses(sentence, max_words):
                    _add_sentence(clause, paragraph_parts, units)
        parts.append(Paragraph(_merged(paragraph_parts), tuple(breaks), tuple(at)))
        last_trail, last_break = wrapped[-1][2], wrapped[-1][3]
        if last_trail or last_break:
            parts.append(last_trail + last_break)
        i = j + 1
    return Layout(_merged_layout(parts), tuple(units))


def _add_sentence(sentence: str, parts: list[str | None], units: list[str]) -> None:
    """A sentence as a unit, its surrounding spaces verbatim; one of punctuation or tags only
    (`</b>` after a sentence's full stop) verbatim."""
    stripped = sentence.strip()
    if not stripped or not _WORDLIKE.search(_TAGS.sub("", stripped)):
        parts.append(sentence)
        return
    start = sentence.index(stripped)
    if start:
        parts.append(sentence[:start])
    parts.append(None)
    units.append(stripped)
    if start + len(stripped) < len(sentence):
        parts.append(sentence[start + len(stripped) :])


def _clauses(sentence: str, max_words: int) -> list[str]:
    """`sentence` cut after clause marks into parts of at most `max_words` words (a part without
    such a mark stays whole), their concatenation `sentence` again."""
    words = sentence.split()
    if max_words <= 0 or len(words) <= max_words:
        return [sentence]
    middle = len(sentence) / 2
    cuts = [m.end() for m in _CLAUSE_END.finditer(sentence) if sentence[: m.end()].strip()]
    cuts = [c for c in cuts if sentence[c:].strip() and _WORDLIKE.search(sentence[c:])]
    if not cuts:
        return [sentence]
    cut = min(cuts, key=lambda c: abs(c - middle))
    return _clauses(sentence[:cut], max_words) + _clauses(sentence[cut:], max_words)


def _lines(text: str) -> list[tuple[str, str, str, str]]:
    """(indentation, text, trailing spaces, line break) of every line; the last has no break."""
    lines = []
    for match in _LINE.finditer(text):
        line, brk = match.group(1), match.group(2)
        if not line and not brk:
            continue
        content = line.strip()
        lead = line[: len(line) - len(line.lstrip())]
        trail = line[len(lead) + len(content) :] if content else ""
        if not content:
            lead = line
        lines.append((lead, content, trail, brk))
    return lines


def _continues(line: tuple[str, str, str, str], following: tuple[str, str, str, str]) -> bool:
    """Whether `following` goes on with the sentence `line` left open (a wrapped sentence)."""
    text, next_text = line[1], following[1]
    return (
        bool(line[3])
        and bool(next_text)
        and following[0] == line[0]
        and not _SENTENCE_END.search(text)
        and next_text[0].islower()
        and not _COLUMN_GAP.search(text)
        and not _COLUMN_GAP.search(next_text)
    )


def _sentences(segment: Callable[[str], list[str]], text: str) -> list[str]:
    """`text` cut into sentences whose concatenation is `text` again."""
    found = segment(text)
    if "".join(found) != text:  # not the segmenter's promise for every input: keep it whole
        return [text]
    return found


def _wrap(
    text: str, breaks: Sequence[str], at: Sequence[float]
) -> tuple[str, list[tuple[int, str]]]:
    """`text` broken into len(breaks) + 1 lines: break i replaces the space nearest to `at[i]`
    of the length (after the previous break); with no space left, a break goes at the end. Also
    (position, break) of each space a break replaced."""
    spaces = [m.start() for m in re.finditer(r" ", text)]
    chosen: list[int] = []
    last = -1  # the space the previous break took; every break takes one after it
    for fraction in at:
        target = fraction * len(text)
        candidates = [s for s in spaces if s > last]
        if candidates:
            last = min(candidates, key=lambda s: abs(s - target))
            chosen.append(last)
        else:
            chosen.append(-1)
    out, previous = [], 0
    for position, brk in zip(chosen, breaks, strict=True):
        if position < 0:
            out.append(text[previous:])
            previous = len(text)
        else:
            out.append(text[previous:position])
            previous = position + 1
        out.append(brk)
    out.append(text[previous:])
    taken = [(p, b) for p, b in zip(chosen, breaks, strict=True) if p >= 0]
    return "".join(out), taken


@lru_cache(maxsize=64)
def _segmenter(language: str) -> Callable[[str], list[str]]:
    from sentencex import segment

    return lambda text: list(segment(language, text))


def _merged(parts: list[str | None]) -> tuple[str | None, ...]:
    """Adjacent verbatim strings as one."""
    out: list[str | None] = []
    for part in parts:
        if part is not None and out and out[-1] is not None:
            out[-1] = out[-1] + part
        else:
            out.append(part)
    return tuple(out)


def _merged_layout(parts: list[str | Paragraph]) -> tuple[str | Paragraph, ...]:
    out: list[str | Paragraph] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] = out[-1] + part
        else:
            out.append(part)
    return tuple(out)
