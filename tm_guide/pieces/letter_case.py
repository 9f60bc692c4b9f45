"""Words a close match writes in another letter case than the input: not an edit.

"Comparison operators" against the memory's "Comparison Operators" is the same text to a
translator, and "Vergleichsoperatoren" its translation; but the tokens differ ("▁operators",
"▁Operators"), so eq. 9 counts an edit, the repair drops the word's translation and the model
writes it again, often worse. English title case is the usual cause, and German writes its
nouns with a capital either way. So a pair whose source writes one of the input's words in
another case has it written as the input writes it, before pieces and the repair are taken from
it; its target stays as it is.

One case changes the target too: the match's first word, capitalised because it began the
sentence, written small in the input because something now comes before it ("Choose File -
Save As" -> "Open a document and choose File - Save As"). The target's first word, aligned to
it, was capitalised for the same reason ("Wählen Sie Datei"), and mid-sentence German writes
it small ("und wählen Sie Datei") where it is not a noun. The memory says which: the word is
written small where the retrieved targets write it so ("wählen"), and kept ("Datei") where they
never do. A word that gains a capital by becoming the input's first keeps the target's words
for it where they are capitalised too (German nouns); a small one is left as an edit, for the
model to write at the head of the sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from tm_guide.pieces.code_words import Word, rebuilt
from tm_guide.pieces.collect import AlignedPair
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE
from tm_guide.pieces.words import covering

# a run of letters and digits: the parts of "Lex-compatible" are words of their own, so that
# "LEX-compatible" differs from it in one word, which the target writes as it is
_WORD = re.compile(r"[^\W_]+")


def absorb_case(
    query: Sequence[str],
    pairs: Sequence[AlignedPair],
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
    written: Callable[[str, str], bool],
) -> list[AlignedPair]:
    """Each pair with the words of its source that `query` (tokens) writes in another case
    written as `query` writes them, and its target's first word written small where that word
    was the source's first and `written(small, word)` says the memory writes it small (where
    the input's `word` is translated); the pair itself where no word differs in case only."""
    query_words = list(_WORD.finditer("".join(query)))
    # the input's words in any case, and as it writes them
    folded = {m.group().casefold() for m in query_words}
    exact = {m.group() for m in query_words}
    return [
        _absorbed(query_words, folded, exact, pair, encode_source, encode_target, written)
        for pair in pairs
    ]


def _absorbed(
    query_words: list[re.Match[str]],
    folded: set[str],
    exact: set[str],
    pair: AlignedPair,
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
    written: Callable[[str, str], bool],
) -> AlignedPair:
    if not any(SENTENCEPIECE_SPACE in token for token in pair.source):
        return pair
    source_text = "".join(pair.source)
    old_words = list(_WORD.finditer(source_text))
    # most pairs hold no word of the input in another case: tell them apart before any diff
    if not any(m.group().casefold() in folded and m.group() not in exact for m in old_words):
        return pair
    a = [m.group().casefold() for m in old_words]
    b = [m.group().casefold() for m in query_words]
    # the words that lead each sentence: the first with a letter (a heading's number comes
    # before it)
    old_first, new_first = _first_lettered(a), _first_lettered(b)
    target_text = "".join(pair.target)
    source_edits: list[tuple[Word, str]] = []
    target_edits: list[tuple[Word, str]] = []
    for i1, j1, size in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(size):
            old, new = old_words[i1 + k], query_words[j1 + k].group()
            if old.group() == new:
                continue
            if i1 + k == old_first and j1 + k != new_first and old.group()[0] != new[0]:
                if new[0].isupper():
                    continue  # a capital the word lost by no longer leading: the model's
                edit = _first_target_word(pair, old, new, written)
                if edit is not None:
                    target_edits.append(edit)
            elif j1 + k == new_first and i1 + k != old_first and new[0] != old.group()[0]:
                # a capital gained by leading the input: the target's words for it stay as
                # they are where they have one too (German nouns: "Email basics" ->
                # "Basics of SSH" keeps "Grundlagen"); a small one ("anderer" for "other")
                # is the model's to write at the sentence's head
                if any(word[0].islower() for word in _target_words(pair, old)):
                    continue
            else:
                # a word the target writes as it is ("Lex-kompatibler") takes the input's case
                # there too ("LEX-compatible" -> "LEX-kompatibler"), where it gains a capital:
                # a German noun that spells the English word ("Export Dialog" -> "Dialog
                # exportieren") keeps its capital in "Export dialog"
                held = [m for m in _WORD.finditer(target_text) if m.group() == old.group()]
                if len(held) == 1 and any(c.isupper() for c in new):
                    at = held[0]
                    target_edits.append((Word(at.start(), at.end(), at.group(), "case"), new))
            source_edits.append((Word(old.start(), old.end(), old.group(), "case"), new))
    if not source_edits:
        return pair
    return rebuilt(pair, source_edits, target_edits, encode_source, encode_target)


def _target_words(pair: AlignedPair, source_word: re.Match[str]) -> list[str]:
    """The words of the target (runs of letters and digits) with a token aligned to a token of
    `source_word`."""
    bits = _source_bits(pair, source_word)
    return [
        m.group()
        for m in _WORD.finditer("".join(pair.target))
        if any(pair.target_links[t] & bits for t in covering(pair.target, m))
    ]


def _source_bits(pair: AlignedPair, source_word: re.Match[str]) -> int:
    """The mask of the source tokens that hold a character of `source_word`."""
    return sum(1 << s for s in covering(pair.source, source_word))


def _first_lettered(words: Sequence[str]) -> int:
    """The index of the first of `words` that holds a letter (-1 where none does)."""
    return next((i for i, word in enumerate(words) if any(c.isalpha() for c in word)), -1)


def _first_target_word(
    pair: AlignedPair,
    source_word: re.Match[str],
    new: str,
    written: Callable[[str, str], bool],
) -> tuple[Word, str] | None:
    """The target's first word written small, where it translates `source_word` (the source's
    first, `new` in the input), starts with a capital and `written` says the memory writes it
    small."""
    target_text = "".join(pair.target)
    first = _WORD.search(target_text)
    if first is None or not first.group()[0].isupper():
        return None
    small = first.group()[0].lower() + first.group()[1:]
    source_bits = _source_bits(pair, source_word)
    linked = any(pair.target_links[t] & source_bits for t in covering(pair.target, first))
    if not linked or not written(small, new):
        return None
    return Word(first.start(), first.end(), first.group(), "case"), small
