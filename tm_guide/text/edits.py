"""Edits made to a translation's text after the search, and where its characters moved.

The search's output is detokenized, then set right in ways the model cannot see (the source's
characters the normalizer changed: tm_guide.text.normalized; a word written twice over:
tm_guide.text.stutter). Token offsets into the text must follow every such edit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Edited:
    """A text after edits, and the edits that made it from the text before: (start, end,
    replacement), in order and apart."""

    text: str
    edits: tuple[tuple[int, int, str], ...] = field(default=())

    def moved(self, position: int) -> int:
        """Where character `position` of the text before is in `text` (an edited span's start
        for a position inside it)."""
        shift = 0
        for start, end, replacement in self.edits:
            if position < end:
                return position + shift if position <= start else start + shift
            shift += len(replacement) - (end - start)
        return position + shift


def edited(text: str, edits: Iterable[tuple[int, int, str]]) -> Edited:
    """`text` with the edits made that do not overlap an earlier one (by start, the longer
    first)."""
    kept: list[tuple[int, int, str]] = []
    for edit in sorted(edits, key=lambda edit: (edit[0], -edit[1])):
        if not kept or edit[0] >= kept[-1][1]:
            kept.append(edit)
    if not kept:
        return Edited(text)
    parts, at = [], 0
    for start, end, replacement in kept:
        parts += [text[at:start], replacement]
        at = end
    parts.append(text[at:])
    return Edited("".join(parts), tuple(kept))
