"""The template of a close match's target: what to keep, and where the model may write.

A translator given a 90% match edits the words that translate what changed and keeps the rest.
This does the same with the word alignment that Algorithm 1 uses: a target token aligned to an
edited source token of the match is dropped, with the rest of its word (and the rest of its
hyphenated compound where the word is the compound's head); every other target token is kept,
in order. The model may write free tokens where they are owed: where the target of a source
token the input replaces was, where the input has tokens the match lacks (after the word of the
match token before them, or before that of the one after them), and where a dropped word
translated an unchanged source token or went with a changed one; `gap_scale` per owed token plus
`gap_margin`, and the margin alone at a seam where words were only dropped. The search then
decodes under the template (tm_guide.decoding.template), so the output is the match's target
with only those places rewritten by the model.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from tm_guide.errors import InvalidInput
from tm_guide.pieces.collect import AlignedPair, EditComparison
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.pieces.words import (
    byte_value,
    compound_firsts,
    continues_word,
    is_mark,
    word_numbers,
    word_starts,
)
from tm_guide.similarity import token_similarity

# a word for word_similarity: letters and digits, joined by hyphens ("Unix-like") and dots
# ("ver1.1", "e.g"), except a dot between capitals, which parts a function's name
# ("PERCENTILE.INC" holds "PERCENTILE")
_WORD = re.compile(r"\w+(?:(?:-|(?<![A-Z])\.|\.(?![A-Z]))\w+)*")


@dataclass(frozen=True)
class RepairOptions:
    """threshold: repair the best match when its eq. 9 similarity reaches this (None: never);
    gap_scale, gap_margin: free tokens allowed at a place to rewrite, per token owed there, and
    on top (by default 1 and 1, the demo card's: the least room that scores as well as more
    on the help dev set); overrun: tokens past a spent gap that may still finish the word the
    model is writing (tm_guide.decoding.template), so that a gap never ends mid-word;
    lookahead: how many of the template's next words a gap may not write (it would copy them);
    agreement: a kept word of at most this many letters right before a changed word is
    rewritten with it (an article or a preposition agrees with the new word: "das Startcenter"
    becomes "den Startbildschirm"; 0: never);
    modifiers: before a changed word that begins with a capital (a German noun), up to this
    many kept words in small letters between it and such a short word (the adjectives of its
    noun phrase) are rewritten with them, as they agree with the new noun too: "die
    ausgewählte Zeile" for "row" gave "die ausgewählte Objekte" for "object" (0: only the
    word right before);
    words: the match must also reach this eq. 9 similarity over the words that hold a letter
    (`word_similarity`): a heading's number or the punctuation lifts the token similarity of
    "6.3.1. Basics of SSH" and "6.2.1. Email basics" to 0.5 where they share no content, and
    the model then writes a new sentence into the match's frame ("6.3.1. Grundlage-Mail-
    Systems von SSH"); such a sentence is guided instead (0: no such bound). 0.3 on the dev sets
    of three domains: served BLEU in the similarity decile 0.5-0.6 49.18 -> 49.11 on
    LibreOffice help, 28.51 -> 32.31 and 45.63 -> 50.66 on the Debian docs and guides (and
    49.31 -> 50.15 in the guides' 0.6-0.7); no other decile moves;
    tail: input tokens the match lacks after its last word (only marks follow) go at the end of
    its target, before its closing marks, where there are at least this many (0: never): an
    added clause follows the whole sentence, where German ends on the verb ("um den Dialog zu
    schließen" + "and save the file"), not the word before it; fewer stay after that word, as
    a phrase does ("den Text" + "in the document", before the separable "aus")."""

    threshold: float | None = None
    gap_scale: int = 1
    gap_margin: int = 1
    overrun: int = 4
    lookahead: int = 3
    agreement: int = 3
    modifiers: int = 2
    words: float = 0.3
    tail: int = 3

    def __post_init__(self) -> None:
        if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
            raise InvalidInput(
                f"the repair threshold must be in (0, 1], not {self.threshold}",
                field="repair_threshold",
            )
        if (
            min(
                self.gap_scale,
                self.gap_margin,
                self.overrun,
                self.lookahead,
                self.agreement,
                self.modifiers,
                self.tail,
            )
            < 0
        ):
            raise InvalidInput(
                "gap_scale, gap_margin, overrun, lookahead, agreement, modifiers and tail must"
                " be >= 0",
                field="repair",
            )
        if not 0.0 <= self.words <= 1.0:
            raise InvalidInput("the repair's word similarity must be in [0, 1]", field="repair")

    def applies(self, similarity: float) -> bool:
        """Whether a match of eq. 9 `similarity` reaches the threshold (see also shares)."""
        return self.threshold is not None and similarity >= self.threshold

    def shares(self, words: float) -> bool:
        """Whether a match of `words` over its words with a letter (word_similarity) shares
        enough of them to be repaired."""
        return words >= self.words

    @classmethod
    def parse(cls, spec: str) -> RepairOptions:
        """`off`, `T`, `T:SCALE:MARGIN` or `T:SCALE:MARGIN:OVERRUN` (the form a model card, a
        request and the CLI use)."""
        text = spec.strip()
        if text == "off":
            return cls()
        parts = text.split(":")
        try:
            if len(parts) == 1:
                return cls(float(parts[0]))
            if len(parts) in (3, 4):
                return cls(float(parts[0]), *(int(p) for p in parts[1:]))
        except ValueError:
            pass
        raise InvalidInput(
            f"repair {spec!r} is not off, T, T:SCALE:MARGIN or T:SCALE:MARGIN:OVERRUN"
            " (T a similarity in (0, 1])",
            field="repair",
        )

    @property
    def spec(self) -> str:
        if self.threshold is None:
            return "off"
        spec = f"{self.threshold:g}:{self.gap_scale}:{self.gap_margin}"
        return spec if self.overrun == RepairOptions.overrun else f"{spec}:{self.overrun}"


@dataclass(frozen=True)
class MatchTemplate:
    """The kept target tokens of one TM pair, with the free tokens allowed before each of them
    (gaps[len(tokens)]: after the last), where each stands in the pair's target tokens, and the
    pair it came from (segment_id None: no pair, tokens the output must hold, as glossary terms:
    tm_guide.pieces.terms). `word_rules`: whether the search holds its gaps to the word rules of
    tm_guide.decoding.template (a gap does not glue onto a kept word nor end mid-word); a
    glossary term may take an ending, so its template does not."""

    tokens: tuple[str, ...]
    gaps: tuple[int, ...]
    positions: tuple[int, ...]
    segment_id: int | None
    similarity: float
    overrun: int = 0  # RepairOptions.overrun
    lookahead: int = 0  # RepairOptions.lookahead
    # per gap: the free tokens it must hold: one where tokens are owed (the source changed
    # there), none where words were only dropped (empty: none anywhere)
    least: tuple[int, ...] = ()
    word_rules: bool = True


def without_edge_marks(template: MatchTemplate, marks: frozenset[str]) -> MatchTemplate | None:
    """`template` without the kept tokens at either end that spell `marks` (byte pieces, with
    a space piece beside them): the model translates a sentence without the marks at its edges
    that it cannot read (tm_guide.text.edges), and a template that kept the match's own would
    make it write them, and fill the gap before them, where it means to end. The gaps at a cut
    end are joined. None where nothing else is kept."""

    def cut(tokens: Sequence[str]) -> int:
        n = 0
        while n < len(tokens) and (tokens[n] in marks or tokens[n] == SENTENCEPIECE_SPACE):
            n += 1
        return n if any(token in marks for token in tokens[:n]) else 0

    tokens = template.tokens
    head = cut(tokens)
    tail = cut(tokens[::-1]) if head < len(tokens) else 0
    if not head and not tail:
        return template
    end = len(tokens) - tail
    if head >= end:
        return None

    def joined(values: tuple[int, ...]) -> tuple[int, ...]:
        if not values:
            return values
        return (sum(values[: head + 1]), *values[head + 1 : end], sum(values[end:]))

    return replace(
        template,
        tokens=tokens[head:end],
        gaps=joined(template.gaps),
        positions=template.positions[head:end],
        least=joined(template.least),
    )


def word_similarity(query: Sequence[str], tm_source: Sequence[str]) -> float:
    """Eq. 9 over the words of two token sequences that hold a letter, in any letter case and
    without the punctuation around them ("row." is "row"): the tokens are joined into text at
    SentencePiece's space marks (or at every token where none carries one). Two sequences with
    no such word are alike (1.0)."""
    return token_similarity(_letter_words(query), _letter_words(tm_source))


def _letter_words(tokens: Sequence[str]) -> list[str]:
    tokens = _bytes_decoded(tokens)
    if any(SENTENCEPIECE_SPACE in token for token in tokens):
        text = "".join(tokens).replace(SENTENCEPIECE_SPACE, " ")
    else:
        text = " ".join(tokens)
    return [word.casefold() for word in _WORD.findall(text) if any(c.isalpha() for c in word)]


def _bytes_decoded(tokens: Sequence[str]) -> list[str]:
    """`tokens` with each run of byte-fallback pieces turned into the characters it spells: the
    spelling "<0xC2>" holds letters, and a heading's pilcrow ("¶" is <0xC2><0xB6>) would count
    as two words that every heading shares."""
    decoded: list[str] = []
    pending = bytearray()
    for token in tokens:
        value = byte_value(token)
        if value is not None:
            pending.append(value)
            continue
        if pending:
            decoded.append(pending.decode("utf-8", "replace"))
            pending.clear()
        decoded.append(token)
    if pending:
        decoded.append(pending.decode("utf-8", "replace"))
    return decoded


def continuation_mask(vocabulary: Sequence[str]) -> np.ndarray:
    """How each token of a SentencePiece vocabulary follows the one before (the codes of
    tm_guide.decoding.template): 1 where it continues a word (no space mark, not punctuation,
    which word_starts counts as a word, not a control token such as `<s>`, `</s>`, `<unk>` or a
    language token), 2 for a byte piece that continues a character (0x80-0xBF), 0 else (it
    starts a word). Other byte pieces continue a word."""
    mask = np.zeros(len(vocabulary), dtype=np.uint8)
    for i, token in enumerate(vocabulary):
        value = byte_value(token)
        if value is not None:
            mask[i] = 2 if 0x80 <= value <= 0xBF else 1
        elif token.startswith("<") and token.endswith(">") or token.startswith("__"):
            continue
        else:
            mask[i] = continues_word(token)
    return mask


def match_template(
    pair: AlignedPair, comparison: EditComparison, options: RepairOptions
) -> MatchTemplate | None:
    """The template of `pair` for the input it was compared with; None when nothing of its
    target is kept."""
    target = pair.target
    edited = ((1 << len(pair.source)) - 1) & ~comparison.unedited
    starts = word_starts(target)
    words = word_numbers(starts)
    ends = [i for i in range(1, len(target) + 1) if i == len(target) or starts[i]]
    changed_words = {w for w, links in zip(words, pair.target_links, strict=True) if links & edited}
    dropped_words = _whole_compounds(target, words, changed_words)
    agreeing = _agreeing(
        pair, words, dropped_words, comparison, options.agreement, options.modifiers
    )
    dropped_words |= agreeing
    orphans = _orphans(target, words, pair.target_links, dropped_words)
    # an orphan that heads a compound takes the rest of it, its hyphen too ("PC-Systemen"
    # left "-" between two gaps: "die-Informationen")
    dropped_words = _whole_compounds(target, words, dropped_words | orphans)
    kept = [i for i, w in enumerate(words) if w not in dropped_words]
    if not kept:
        return None
    aligned = _aligned_targets(pair)
    # demand[i]: tokens the model is to write at boundary i of the target (before target[i]):
    # one per source token of the match that the input replaces, where its target was; one per
    # input token the match lacks; and one per token of a dropped word that translates an
    # unchanged source token or went with a changed one (an article that agrees with it, the
    # first part of a compound whose head changed). A target word of a source
    # token that the input lacks is dropped and nothing is written in its place
    demand = [0] * (len(target) + 1)
    dropped = [0] * (len(target) + 1)
    # owed[i]: tokens owed for the input's own changes at boundary i; rewritten[i]: words
    # dropped there only to agree with a changed word (an article before it), each of which
    # the gap must write again besides what is owed
    owed = [0] * (len(target) + 1)
    rewritten = [0] * (len(target) + 1)
    counted: set[int] = set()
    for i, (w, links) in enumerate(zip(words, pair.target_links, strict=True)):
        if w in dropped_words:
            dropped[i] = 1
            # a word dropped only to agree, or as the unchanged first part of a compound, is
            # written again, token for token ("Versionskontrollsystem-Werkzeuge" ->
            # "Versionskontrollsysteme")
            demand[i] += bool(links & comparison.unedited) or w not in changed_words
            if w in agreeing and w not in counted:
                counted.add(w)
                rewritten[i] += 1
    for s in range(len(pair.source)):
        if comparison.replaced >> s & 1:
            at = aligned.get(s)
            owed[min(at) if at else _boundary(pair, aligned, s, ends)] += 1
    closing = _closing(pair.source)
    for position, count in enumerate(comparison.inserted):
        if not count:
            continue
        if options.tail and count >= options.tail and position >= closing:
            owed[_closing(target)] += count
        else:
            owed[_boundary(pair, aligned, position, ends)] += count
    demand = [d + o for d, o in zip(demand, owed, strict=True)]
    # in kept coordinates: boundary b is before the b-th kept token; where words were dropped
    # and nothing is to be written, the margin still lets the model mend the seam
    gaps = [0] * (len(kept) + 1)
    seams = [0] * (len(kept) + 1)
    owed_at = [0] * (len(kept) + 1)
    rewritten_at = [0] * (len(kept) + 1)
    b = 0
    for i, need in enumerate(demand):
        while b < len(kept) and kept[b] < i:
            b += 1
        gaps[b] += need
        seams[b] += dropped[i]
        owed_at[b] += owed[i]
        rewritten_at[b] += rewritten[i]
    # no margin before a kept piece that goes on with a word (".*stift" less ".*" keeps
    # "stift"): whatever mends the seam there is glued to it ("penstift")
    room = [
        options.gap_scale * need + options.gap_margin
        if need or (seam and not (t is not None and continues_word(t)))
        else 0
        for need, seam, t in zip(gaps, seams, [*(target[i] for i in kept), None], strict=True)
    ]
    return MatchTemplate(
        tokens=tuple(target[i] for i in kept),
        gaps=tuple(room),
        positions=tuple(kept),
        segment_id=pair.segment_id,
        similarity=comparison.similarity,
        overrun=options.overrun,
        lookahead=options.lookahead,
        # a gap holds at least one token where tokens are owed, and one more for each word it
        # must write again: an article alone does not replace "das Dokument"
        least=tuple(
            min(size, int(o > 0) + r)
            for size, o, r in zip(room, owed_at, rewritten_at, strict=True)
        ),
    )


def _whole_compounds(target: Sequence[str], words: list[int], dropped: set[int]) -> set[int]:
    """`dropped` with every word of a hyphenated compound whose later part (its head) it holds:
    the parts of "Versionskontrollsystem-Werkzeuge" are words of their own (word_starts), but a
    compound is one word, and a first part left behind is glued by its hyphen to whatever the
    model writes for the new head ("Versionskontrollsystem-Systeme", "Hangul- nur"); the model
    writes the compound again whole. A compound whose first part alone changed keeps its head:
    the model writes a new first part before it ("Jessie-Veröffentlichungshinweise" ->
    "Bullseye-Veröffentlichungshinweise"), where a whole new compound is a name it may not
    know how to write."""
    firsts = compound_firsts(target)
    hit = {firsts[w] for w in dropped if w in firsts}
    return dropped | {w for w in set(words) if firsts.get(w, w) in hit}


def _agreeing(
    pair: AlignedPair,
    words: list[int],
    dropped_words: set[int],
    comparison: EditComparison,
    letters: int,
    modifiers: int = 0,
) -> set[int]:
    """The short kept words (a space-led word of at most `letters` letters) right before a
    word (with a letter) dropped for an edited source token: the words that agree with what the
    model writes there, or with what is left once it is gone. Before such a word that begins
    with a capital, the short word may stand up to `modifiers` kept space-led words in small
    letters earlier, which go with it (RepairOptions.modifiers)."""
    if letters <= 0:
        return set()
    edited = ((1 << len(pair.source)) - 1) & ~comparison.unedited
    text = _word_texts(pair.target, words)
    spaced = {
        w
        for i, (w, token) in enumerate(zip(words, pair.target, strict=True))
        if token.startswith(SENTENCEPIECE_SPACE) and (i == 0 or words[i - 1] != w)
    }
    changed = {
        w
        for w, links in zip(words, pair.target_links, strict=True)
        if w in dropped_words and links & edited and any(c.isalpha() for c in text[w])
    }

    def kept_word(v: int) -> bool:  # a kept space-led word of letters only
        return v in spaced and v not in dropped_words and text[v].isalpha()

    def short(v: int) -> bool:
        return kept_word(v) and len(text[v]) <= letters

    def small(v: int) -> bool:
        return kept_word(v) and text[v].islower()

    agreeing: set[int] = set()
    for w in changed:
        if short(w - 1):
            agreeing.add(w - 1)
        elif text[w][:1].isupper():
            between = list(itertools.takewhile(small, range(w - 1, w - 1 - modifiers, -1)))
            for v in between:
                if short(v - 1):
                    agreeing.update(range(v - 1, w))
                    break
    return agreeing


def _orphans(
    target: Sequence[str], words: list[int], links: Sequence[int], dropped_words: set[int]
) -> set[int]:
    """The unaligned words (with a letter or digit) inside a dropped stretch: the nearest
    aligned word on each side is dropped. The aligner links such a word to no source word
    ("dargestellt" of "sind ausführlicher dargestellt in Kapitel 5"), so no edit reaches it,
    and kept while the words around it go it stands alone ("dargestellt Kapitel 5" for
    "Chapter 5"). One that leads or closes the sentence stays ("um" before "das Dokument zu
    speichern"): with kept words on one side only, nothing says it belongs to those that go."""
    text = _word_texts(target, words)
    aligned = {w for w, link in zip(words, links, strict=True) if link}
    order = sorted(text)
    sides: list[bool | None] = []  # per word: whether the nearest aligned word before is dropped
    last: bool | None = None
    for w in order:
        sides.append(last)
        if w in aligned:
            last = w in dropped_words
    orphans: set[int] = set()
    after: bool | None = None
    for w, before in zip(reversed(order), reversed(sides), strict=True):
        if w in aligned:
            after = w in dropped_words
            continue
        if w in dropped_words or not any(c.isalnum() for c in text[w]):
            continue
        if before and after:
            orphans.add(w)
    return orphans


def _word_texts(target: Sequence[str], words: Sequence[int]) -> dict[int, str]:
    """Each word's text (word_numbers: word -> its tokens joined, space marks left out)."""
    text: dict[int, str] = {}
    for w, token in zip(words, target, strict=True):
        text[w] = text.get(w, "") + token.replace(SENTENCEPIECE_SPACE, "")
    return text


def _closing(tokens: Sequence[str]) -> int:
    """Where the marks that close `tokens` begin (len(tokens) where none do)."""
    end = len(tokens)
    while end and (is_mark(tokens[end - 1]) or tokens[end - 1] == SENTENCEPIECE_SPACE):
        end -= 1
    return end


def _aligned_targets(pair: AlignedPair) -> dict[int, list[int]]:
    """The target positions aligned to each aligned source position."""
    aligned: dict[int, list[int]] = {}
    for t, links in enumerate(pair.target_links):
        s = 0
        while links:
            if links & 1:
                aligned.setdefault(s, []).append(t)
            links >>= 1
            s += 1
    return aligned


def _boundary(
    pair: AlignedPair, aligned: dict[int, list[int]], position: int, ends: list[int]
) -> int:
    """Where in the match's target the translation of input tokens missing before source
    position `position` goes: after the word holding the target of the nearest aligned source
    token before it, else before that of the nearest one after it, else at the end."""
    for s in range(position - 1, -1, -1):
        if s in aligned:
            last = max(aligned[s])
            return next(end for end in ends if end > last)
    for s in range(position, len(pair.source)):
        if s in aligned:
            first = min(aligned[s])
            return max((end for end in [0, *ends] if end <= first), default=0)
    return len(pair.target)
