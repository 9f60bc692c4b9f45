"""Stand-ins the model lost, put back where the word alignment says their neighbours went.

A sentence translated with its non-translatables standing in as `{n}` (placeholders.mask_all)
may still come back without one, or with one twice. Translating the runs between them instead
keeps every one but breaks the sentence ("kann ' nicht entfernen%.250s'"). Here the sentence's
translation is kept: a repeated stand-in is written once (its first), one the source does not
have is removed, and each missing one goes beside the target word aligned to its nearest
aligned source neighbour: after the one before it, else before the one after it, else at the
end. The alignment is asked of the caller (`WordAligner`), as it needs the model's tokenizer
and priors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tm_guide.text.edits import Edited, edited
from tm_guide.text.placeholders import STAND_IN

# (source words, target words) -> links (source word, target word)
WordAligner = Callable[[Sequence[str], Sequence[str]], Sequence[tuple[int, int]]]

_CHUNK = re.compile(r"\S+")
# what may close a target word before a stand-in put after it ("Datei {0}," not "Datei, {0}")
_CLOSING = re.compile(r"[.,;:!?)\]»«\"']+$")
# sentence punctuation a source chunk's stand-in does not take along ("'{0}'," -> "'{0}'")
_TRAILING = re.compile(r"[.,;:!?]+$")


@dataclass(frozen=True)
class _Word:
    """A whitespace-separated chunk: where it starts and ends, and its text without
    stand-ins."""

    start: int
    end: int
    text: str


def place_lost(source: str, translation: str, count: int, align: WordAligner) -> Edited:
    """`translation` (of `source`, whose stand-ins are {0}..{count-1}) with each stand-in once:
    repeats and unknown ones removed, missing ones put beside their aligned neighbours (see
    the module). The edits say where the translation's characters moved."""
    removals = _repeats(translation, count)
    present = {int(m.group(1)) for m in STAND_IN.finditer(translation)}
    missing = [n for n in range(count) if n not in present]
    if not missing:
        return edited(translation, removals)
    source_words = [w for w in _words(source) if w.text]
    targets = [w for w in _words(translation) if w.text]
    links = align([w.text for w in source_words], [w.text for w in targets]) if targets else ()
    linked: dict[int, list[int]] = {}
    for s, t in links:
        if 0 <= s < len(source_words) and 0 <= t < len(targets):
            linked.setdefault(s, []).append(t)
    inserts: dict[int, str] = {}
    for n in missing:
        at, text = _insertion(source, translation, n, source_words, targets, linked)
        inserts[at] = inserts.get(at, "") + text
    edits = []
    for start, end, replacement in removals:
        edits.append((start, end, inserts.pop(start, "") + replacement))
    edits += [(at, at, text) for at, text in inserts.items()]
    return edited(translation, edits)


def _insertion(
    source: str,
    translation: str,
    n: int,
    source_words: Sequence[_Word],
    targets: Sequence[_Word],
    linked: dict[int, list[int]],
) -> tuple[int, str]:
    """Where in `translation` stand-in `n` goes, and what to insert there."""
    end = len(translation.rstrip())
    chunk = next((m for m in _CHUNK.finditer(source) if f"{{{n}}}" in m.group()), None)
    if chunk is None:  # not the source's: nothing to place it by
        return end, f" {{{n}}}"
    piece = _piece(chunk.group(), n)
    # a word of the stand-in's own chunk ("{0}-Datei") counts as before it when the stand-in
    # follows it in the chunk, as after it otherwise
    at_chunk = chunk.start() + chunk.group().index(f"{{{n}}}")
    before = [k for k, w in enumerate(source_words) if w.start < at_chunk]
    after = [k for k, w in enumerate(source_words) if w.start >= at_chunk]
    at = _after(translation, targets, linked, before)
    if at is not None:
        return at, " " + piece
    at = _before(targets, linked, after)
    if at is not None:
        return at, piece + " "
    return end, " " + piece


def _repeats(translation: str, count: int) -> list[tuple[int, int, str]]:
    """Removals of every stand-in but each one's first occurrence, and of those not below
    `count`, each with one space beside it."""
    seen: set[int] = set()
    edits: list[tuple[int, int, str]] = []
    for m in STAND_IN.finditer(translation):
        n = int(m.group(1))
        if n < count and n not in seen:
            seen.add(n)
            continue
        start, end = m.start(), m.end()
        if start > 0 and translation[start - 1] == " ":
            start -= 1
        elif end < len(translation) and translation[end] == " ":
            end += 1
        edits.append((start, end, ""))
    return edits


def _words(text: str) -> list[_Word]:
    return [
        _Word(m.start(), m.end(), STAND_IN.sub("", m.group()).strip())
        for m in _CHUNK.finditer(text)
    ]


def _piece(chunk: str, n: int) -> str:
    """What to put back for stand-in `n`: its source chunk where that has no letter or digit
    besides stand-ins (the quotes around it: "'{0}'"), less sentence punctuation; else the
    stand-in alone."""
    rest = STAND_IN.sub("", chunk)
    if any(c.isalnum() for c in rest) or len(STAND_IN.findall(chunk)) > 1:
        return f"{{{n}}}"
    return _TRAILING.sub("", chunk) or f"{{{n}}}"


def _after(
    text: str, targets: Sequence[_Word], linked: dict[int, list[int]], before: Sequence[int]
) -> int | None:
    """Where to put a stand-in after the target word of its nearest aligned source word
    before it (inside that word's closing punctuation); None if none is aligned."""
    for k in reversed(before):
        if k in linked:
            word = targets[max(linked[k])]
            closing = _CLOSING.search(text, word.start, word.end)
            return closing.start() if closing and closing.start() > word.start else word.end
    return None


def _before(
    targets: Sequence[_Word], linked: dict[int, list[int]], after: Sequence[int]
) -> int | None:
    """Where to put a stand-in before the target word of its nearest aligned source word after
    it; None if none is aligned."""
    for k in after:
        if k in linked:
            return targets[min(linked[k])].start
    return None
