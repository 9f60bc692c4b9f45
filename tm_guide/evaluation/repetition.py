"""Degenerate repetition: an output that says a word or phrase again right after itself more often
than its source does ("in ein Dialogfenster, in ein Dialogfenster, ..."), a known failure of
reward-guided search (eq. 10 rewards a piece each time it is produced).

Counted on words (letters and digits, case folded; punctuation ignored) so that the measure does
not depend on a tokenizer, and relative to the source, so that a sentence that repeats on purpose
("very, very") is not counted."""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"\w+")
MAX_PHRASE = 4  # the longest repeated phrase looked for, in words (the paper's longest piece)


def back_to_back_repeats(text: str, max_phrase: int = MAX_PHRASE) -> int:
    """How many times a phrase of 1..max_phrase words follows itself immediately: positions i
    and lengths n with words[i:i+n] == words[i+n:i+2n]."""
    words = [w.casefold() for w in _WORD.findall(text)]
    count = 0
    for n in range(1, max_phrase + 1):
        for i in range(len(words) - 2 * n + 1):
            if words[i : i + n] == words[i + n : i + 2 * n]:
                count += 1
    return count


def repeated_outputs(outputs: Sequence[str], sources: Sequence[str]) -> int:
    """Outputs that repeat back to back more often than their source does."""
    if len(outputs) != len(sources):
        raise ValueError(f"{len(outputs)} outputs but {len(sources)} sources")
    return sum(
        back_to_back_repeats(out) > back_to_back_repeats(src)
        for out, src in zip(outputs, sources, strict=True)
    )
