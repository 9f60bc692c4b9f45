"""Translation pieces for an input sentence (paper section 3.1): retrieve, compare, collect, score.

For X: the top-M TM pairs by BM25 over the source text; for each, the token edit script from X to
X^m gives eq. 9's similarity and the unedited positions W^m; Algorithm 1 collects the target n-grams
whose aligned source tokens all lie in W^m; eq. 8 scores each n-gram by the best similarity among
the pairs that yield it. The result (L_X, D_X, provenance) is what guided decoding consumes.

One rule beyond Algorithm 1 as printed: a pair with no unedited source token (W^m empty, so it
shares nothing usable with X) yields no pieces. Algorithm 1 alone would still collect the n-grams
made only of unaligned target tokens of such a pair; they carry no evidence about X (their eq. 9
score is 0 when the pair shares no token) and, under the 1/0 reward, would be rewarded like real
matches.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tm_guide.errors import InvalidInput
from tm_guide.pieces.align import MemoryAligner
from tm_guide.pieces.code_words import absorb_code_words
from tm_guide.pieces.collect import (
    AlignedPair,
    PieceTable,
    compare,
    compare_words,
    piece_counts,
)
from tm_guide.pieces.identifier_links import linked_in_order
from tm_guide.pieces.letter_case import absorb_case
from tm_guide.pieces.lookups import lookup_pieces, missing_words, translations
from tm_guide.pieces.names import absorb_names, written_as_is
from tm_guide.pieces.repair import (
    MatchTemplate,
    RepairOptions,
    match_template,
    word_similarity,
)
from tm_guide.pieces.tokenizer import Tokenizer, tokens_to_text
from tm_guide.pieces.weighting import PieceWeighting
from tm_guide.text.words import occurs_as_word

MAX_RETRIEVAL = 100
Ngram = tuple[str, ...]


# pairs retrieved for a word looked up alone: a code word (PieceOptions.code_word_lookups), a
# new name (names.py) or a word a repaired match lacks (PieceOptions.word_lookups)
ALONE_HITS = 5


@dataclass(frozen=True)
class PieceOptions:
    """m: TM pairs retrieved (1..100); min_similarity: pairs below this eq. 9 similarity are
    ignored; binary_reward: every piece scores 1 (the paper's 1/0 variant, section 4);
    max_n: longest piece (the paper uses 4); clipped: each piece, single tokens included, may
    be rewarded only as often as the TM pair it came from gives it (its occurrences in the
    target aligned to unedited source words only; used by the search when repeats are off;
    without it, pieces of 2+ tokens once and single tokens every time);
    weighting: how far a piece is trusted from its match's similarity (PieceWeighting);
    repair: when and how the best match's target is repaired instead (RepairOptions);
    whole_words: Algorithm 1 over words, not pieces: a target word with any piece aligned to
    an edited source token gives no piece (False: the paper's rule, piece by piece). With
    subword pieces the paper's rule rewards the pieces of a changed word that are aligned to
    unchanged source tokens, "ass ist enten" of "Funktionsassistenten" when "Function Wizard"
    becomes "Connection Type Wizard", and the model writes them into its new word
    ("Verbindungsistenten"); a part of a hyphenated compound that is linked to nothing goes
    with the compound ("E" of "E-Mail-Systems" when "Email" changed: "E-Systems");
    code_word_lookups: how many of the input's identifiers and names that no retrieved source
    holds are looked up alone in the memory, for what its targets call them
    (tm_guide.pieces.code_words; 0: none);
    word_lookups: how many of the input's words that a repaired match's source lacks are looked
    up alone, for the translation its other pairs give them (tm_guide.pieces.lookups; 0: none);
    word_share: the least share of a looked-up word's pairs that must give a translation for it
    to become a piece."""

    m: int = 10
    min_similarity: float = 0.0
    binary_reward: bool = False
    max_n: int = 4
    clipped: bool = False
    weighting: PieceWeighting = field(default_factory=PieceWeighting)
    repair: RepairOptions = field(default_factory=RepairOptions)
    whole_words: bool = True
    code_word_lookups: int = 3
    word_lookups: int = 5
    word_share: float = 0.4

    def __post_init__(self) -> None:
        if not 1 <= self.m <= MAX_RETRIEVAL:
            raise InvalidInput(f"m must be between 1 and {MAX_RETRIEVAL}, not {self.m}", field="m")
        if self.code_word_lookups < 0:
            raise InvalidInput("code_word_lookups must be >= 0", field="code_word_lookups")
        if self.word_lookups < 0:
            raise InvalidInput("word_lookups must be >= 0", field="word_lookups")
        if not 0.0 < self.word_share <= 1.0:
            raise InvalidInput(
                f"word_share must be in (0, 1], not {self.word_share}", field="word_share"
            )
        if not 0.0 <= self.min_similarity <= 1.0:
            raise InvalidInput(
                f"min_similarity must be between 0 and 1, not {self.min_similarity}",
                field="min_similarity",
            )
        if self.max_n < 1:
            raise InvalidInput(f"max_n must be at least 1, not {self.max_n}", field="max_n")


@dataclass
class FuzzyMatch:
    """One retrieved TM pair and how it compares with the input."""

    segment: Any
    similarity: float  # eq. 9 on tokens
    edit_distance: int
    retrieval_score: float  # BM25
    pieces: int  # n-grams this pair yielded (0 when below min_similarity)


@dataclass
class TranslationPieces:
    """G_X for one input: L_X (unigrams), D_X (n-gram -> eq. 8 score) and each piece's origin."""

    tokens: list[str]
    unigrams: frozenset[str] = frozenset()
    ngrams: dict[Ngram, float] = field(default_factory=dict)
    provenance: dict[Ngram, list[int]] = field(default_factory=dict)
    # with PieceOptions.clipped: the most times one TM pair gives each n-gram (piece_counts)
    limits: dict[Ngram, int] = field(default_factory=dict)
    matches: list[FuzzyMatch] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage
    # the best match's target to repair, when its similarity reaches PieceOptions.repair
    template: MatchTemplate | None = None

    def __bool__(self) -> bool:
        return bool(self.ngrams)


class PieceBuilder:
    """Collects translation pieces from a store's memories for inputs tokenized like the TM."""

    def __init__(
        self,
        store: Any,
        tokenizer: Tokenizer,
        options: PieceOptions | None = None,
        aligner: MemoryAligner | None = None,
        cache_size: int = 50000,
    ) -> None:
        self.store = store
        self.tokenizer = tokenizer
        self.options = options or PieceOptions()
        self.aligner = aligner or MemoryAligner(store, tokenizer)
        self._parsed = ParsedPairCache(cache_size)

    def collect(
        self,
        text_or_tokens: str | Sequence[str],
        memory_ids: Sequence[int],
        options: PieceOptions | None = None,
    ) -> TranslationPieces:
        """Pieces for one input: a plain string (tokenized with the source model) or its tokens."""
        options = options or self.options
        clock = time.perf_counter
        started = clock()
        if isinstance(text_or_tokens, str):
            text = text_or_tokens
            tokens = self.tokenizer.encode_source(text)
        else:
            tokens = list(text_or_tokens)
            text = tokens_to_text(tokens)
        result = TranslationPieces(tokens=tokens)
        tokenized = clock()
        hits = self.store.search(list(memory_ids), text, limit=options.m) if text.strip() else []
        retrieved = clock()
        pairs = self._aligned_pairs([hit.segment for hit in hits])
        analysed = clock()

        comparisons = [compare(tokens, pair.source) for pair in pairs]
        # a word looked up alone is searched once for the sentence, whichever rule asks for it
        # (an identifier no retrieved source holds is a code word and a word the match lacks)
        alone: Callable[[str], list[Any]] = functools.cache(
            lambda word: self.store.search(list(memory_ids), word, limit=ALONE_HITS)
        )
        # the matches with the code words the input changes changed too (code_words.py): what
        # their pieces and the repair work from; the matches as stored are what is reported
        absorbed = absorb_code_words(
            tokens,
            pairs,
            self.tokenizer.encode_source,
            self.tokenizer.encode_target,
            lambda missing: self._references(missing, hits, alone, options),
        )
        # and the names it replaces, where the memory writes the new one as it is (names.py)
        absorbed = absorb_names(
            tokens,
            absorbed,
            self.tokenizer.encode_source,
            self.tokenizer.encode_target,
            lambda word: _is_name(word, alone(word)),
        )
        # and, in the matches close enough to repair, the words it writes in another letter
        # case only (letter_case.py): a repair keeps their translations; a far match's pieces
        # gain little from them, and re-encoding every retrieved pair cost more than the rest
        # of the collection
        close = [i for i, c in enumerate(comparisons) if options.repair.applies(c.similarity)]
        if close:
            recased = absorb_case(
                tokens,
                [absorbed[i] for i in close],
                self.tokenizer.encode_source,
                self.tokenizer.encode_target,
                lambda small, word: _writes(small, hits) or _writes(small, alone(word)),
            )
            for i, pair in zip(close, recased, strict=True):
                absorbed[i] = pair
        taken = [
            comparison if new is pair else compare(tokens, new.source)
            for pair, new, comparison in zip(pairs, absorbed, comparisons, strict=True)
        ]
        compared = clock()

        table = PieceTable()
        for hit, pair, comparison, used in zip(hits, absorbed, comparisons, taken, strict=True):
            counts = piece_counts(
                used, pair, options.max_n, options.min_similarity, options.whole_words
            )
            ngrams = set(counts)
            score = (
                1.0 if options.binary_reward else options.weighting.weight(comparison.similarity)
            )
            table.add(ngrams, score, pair.segment_id)
            if options.clipped and counts:
                table.limit(counts)
            result.matches.append(
                FuzzyMatch(
                    segment=hit.segment,
                    similarity=comparison.similarity,
                    edit_distance=comparison.distance,
                    retrieval_score=hit.score,
                    pieces=len(ngrams),
                )
            )
        best = max(range(len(pairs)), key=lambda i: comparisons[i].similarity, default=None)
        if (
            best is not None
            and options.repair.applies(comparisons[best].similarity)
            and options.repair.shares(word_similarity(tokens, absorbed[best].source))
        ):
            # the repair edits words: its script is over them (compare_words)
            words = compare_words(tokens, absorbed[best].source, taken[best])
            result.template = match_template(absorbed[best], words, options.repair)
        if result.template is not None and best is not None and options.word_lookups:
            best_weight = (
                1.0
                if options.binary_reward
                else options.weighting.weight(comparisons[best].similarity)
            )
            self._look_up_words(
                tokens, absorbed[best].source, hits, alone, options, table, best_weight
            )
        result.ngrams = table.scores
        result.provenance = table.provenance
        result.limits = table.limits
        result.unigrams = table.unigrams()
        collected = clock()
        result.timings = {
            "tokenize": tokenized - started,
            "retrieval": retrieved - tokenized,
            "analysis": analysed - retrieved,
            "edit_distance": compared - analysed,
            "collection": collected - compared,
            "total": collected - started,
        }
        return result

    def _references(
        self,
        missing: list[str],
        hits: Sequence[Any],
        alone: Callable[[str], list[Any]],
        options: PieceOptions,
    ) -> list[AlignedPair]:
        """The pairs that say what a memory calls the input's identifiers and names that no
        retrieved source holds (`missing`): each looked up alone ("FLOOR", which a sentence on
        FLOOR.MATH retrieved only CEILING's pairs for; the help's page on FLOOR says
        "UNTERGRENZE")."""
        seen = {hit.segment.id for hit in hits}
        segments = []
        for word in missing[: options.code_word_lookups]:
            for hit in alone(word):
                if hit.segment.id not in seen:
                    seen.add(hit.segment.id)
                    segments.append(hit.segment)
        return self._aligned_pairs(segments) if segments else []

    def _look_up_words(
        self,
        tokens: Sequence[str],
        match_source: Sequence[str],
        hits: Sequence[Any],
        alone: Callable[[str], list[Any]],
        options: PieceOptions,
        table: PieceTable,
        weight: float,
    ) -> None:
        """Pieces for the input's words that the repaired match's source lacks, from the pairs
        a search for each word alone finds beyond those retrieved (tm_guide.pieces.lookups),
        each weighed as the match's own pieces are, times the share of those pairs holding the
        word that translate it so."""
        seen = {hit.segment.id for hit in hits}
        for word in missing_words(tokens, match_source)[: options.word_lookups]:
            found = [hit.segment for hit in alone(word.text) if hit.segment.id not in seen]
            if not found:
                continue
            looked = self._aligned_pairs(found)
            said, asked = translations(word, looked)
            if not asked:
                continue
            found_pieces = lookup_pieces(said, asked, options.max_n, options.word_share)
            for gram, (share, segment_id) in found_pieces.items():
                table.add({gram}, weight * share, segment_id)
                if options.clipped:
                    table.limit({gram: 1})

    def _aligned_pairs(self, segments: Sequence[Any]) -> list[AlignedPair]:
        """Parsed pairs for the retrieved segments; segments without a current alignment (new, or
        analysed under another tokenizer) are aligned now, against their memory's priors."""
        stale = [segment for segment in segments if not self.aligner.is_current(segment)]
        fresh = self.aligner.align_segments(stale) if stale else {}
        pairs = []
        for segment in segments:
            analysis = fresh.get(segment.id)
            if analysis is not None:
                pairs.append(
                    parsed_pair(
                        segment.id,
                        analysis.source_tokens,
                        analysis.target_tokens,
                        analysis.alignment,
                    )
                )
            else:
                pairs.append(self._parsed.get(segment))
        return pairs


def parsed_pair(
    segment_id: int, source: Sequence[str], target: Sequence[str], alignment: Sequence[Any]
) -> AlignedPair:
    """A segment's analysis as the pieces read it: its AlignedPair, the names in capitals of
    both sides linked in order (identifier_links), once as it is parsed."""
    return linked_in_order(AlignedPair.build(segment_id, source, target, alignment))


class ParsedPairCache:
    """Recently used segments as ready-made AlignedPairs (an LRU), so a popular TM segment is not
    re-parsed for every query.

    The key holds what can change a segment's analysis: its id, texts, tokenizer, aligner and
    number of links. A realignment in another process that keeps the link count can serve the
    previous (equally valid) alignment of the same tokens until the entry ages out.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._pairs: OrderedDict[tuple[Any, ...], AlignedPair] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, segment: Any) -> AlignedPair:
        key = (
            segment.id,
            segment.tokenizer_id,
            segment.aligner_id,
            segment.source,
            segment.target,
            len(segment.alignment),
        )
        with self._lock:
            pair = self._pairs.get(key)
            if pair is not None:
                self._pairs.move_to_end(key)
                return pair
        pair = parsed_pair(
            segment.id, segment.source_tokens, segment.target_tokens, segment.alignment
        )
        if self.size > 0:
            with self._lock:
                self._pairs[key] = pair
                if len(self._pairs) > self.size:
                    self._pairs.popitem(last=False)
        return pair


def _writes(word: str, hits: Sequence[Any]) -> bool:
    """Whether a target of `hits` holds `word` as a word, in its case."""
    return any(occurs_as_word(word, hit.segment.target) for hit in hits)


def _is_name(word: str, hits: Sequence[Any]) -> bool:
    """Whether the memory writes `word` as it is wherever a pair found for it holds it."""
    return written_as_is(word, [(hit.segment.source, hit.segment.target) for hit in hits])
