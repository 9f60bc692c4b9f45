"""Marks at a sentence's edges that the model cannot read: kept out of its input, put back.

The Debian manuals end every heading with a pilcrow ("5.12. Package Salvaging¶", the anchor of
the HTML they come from), and help texts start a line with an arrow or a check mark ("🡆 Next").
A vocabulary that has no piece for such a character spells it in byte pieces, which the model
has hardly seen: the demo model translates the pilcrow as a colon ("Dokumentation::"), ends the
sentence early on it ("5.14.2"), or writes it in the middle ("Porter¶ haben"). A translator
keeps such a mark where it stands, so the model translates the sentence without the marks at its
edges, and the translation gets them back there, unless it already holds them there (a repaired
match whose target ends with them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tm_guide.text.edits import Edited, edited


@dataclass(frozen=True)
class Edges:
    """A sentence cut into the marks before its text (`lead`, with the spaces after them), its
    text (`core`) and the marks after it (`trail`, with the spaces before them); lead and trail
    are empty where the sentence has no such marks, or nothing else."""

    lead: str
    core: str
    trail: str

    @property
    def cut(self) -> bool:
        return bool(self.lead or self.trail)


def edges_of(text: str, unreadable: Callable[[str], bool]) -> Edges:
    """`text` cut at the runs of `unreadable` characters (and the spaces among them) at its
    start and end; the whole text as its core where nothing else is left."""
    start = 0
    while start < len(text) and (unreadable(text[start]) or text[start].isspace()):
        start += 1
    if not any(unreadable(c) for c in text[:start]):
        start = 0
    end = len(text)
    while end > start and (unreadable(text[end - 1]) or text[end - 1].isspace()):
        end -= 1
    if not any(unreadable(c) for c in text[end:]):
        end = len(text)
    if not text[start:end].strip():
        return Edges("", text, "")
    return Edges(text[:start], text[start:end], text[end:])


def with_edges(edges: Edges, translation: str) -> Edited:
    """`translation` (of `edges.core`) with the marks of `edges` put back at its ends, in place
    of the spaces there; an end that already holds them stays."""
    edits = []
    lead, trail = edges.lead.strip(), edges.trail.strip()
    if translation.strip():
        end = len(translation.rstrip())
        if trail and not translation[:end].endswith(trail):
            edits.append((end, len(translation), edges.trail))
        start = len(translation) - len(translation.lstrip())
        if lead and not translation[start:].startswith(lead):
            edits.append((0, start, edges.lead))
    return edited(translation, edits)


def is_mark(character: str) -> bool:
    """Whether a character may be an edge mark: not a letter, a digit or a space (a letter the
    vocabulary spells in bytes is still a word's)."""
    return not (character.isalnum() or character.isspace())
