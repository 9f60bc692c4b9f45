"""Algorithm 1 of Zhang et al. (2018) for one retrieved pair, with eq. 9 and the unedited words W^m.

Kept free of storage and tokenization so that it can be tested on the paper's own example. Sets of
source positions are Python ints used as bit masks: checking "every aligned source word of this
target word is unedited" is then one AND per target word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import cached_property

from rapidfuzz.distance import Levenshtein

from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.pieces.words import compound_masks, word_masks, word_spans
from tm_guide.similarity import similarity_from_distance

Link = tuple[int, int]


@dataclass(frozen=True)
class AlignedPair:
    """A TM pair ready for Algorithm 1: tokens and, per target position, the mask of the source
    positions aligned to it (0 for an unaligned target token)."""

    segment_id: int
    source: tuple[str, ...]
    target: tuple[str, ...]
    target_links: tuple[int, ...]

    @classmethod
    def build(
        cls,
        segment_id: int,
        source: Sequence[str],
        target: Sequence[str],
        alignment: Sequence[Link] | Sequence[Sequence[int]],
    ) -> AlignedPair:
        masks = [0] * len(target)
        try:
            for s, t in alignment:
                if t < 0:
                    raise IndexError
                masks[t] |= 1 << s  # a negative s raises ValueError
            # the largest mask has the highest bit: the largest source position + 1
            inside = max(masks, default=0).bit_length() <= len(source)
        except (IndexError, ValueError):
            inside = False
        if not inside:
            raise ValueError(
                f"segment {segment_id}: alignment has a link outside "
                f"{len(source)} source x {len(target)} target tokens"
            )
        return cls(segment_id, tuple(source), tuple(target), tuple(masks))

    @cached_property
    def word_links(self) -> tuple[int, ...]:
        """target_links joined over each target word (tm_guide.pieces.words): a piece stands
        for every source token its word is aligned to."""
        return word_masks(self.target, self.target_links)

    @cached_property
    def compound_links(self) -> tuple[int, ...]:
        """word_links where a part of a hyphenated compound that is linked to nothing stands
        for the whole compound (tm_guide.pieces.words.compound_masks)."""
        return compound_masks(self.target, self.target_links)


@dataclass(frozen=True)
class EditComparison:
    """X against X^m: the edit distance, eq. 9, W^m as a mask over X^m's positions, which of
    the edited ones X replaces (the others X lacks), and the tokens of X that X^m lacks:
    inserted[p] of them stand before X^m[p] (inserted[len]: after its last token; empty when
    there are none)."""

    distance: int
    similarity: float
    unedited: int
    replaced: int = 0
    inserted: tuple[int, ...] = ()


def compare(query: Sequence[Hashable], tm_source: Sequence[Hashable]) -> EditComparison:
    """W^m = positions of X^m that the edit script from X to X^m leaves as they are."""
    editops = Levenshtein.editops(query, tm_source)
    unedited = (1 << len(tm_source)) - 1
    replaced = 0
    inserted: list[int] = []
    for op in editops:
        if op.tag != "delete":  # insert/replace touch X^m[dest_pos]; delete touches only X
            unedited &= ~(1 << op.dest_pos)
            if op.tag == "replace":
                replaced |= 1 << op.dest_pos
        else:
            if not inserted:
                inserted = [0] * (len(tm_source) + 1)
            inserted[op.dest_pos] += 1
    distance = len(editops)
    return EditComparison(
        distance,
        similarity_from_distance(distance, len(query), len(tm_source)),
        unedited,
        replaced,
        tuple(inserted),
    )


def compare_words(
    query: Sequence[str], tm_source: Sequence[str], by_pieces: EditComparison | None = None
) -> EditComparison:
    """X against X^m as `compare`, with the edit script taken over words (word_spans), not
    pieces: a word of X^m is unedited only where X holds it whole, and a replaced word is
    replaced whole, its pieces the replacing word's tokens in order (those left over edited,
    those it lacks inserted after it). A script over pieces pairs the letters of words in
    capitals ("AVEDEV", "AVERAGEIF") across words and the pieces of one word with those of
    another ("file" in "files", whose "Datei" must become "Dateien"). A name in capitals that
    only gains or loses a prefix or a suffix (WEEKNUM -> ISOWEEKNUM) is compared piece by
    piece: its translation is kept and the affix written beside it, where the model would
    write the whole name anew, letter by letter. Eq. 9's similarity and distance stay the
    pieces' (`by_pieces`: `compare(query, tm_source)` where the caller has it already)."""
    if by_pieces is None:
        by_pieces = compare(query, tm_source)
    q_words, s_words = word_spans(query), word_spans(tm_source)
    q_text = ["".join(query[a:b]) for a, b in q_words]
    s_text = ["".join(tm_source[a:b]) for a, b in s_words]
    unedited = (1 << len(tm_source)) - 1
    replaced = 0
    inserted = [0] * (len(tm_source) + 1)
    for op in Levenshtein.editops(q_text, s_text):
        if op.tag == "delete":  # a word of X that X^m lacks, before X^m's word dest_pos
            a, b = q_words[op.src_pos]
            at = s_words[op.dest_pos][0] if op.dest_pos < len(s_words) else len(tm_source)
            inserted[at] += b - a
            continue
        start, end = s_words[op.dest_pos]
        if op.tag == "replace" and _affixed(q_text[op.src_pos], s_text[op.dest_pos]):
            a, b = q_words[op.src_pos]
            inner = compare(query[a:b], tm_source[start:end])
            for p in range(start, end):
                if not inner.unedited >> (p - start) & 1:
                    unedited &= ~(1 << p)
            replaced |= inner.replaced << start
            for p, count in enumerate(inner.inserted):
                inserted[start + p] += count
            continue
        for p in range(start, end):
            unedited &= ~(1 << p)
        if op.tag == "replace":
            a, b = q_words[op.src_pos]
            for p in range(start, min(end, start + b - a)):
                replaced |= 1 << p
            inserted[end] += max(0, (b - a) - (end - start))
    return EditComparison(
        by_pieces.distance,
        by_pieces.similarity,
        unedited,
        replaced,
        tuple(inserted) if any(inserted) else (),
    )


# the least letters a name must share with another, at its start or end, to be the same name
# with an affix (WEEKNUM in ISOWEEKNUM), not another name
_AFFIXED_CORE = 4


def _affixed(one: str, other: str) -> bool:
    """Whether two names in capitals (no small letter) are one with a prefix or a suffix of
    the other."""
    short, long = sorted(
        (one.lstrip(SENTENCEPIECE_SPACE), other.lstrip(SENTENCEPIECE_SPACE)), key=len
    )
    if any(c.islower() for c in short + long):
        return False
    return len(short) >= _AFFIXED_CORE and (long.startswith(short) or long.endswith(short))


def collect_ngrams(
    target: Sequence[str], target_links: Sequence[int], unedited: int, max_n: int = 4
) -> list[tuple[str, ...]]:
    """Algorithm 1: for each start i, extend j while target word j has no alignment to an edited
    source word (unaligned words do not stop it), up to max_n words.

    Equivalently: split the target at the words linked to an edited source word and take every
    n-gram (n <= max_n) inside the runs between them, in Algorithm 1's order.
    """
    edited = ~unedited
    words = tuple(target)
    length = len(words)
    ngrams: list[tuple[str, ...]] = []
    run_start = 0
    for j in range(length + 1):
        if j < length and not target_links[j] & edited:
            continue
        for i in range(run_start, j):
            stop = min(j, i + max_n)
            ngrams.extend([words[i:k] for k in range(i + 1, stop + 1)])
        run_start = j + 1
    return ngrams


def pair_pieces(
    query: Sequence[Hashable],
    pair: AlignedPair,
    max_n: int = 4,
    min_similarity: float = 0.0,
) -> tuple[EditComparison, set[tuple[str, ...]]]:
    """G_X^m for one retrieved pair: `compare`, then `select_pieces`."""
    comparison = compare(query, pair.source)
    return comparison, select_pieces(comparison, pair, max_n, min_similarity)


def select_pieces(
    comparison: EditComparison, pair: AlignedPair, max_n: int = 4, min_similarity: float = 0.0
) -> set[tuple[str, ...]]:
    """Algorithm 1's n-grams, except that a pair below min_similarity, or with no unedited source
    token (W^m empty: nothing of it matches X), yields none."""
    return set(piece_counts(comparison, pair, max_n, min_similarity))


def piece_counts(
    comparison: EditComparison,
    pair: AlignedPair,
    max_n: int = 4,
    min_similarity: float = 0.0,
    whole_words: bool = False,
) -> dict[tuple[str, ...], int]:
    """select_pieces' n-grams, each with how often Algorithm 1 collects it from this pair: its
    occurrences in the target whose aligned source words are all unedited. An occurrence aligned
    to an edited word does not count: "6.2.2." matched against "6.2.4." gives "2 ." once, as
    the input has it once. With `whole_words`, a target word stops the runs as a whole when
    any of its pieces is aligned to an edited source token, and so does a part of a hyphenated
    compound that is linked to nothing when any part of the compound is
    (PieceOptions.whole_words)."""
    if not comparison.unedited or comparison.similarity < min_similarity:
        return {}
    links = pair.compound_links if whole_words else pair.target_links
    return dict(Counter(collect_ngrams(pair.target, links, comparison.unedited, max_n)))


class PieceTable:
    """G_X, the union of the G_X^m (eq. 7); n-grams scored by eq. 8, with their source pairs
    and, when pieces are clipped, how often one pair gives each (the most of any pair:
    piece_counts)."""

    def __init__(self) -> None:
        self.scores: dict[tuple[str, ...], float] = {}
        self.provenance: dict[tuple[str, ...], list[int]] = {}
        self.limits: dict[tuple[str, ...], int] = {}

    def limit(self, counts: dict[tuple[str, ...], int]) -> None:
        limits = self.limits
        for ngram, count in counts.items():
            if count > limits.get(ngram, 0):
                limits[ngram] = count

    def add(self, ngrams: set[tuple[str, ...]], score: float, segment_id: int) -> None:
        scores = self.scores
        provenance = self.provenance
        for ngram in ngrams:
            best = scores.get(ngram)
            if best is None:
                scores[ngram] = score
                provenance[ngram] = [segment_id]
                continue
            if best < score:
                scores[ngram] = score
            sources = provenance[ngram]
            if sources[-1] != segment_id:
                sources.append(segment_id)

    def unigrams(self) -> frozenset[str]:
        """L_X: every token of a collected n-gram is itself a collected unigram."""
        return frozenset(ngram[0] for ngram in self.scores if len(ngram) == 1)
