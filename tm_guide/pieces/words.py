"""Words of a token sequence: where SentencePiece pieces join into the words a translator sees.

Algorithm 1 and the repair both work on words, not pieces: a word is kept, dropped or rewarded
whole, so that no piece of a changed word is written into another one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
# the pieces that join the parts of a compound ("Plasma-Arbeitsfläche")
HYPHENS = frozenset({"-", "\u2010", "\u2011"})


def is_mark(token: str) -> bool:
    """A piece of punctuation or symbols only (no letter or digit)."""
    text = token.lstrip(SENTENCEPIECE_SPACE)
    return bool(text) and not any(c.isalnum() for c in text)


def continues_word(token: str) -> bool:
    """Whether a piece goes on with the word before it: no word-start mark and not
    punctuation (which word_starts counts as a word of its own)."""
    return bool(token) and not token.startswith(SENTENCEPIECE_SPACE) and not is_mark(token)


def byte_value(token: str) -> int | None:
    """The byte a byte-fallback piece (<0xC2>) stands for; None for any other token."""
    found = _BYTE_PIECE.fullmatch(token)
    return int(found[1], 16) if found else None


def word_starts(tokens: Sequence[str]) -> list[bool]:
    """Which tokens begin a word: SentencePiece pieces that carry the space mark, the first,
    punctuation and the piece after it ("=WERT(A1)" is five words, so one changed argument
    does not drop the rest); every token when none carries the mark (whole-word tokens).
    Punctuation the vocabulary spells in bytes ("¶" is <0xC2><0xB6>) is a word of its own too,
    so that "Einzelheiten¶" is not dropped whole, pilcrow and all, when "Details" changes."""
    if not any(SENTENCEPIECE_SPACE in token for token in tokens):
        return [True] * len(tokens)
    marks = [is_mark(token) for token in tokens]
    first, last = _byte_marks(tokens)
    return [
        i == 0
        or token.startswith(SENTENCEPIECE_SPACE)
        or marks[i]
        or marks[i - 1]
        or i in first
        or i - 1 in last
        for i, token in enumerate(tokens)
    ]


def _byte_marks(tokens: Sequence[str]) -> tuple[set[int], set[int]]:
    """The first and the last byte piece of each character spelled in byte pieces that holds
    no letter or digit."""
    first: set[int] = set()
    last: set[int] = set()
    i = 0
    while i < len(tokens):
        value = byte_value(tokens[i])
        if value is None:
            i += 1
            continue
        size = 1 if value < 0x80 else 2 if value < 0xE0 else 3 if value < 0xF0 else 4
        spelled = [byte_value(token) for token in tokens[i : i + size]]
        try:
            char = bytes(b for b in spelled if b is not None).decode("utf-8")
        except UnicodeDecodeError:
            i += 1
            continue
        if len(char) != 1:  # a byte piece missing: no character
            i += 1
            continue
        if not char.isalnum():
            first.add(i)
            last.add(i + size - 1)
        i += size
    return first, last


def covering(tokens: Sequence[str], span: re.Match[str]) -> list[int]:
    """The tokens that hold a character of `span`, a match in the joined `tokens`."""
    found, at = [], 0
    for i, token in enumerate(tokens):
        if at < span.end() and at + len(token) > span.start():
            found.append(i)
        at += len(token)
    return found


def word_numbers(starts: Sequence[bool]) -> list[int]:
    """Each token's word, numbered from 1 in order, from where words start (word_starts)."""
    return list(itertools.accumulate(int(start) for start in starts))


def word_spans(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """The [start, end) token spans of the words of `tokens` (word_starts)."""
    numbers = word_numbers(word_starts(tokens))
    spans: list[tuple[int, int]] = []
    for i, number in enumerate(numbers):
        if spans and numbers[spans[-1][0]] == number:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
    return spans


def word_masks(tokens: Sequence[str], masks: Sequence[int]) -> tuple[int, ...]:
    """Each token's bit mask (as AlignedPair.target_links) joined over its word (word_numbers):
    every piece of a word stands for what any of its pieces stands for."""
    words = word_numbers(word_starts(tokens))
    joined: dict[int, int] = {}
    for word, mask in zip(words, masks, strict=True):
        joined[word] = joined.get(word, 0) | mask
    return tuple(joined[word] for word in words)


def compound_firsts(tokens: Sequence[str]) -> dict[int, int]:
    """For each word (word_numbers) that is a later part of a hyphenated compound, or the
    hyphen before it, the first word of that compound, which names the compound: word_starts
    makes "Versionskontroll-system-Werkzeuge" three words and two hyphens, but a translator
    sees one word, whose head is its last part."""
    words = word_numbers(word_starts(tokens))
    firsts: dict[int, int] = {}
    for i in range(1, len(tokens) - 1):
        if tokens[i] in HYPHENS and not is_mark(tokens[i - 1]) and continues_word(tokens[i + 1]):
            first = firsts.get(words[i - 1], words[i - 1])
            firsts[words[i]] = first
            firsts[words[i + 1]] = first
    return firsts


def compound_masks(tokens: Sequence[str], masks: Sequence[int]) -> tuple[int, ...]:
    """word_masks where a part of a hyphenated compound (compound_firsts) that the aligner linked
    to nothing stands for what the whole compound stands for: of "E-Mail-Systems" with "Mail"
    linked to a changed "Email", "E", linked to nothing, would be a piece that writes
    "E-Systems". A part linked on its own stands for its own words ("Versionskontrollsystem" of
    "Versionskontrollsystem-Werkzeuge" for "version control system", whatever became of the
    tools), and a hyphen for none: it joins the parts on either side, which say whether the
    compound goes ("MySQL-Verbindung" keeps its hyphen when "MariaDB and" is added)."""
    words = word_numbers(word_starts(tokens))
    joined = word_masks(tokens, masks)
    firsts = compound_firsts(tokens)
    whole: dict[int, int] = {}
    for word, mask in zip(words, joined, strict=True):
        first = firsts.get(word, word)
        whole[first] = whole.get(first, 0) | mask
    return tuple(
        mask or (0 if is_mark(token) else whole.get(firsts.get(word, word), 0))
        for token, word, mask in zip(tokens, words, joined, strict=True)
    )
