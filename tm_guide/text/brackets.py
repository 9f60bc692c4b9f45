"""A bracket that a memory-guided translation leaves open, closed where the source closes its own.

A repair fills a gap with as many tokens as the source changed, and a guided search ends where
its pieces lead, so a formula can lose its closing bracket where the model was cut off or
rewarded to go on: "=ISOKALENDERWOCHE(DATUM(1999;1;1) gibt 53 zurück." for
"=ISOWEEKNUM(DATE(1999;1;1)) returns 53.", "SMALL(B2:B6;1" for "SMALL(B2:B6;1))", "[;
Durchschnitt)" for "[; Average_Range ])". A translator closes it where it belongs; so does this:
where the source holds a kind of bracket, opened and closed in order, each one the translation
leaves open is closed before the first closer of another kind that comes after it ("[;
Durchschnitt])"), or, where it follows a letter or a digit as a function's or an index's does,
at the end of the run of characters without a space that holds it ("DATUM(1999;1;1))"). Nothing
else changes: a bracket in prose left open ("(siehe Abschnitt 2.7.2, ..."), whose end only the
sentence knows, a closer without an opener, a bracket of a kind the source does not write,
quotation marks (one character opens and closes them).
"""

from __future__ import annotations

from tm_guide.text.edits import Edited, edited

_PAIRS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {closer: opener for opener, closer in _PAIRS.items()}


def closed_brackets(source: str, translation: str) -> Edited:
    """`translation` with the brackets it leaves open closed, of each kind the source holds
    opened and closed in order (see the module)."""
    kinds = {opener for opener in _PAIRS if opener in source and _nested(source, opener)}
    if not kinds:
        return Edited(translation)
    inserts: list[tuple[int, int, str]] = []
    stack: list[tuple[str, int]] = []  # (opener, where it is)
    for at, char in enumerate(translation):
        if char in _PAIRS:
            stack.append((char, at))
        elif char in _CLOSERS:
            opener = _CLOSERS[char]
            if not any(o == opener for o, _ in stack):
                continue  # a closer without its opener: left as it is
            while stack[-1][0] != opener:  # openers of other kinds closed before it
                inner, _ = stack.pop()
                if inner in kinds:
                    inserts.append((at, at, _PAIRS[inner]))
            stack.pop()
    for opener, start in reversed(stack):
        if opener in kinds and start > 0 and translation[start - 1].isalnum():
            end = start
            while end < len(translation) and not translation[end].isspace():
                end += 1
            end = _before_final_punctuation(translation, start, end)
            inserts.append((end, end, _PAIRS[opener]))
    if not inserts:
        return Edited(translation)
    # insertions at one place, in the order the brackets close (innermost first)
    merged: dict[int, str] = {}
    for at, _, closer in inserts:
        merged[at] = merged.get(at, "") + closer
    return edited(translation, [(at, at, text) for at, text in merged.items()])


def _nested(text: str, opener: str) -> bool:
    """Whether every `opener` in `text` is closed by its closer, in order."""
    depth = 0
    closer = _PAIRS[opener]
    for char in text:
        if char == opener:
            depth += 1
        elif char == closer:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _before_final_punctuation(text: str, start: int, end: int) -> int:
    """The end of a run without its sentence punctuation ("1;1." closes as "1;1)."), where
    something is left inside the bracket."""
    while end - 1 > start + 1 and text[end - 1] in ".,;:!?":
        end -= 1
    return end
