"""What a memory calls the words a repaired match lacks: pieces for the repair's gaps.

A close match repaired under a template leaves the model to write the words the input changed,
and the model writes its own word for them: "Faltung" for "footer" where the help says
"Fußzeile", "Hintergrund-Erechtung" for "background fill". The memory has usually said it
before, in pairs that a search for the sentence as a whole does not retrieve because the rest of
them differs. So each word of the input that the repaired match's source lacks is looked up
alone, and the target words that the pairs found align to it, and to nothing else, become pieces
of the input, weighed by how many of those pairs agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tm_guide.pieces.collect import AlignedPair
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.pieces.words import word_spans

# a word shorter than this (letters) is not looked up: articles and prepositions are in every
# retrieved pair, and a short word's alignment is the least sure
MIN_LETTERS = 4


@dataclass(frozen=True)
class SourceWord:
    """A word of the input: its tokens and its text as the search reads it."""

    tokens: tuple[str, ...]
    text: str


def _text(tokens: Sequence[str]) -> str:
    return "".join(tokens).replace(SENTENCEPIECE_SPACE, " ").strip()


def missing_words(query: Sequence[str], source: Sequence[str]) -> list[SourceWord]:
    """The words of `query` (tokens) of MIN_LETTERS letters or more that `source` (a match's
    tokens) does not hold as the same tokens, in order, each once. Identifiers and names are
    among them: code_words takes a replaced one's translation, but one the input inserts is
    the gap's ("PythonShell function in ..." repaired from "... service" dropped it)."""
    held = {tuple(source[a:b]) for a, b in word_spans(source)}
    found: list[SourceWord] = []
    for a, b in word_spans(query):
        tokens = tuple(query[a:b])
        text = _text(tokens)
        if tokens in held or not text.isalpha() or len(text) < MIN_LETTERS:
            continue
        if any(w.tokens == tokens for w in found):
            continue
        found.append(SourceWord(tokens, text))
    return found


def translations(
    word: SourceWord, pairs: Sequence[AlignedPair]
) -> tuple[dict[tuple[str, ...], list[int]], int]:
    """Each target run that translates `word` in `pairs` (the target words aligned to an
    occurrence of it, the same letters in any case, and to no other source word, when they
    stand together), with the segments of the pairs that give it; and how many of the pairs
    hold the word."""
    said: dict[tuple[str, ...], list[int]] = {}
    wanted = word.text.lower()
    holding = 0
    for pair in pairs:
        runs: set[tuple[str, ...]] = set()
        spans = [
            (a, b) for a, b in word_spans(pair.source) if _text(pair.source[a:b]).lower() == wanted
        ]
        holding += bool(spans)
        for a, b in spans:
            mask = sum(1 << s for s in range(a, b))
            links = pair.word_links
            inside = [t for t, m in enumerate(links) if m and not m & ~mask]
            if inside and inside[-1] - inside[0] + 1 == len(inside):
                runs.add(tuple(pair.target[inside[0] : inside[-1] + 1]))
        for run in runs:
            said.setdefault(run, []).append(pair.segment_id)
    return said, holding


def lookup_pieces(
    said: Mapping[tuple[str, ...], Sequence[int]], asked: int, max_n: int, least_share: float
) -> dict[tuple[str, ...], tuple[float, int]]:
    """The n-grams (up to max_n tokens) of each translation that at least `least_share` of the
    `asked` pairs give, with that share and the first segment that gives it: a word the memory
    translates one way throughout is trusted, one it translates many ways is left to the
    model."""
    pieces: dict[tuple[str, ...], tuple[float, int]] = {}
    for run, segments in said.items():
        share = len(segments) / asked
        if share < least_share:
            continue
        for i in range(len(run)):
            for j in range(i + 1, min(len(run), i + max_n) + 1):
                gram = run[i:j]
                if gram not in pieces or pieces[gram][0] < share:
                    pieces[gram] = (share, segments[0])
    return pieces
