"""Identifiers in capitals linked in order: a list of function names is one name per name.

A word aligner links subword pieces by how often they co-occur, and the pieces of names in
capitals co-occur with everything: for "AVERAGE, AVERAGEA, AVEDEV, AVERAGEIF" and
"MITTELWERT, MITTELWERTA, MITTELABW, MITTELWERTWENN" eflomal linked the letters of the names
across one another, so an input without AVERAGEIF had the repair drop MITTELWERTA as well.
Where a pair's source and target hold as many such identifiers (two or more), the target writes
them in the source's order (a German help page names LibreOffice's functions in the order the
English one does), and each target identifier is linked to the source identifier at its place
instead; the marks between two of them ("," "; "), where both sides write the same, likewise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tm_guide.pieces.collect import AlignedPair
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE as SPACE
from tm_guide.pieces.words import covering, is_mark

# a word of three or more capitals (digits and underscores inside), not part of a longer word:
# the identifiers of tm_guide.pieces.code_words.CODE_WORD that name things ("TO" does not)
IDENTIFIER = re.compile(r"(?<![^\W_])[A-Z][A-Z0-9_]+[A-Z](?![^\W_])")


def linked_in_order(pair: AlignedPair) -> AlignedPair:
    """`pair` with its identifiers in capitals linked in order, where both sides hold as many,
    two or more (the module says why); `pair` itself otherwise."""
    source = _identifiers(pair.source)
    target = _identifiers(pair.target)
    if len(source) < 2 or len(source) != len(target):
        return pair
    masks = list(pair.target_links)
    for (s_tokens, _), (t_tokens, _) in zip(source, target, strict=True):
        mask = sum(1 << s for s in s_tokens)
        for t in t_tokens:
            masks[t] = mask
    for k in range(len(source) - 1):
        s_marks = _marks_between(pair.source, source[k][0][-1], source[k + 1][0][0])
        t_marks = _marks_between(pair.target, target[k][0][-1], target[k + 1][0][0])
        if (
            s_marks is None
            or t_marks is None
            or _text(pair.source, s_marks) != _text(pair.target, t_marks)
        ):
            continue
        for s, t in zip(s_marks, t_marks, strict=False):
            masks[t] = 1 << s
    links = tuple(masks)
    if links == pair.target_links:
        return pair
    return AlignedPair(pair.segment_id, pair.source, pair.target, links)


def _identifiers(tokens: Sequence[str]) -> list[tuple[list[int], str]]:
    """Each identifier of `tokens` (joined as they spell it): the tokens it spans, with the
    space piece before it where that is a token of its own (the word's, for words.word_spans),
    and its text."""
    found = []
    for match in IDENTIFIER.finditer("".join(tokens)):
        spanned = covering(tokens, match)
        if spanned[0] > 0 and not tokens[spanned[0] - 1].strip(SPACE):
            spanned.insert(0, spanned[0] - 1)  # a space piece of its own ("▁" "MI" ...)
        found.append((spanned, match.group()))
    return found


def _marks_between(tokens: Sequence[str], last: int, first: int) -> list[int] | None:
    """The marks strictly between two identifiers, where nothing but marks and spaces lies
    there (None else)."""
    between = range(last + 1, first)
    if not all(is_mark(tokens[i]) or not tokens[i].strip(SPACE) for i in between):
        return None
    return [i for i in between if is_mark(tokens[i])] or None


def _text(tokens: Sequence[str], positions: Sequence[int]) -> str:
    return "".join(tokens[i] for i in positions).replace(SPACE, "").replace(" ", "")
