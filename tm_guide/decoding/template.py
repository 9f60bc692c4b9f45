"""A target template: the output a close TM match allows, as a constraint on the beam search.

Repairing a close match means keeping what its target says about the unchanged part of the
source and letting the model write only what changed. The template holds the kept target tokens
in order and, before each of them and after the last, how many free tokens the model may put
there (its gaps). A hypothesis is in state (k, g): k template tokens produced, g free tokens in the
current gap. On the next token u:

* u = tokens[k] (k < K) is allowed once the gap holds its `least[k]` free tokens and moves to
  (k + 1, 0); a gap the model owes words (the source changed there) holds at least one, or the
  model may leave it empty and drop what changed ("Ausgewählte %s" for "Export selected %s");
* any other token except </s> is allowed while g < gaps[k] and moves to (k, g + 1), except the
  words the template writes next (`ahead[k]`): a gap that writes them copies them ("das Werkzeug
  dieses Werkzeug");
* a token that continues a word is not allowed first in a gap after a template token that is
  part of a word or closes a bracket or a quotation (`joins[k]`, `glues_on`; after other
  punctuation such a token starts a word, as "11" in "13.11"): a kept word is the match's own,
  and a piece glued to it writes "diedatei" where the match had "die Videodatei", or "(Rad)s
  Winkel" after a bracket;
* once the gap is spent (g >= gaps[k]) but the word the model is writing is not finished (g > 0),
  a token that continues a word (`continues`: no word-start mark) is allowed for up to
  `overrun` more tokens and moves to (k, g + 1): a gap is sized in tokens, a word is not, and
  cutting the model off mid-word writes "den s." where it meant "den Start."; past that, a
  byte piece that continues a character (`continues` code CHARACTER) is still allowed, since a
  gap that ends inside a character leaves no valid UTF-8 way on (tm_guide.decoding.utf8); but
  with no free token in the gap (g = 0) only the template's next token is: after a kept lead
  byte it is the character's own next byte ("¶" is <0xC2> <0xB6>), and a free one there ("©")
  would leave the kept byte a stray that no UTF-8 way on allows;
* where the rule makes the model write on after a free token (a gap that still owes a token,
  or a spent gap's overrun), a token that continues a word is allowed only while the model
  gives the tokens that do not start a word at least the probability of those that do
  (OPEN_WORD, `holds_word`): forced on, a model denied the new word it wants glues pieces
  onto the word it has finished, "des" + "inhalts" where it meant "des Inhalts", "in" + "m"
  where a gap owed two tokens;
* </s> is allowed only once every template token is produced (k = K) and the last gap holds
  its least.

A forbidden token gets the log-probability -inf before the candidates are ranked, and a candidate
with the total -inf never closes a hypothesis (it only fills the beam, as a dead row). The model's
own log-probabilities are what the search scores, so the gap a hypothesis fills is judged by how
well the kept tokens after it follow. A piece the template holds (an n-gram of its tokens)
rewards only the template's next token, and that only once the gap before it holds a free token
(or has no room): in a gap it would pay for writing the template's words twice, and before an
empty gap for leaving it empty. The automaton is one rule, here and in the compiled search
(csrc/search.h), and the tests hold the two to each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from tm_guide.errors import InvalidInput
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.pieces.words import is_mark, word_spans

# codes of `continues`: a token that starts a word, one that continues it, and a byte piece
# that continues a character (UTF-8 0x80-0xBF)
WORD_START, WORD, CHARACTER = 0, 1, 2
# a bit of RowMask.classes past the codes: WORD only while the model holds the word open
OPEN_WORD = 3
MAX_CHARACTER_TAIL = 3  # continuation bytes of one UTF-8 character
State = tuple[int, int]
START: State = (0, 0)


ALL_CLASSES = (1 << WORD_START) | (1 << WORD) | (1 << CHARACTER)


@dataclass(frozen=True)
class RowMask:
    """The tokens one row may produce: those whose word mark (`continues` code) is a bit of
    `classes`, less `deny`, plus `allow` (kept at the row's own log-probability). With the bit
    OPEN_WORD, the class WORD counts only where `word_open` holds for the row, which leaves out
    the token `end` (</s>; -1: none)."""

    classes: int = ALL_CLASSES
    deny: tuple[int, ...] = ()
    allow: tuple[int, ...] = ()
    end: int = -1

    def apply(self, log_probs: np.ndarray, continues: np.ndarray | None) -> None:
        """Set every token the mask forbids to -inf (one row, in place); without word marks a
        class rule allows every token or none."""
        kept = log_probs[list(self.allow)].copy()
        classes = self.classes
        if (
            continues is not None
            and classes >> OPEN_WORD & 1
            and not word_open(log_probs, continues, self.end)
        ):
            classes &= ~(1 << WORD)
        if classes == 0:
            log_probs[:] = -np.inf
        elif classes != ALL_CLASSES and continues is not None:
            log_probs[((classes >> continues) & 1) == 0] = -np.inf
        if self.deny:
            log_probs[list(self.deny)] = -np.inf
        log_probs[list(self.allow)] = kept


def word_open(log_probs: np.ndarray, continues: np.ndarray, end: int = -1) -> bool:
    """Whether the model, by one row of its log-probabilities, would rather go on with the word
    it is writing than start a new one: the tokens that do not start a word (`continues` code
    WORD or CHARACTER) hold at least the probability of those that do (sums in float64). The
    token `end` (</s>) counts on neither side: ending the output is not a new word, and a model
    that finds a word's first part a likely end ("LXDE-Arbeit") must still finish the word."""
    p = np.exp(log_probs.astype(np.float64))
    if end >= 0:
        p[end] = 0.0
    starts = continues == WORD_START
    return bool(p[~starts].sum() >= p[starts].sum())


@dataclass(frozen=True)
class TargetTemplate:
    """Kept target token ids and the free tokens allowed before each one (gaps[K]: after the
    last); `continues` codes the vocabulary's tokens (WORD_START, WORD, CHARACTER: see
    repair.continuation_mask; None: every token starts a word), whose continuations may finish
    a word for `overrun` tokens past a spent gap."""

    tokens: tuple[int, ...]
    gaps: tuple[int, ...]
    continues: np.ndarray | None = field(default=None, compare=False, repr=False)
    overrun: int = 0
    # per template token: the tokens the gap before it may not write (ahead_of)
    ahead: tuple[tuple[int, ...], ...] = ()
    # per gap: the free tokens it must hold (empty: none)
    least: tuple[int, ...] = ()
    # per gap: whether the template token before it is part of a word, which a token that
    # continues a word would be glued to (empty: none is)
    joins: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        if not self.tokens:
            raise InvalidInput("a target template needs at least one token", field="template")
        if len(self.gaps) != len(self.tokens) + 1:
            raise InvalidInput("a target template needs one gap per token and one after them")
        if any(g < 0 for g in self.gaps) or self.overrun < 0:
            raise InvalidInput("a template's gaps and overrun must be >= 0", field="template")
        if self.ahead and len(self.ahead) != len(self.gaps):
            raise InvalidInput("a template needs one lookahead per gap", field="template")
        if self.joins and len(self.joins) != len(self.gaps):
            raise InvalidInput("a template needs one join per gap", field="template")
        if self.least and (
            len(self.least) != len(self.gaps)
            or any(not 0 <= m <= g for m, g in zip(self.least, self.gaps, strict=True))
        ):
            raise InvalidInput("a template needs one least per gap, within it", field="template")

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[str],
        gaps: Sequence[int],
        token_to_id: Mapping[str, int],
        continues: np.ndarray | None = None,
        overrun: int = 0,
        lookahead: int = 0,
        least: Sequence[int] = (),
    ) -> TargetTemplate | None:
        """The template over vocabulary ids; None when a kept token is outside the vocabulary
        (the model could never produce it). `lookahead`: how many of the template's next words
        a gap may not write (ahead_of)."""
        ids = tuple(token_to_id.get(token, -1) for token in tokens)
        if not ids or -1 in ids:
            return None
        ahead = ahead_of(tokens, ids, lookahead) if lookahead > 0 else ()
        joins = (False,) + tuple(glues_on(token) for token in tokens)
        return cls(
            ids,
            tuple(int(g) for g in gaps),
            continues,
            overrun,
            ahead,
            tuple(int(m) for m in least),
            joins if continues is not None else (),
        )

    @property
    def longest(self) -> int:
        """The longest output the template allows, </s> not counted."""
        overruns = (
            sum(self.overrun + MAX_CHARACTER_TAIL for g in self.gaps if g > 0)
            if self.continues is not None
            else 0
        )
        return len(self.tokens) + sum(self.gaps) + overruns

    def check(self, vocab_size: int, end_id: int) -> None:
        if any(not 0 <= t < vocab_size or t == end_id for t in self.tokens):
            raise InvalidInput(
                "a template token is outside the vocabulary or is </s>", field="template"
            )
        if self.continues is not None and self.continues.shape != (vocab_size,):
            raise InvalidInput(
                "a template's word marks must cover the vocabulary", field="template"
            )

    def mask(self, state: State, log_probs: np.ndarray, end_id: int) -> None:
        """Set the log-probabilities of the tokens `state` forbids to -inf (one row, in place)."""
        self.row_mask(state, end_id).apply(log_probs, self.continues)

    def row_mask(self, state: State, end_id: int) -> RowMask:
        """The tokens `state` allows, as a RowMask over this template's word marks: the one
        statement of the rule, which the host applies to a row (`mask`) and an engine that
        ranks on its device applies there (tm_guide.decoding.candidates)."""
        k, g = state
        if g < self.gaps[k]:
            deny: list[int] = []
            classes = ALL_CLASSES
            if k < len(self.tokens):
                deny.append(end_id)
            if self.ahead:
                deny.extend(self.ahead[k])
            if g == 0 and self.joins and self.joins[k] and self.continues is not None:
                classes = 1 << WORD_START
            if g < self.least_at(k):
                deny.append(self.tokens[k] if k < len(self.tokens) else end_id)
            if self.holds_word(state):
                classes |= 1 << OPEN_WORD
            return RowMask(classes, tuple(deny), (), end_id)
        allowed = self.tokens[k] if k < len(self.tokens) else end_id
        if self.continues is None or g == 0:
            classes = 0  # right after a template token only the next one: it ends its character
        elif self.finishing_word(state):
            classes = (ALL_CLASSES & ~(1 << WORD_START)) | (1 << OPEN_WORD)
        else:
            classes = 1 << CHARACTER
        return RowMask(classes, (), (allowed,), end_id)

    def holds_word(self, state: State) -> bool:
        """Whether the rule makes the model write on at `state` after a free token (the gap
        still owes one, or its overrun finishes a word), so that a token continuing the word
        is allowed only while the model holds the word open (OPEN_WORD)."""
        k, g = state
        if self.continues is None or g == 0:
            return False
        return g < self.least_at(k) if g < self.gaps[k] else self.finishing_word(state)

    def finishing_word(self, state: State) -> bool:
        """Whether `state` (its gap spent) may still continue the word the model is writing."""
        k, g = state
        return self.continues is not None and 0 < g < self.gaps[k] + self.overrun

    def advance(self, state: State, token: int) -> State:
        """The state after producing `token` (an allowed one, not </s>)."""
        k, g = state
        if k < len(self.tokens) and token == self.tokens[k] and g >= self.least_at(k):
            return (k + 1, 0)
        return (k, g + 1)

    def least_at(self, k: int) -> int:
        """The free tokens the gap before template token k must hold."""
        return self.least[k] if self.least else 0

    def next_token(self, state: State) -> int:
        """The template token `state` may produce next; -1 once all are produced."""
        return self.tokens[state[0]] if state[0] < len(self.tokens) else -1

    def rewarded_next(self, state: State) -> int:
        """The template token the pieces it holds reward in `state`: its next one, once the gap
        before it holds a free token or where it has no gap (-1 otherwise): leaving a gap empty
        earns nothing, or the search would leave every gap empty for the reward after it."""
        k, g = state
        return self.next_token(state) if g > 0 or self.gaps[k] == 0 else -1

    def grams(self, max_n: int) -> frozenset[tuple[int, ...]]:
        """The n-grams (n <= max_n) of the kept tokens, as one run: pieces the template writes
        anyway, which a free token in a gap is not rewarded for (it would write them twice)."""
        return _grams(self.tokens, max_n)

    def follow(self, output: Sequence[int]) -> list[int | None]:
        """For each token of an output decoded under the template, the index of the template
        token it is (None for a free token)."""
        state = START
        which: list[int | None] = []
        for token in output:
            k = state[0]
            state = self.advance(state, token)
            which.append(k if state[0] > k else None)
        return which


# marks after which a word never goes on without a space: closing brackets and quotation marks
_CLOSING = frozenset(")]}»”’›")


def glues_on(token: str) -> bool:
    """Whether a token that continues a word, written right after `token`, would be glued to it:
    `token` is part of a word, or ends in a closing bracket or quotation mark ("(Rad)s")."""
    return not is_mark(token) or token[-1] in _CLOSING


def ahead_of(
    tokens: Sequence[str], ids: Sequence[int], lookahead: int
) -> tuple[tuple[int, ...], ...]:
    """For the gap before each template token (and after the last): the first tokens of the
    next `lookahead` template words after that token, where the word has four letters or more
    (a content word: "die ... die" is German, "Werkzeug ... Werkzeug" a copy) and its first
    token three ("▁Lib" of "LibreOffice", which a gap wrote again and cut: "LibreOffi –
    LibreOffice"; a shorter one, "▁Ge", starts too many other words), less the token itself,
    which the gap's end writes anyway."""
    starts = [
        a
        for a, b in word_spans(tokens)
        if tokens[a].startswith(SENTENCEPIECE_SPACE)
        and _letters(tokens[a]) >= 3
        and sum(_letters(t) for t in tokens[a:b]) >= 4
    ]
    ahead = []
    for k in range(len(tokens) + 1):
        following = [i for i in starts if i > k][:lookahead]
        ahead.append(tuple(sorted({ids[i] for i in following} - {ids[k] if k < len(ids) else -1})))
    return tuple(ahead)


def _letters(token: str) -> int:
    return sum(c.isalpha() for c in token)


@lru_cache(maxsize=256)
def _grams(tokens: tuple[int, ...], max_n: int) -> frozenset[tuple[int, ...]]:
    return frozenset(
        tokens[i : i + n]
        for i in range(len(tokens))
        for n in range(1, max_n + 1)
        if i + n <= len(tokens)
    )
