"""Names a close match takes over: a capitalised word of its source that its target writes as it
is, replaced in the input by another that the memory also writes as it is.

"Setting Up Munin" repaired from "Setting Up Nagios" -> "Nagios einrichten" left the model a gap
for the new name, and it wrote "Setze Munin einrichten"; "The Evolution email software" from
KMail's caption became "Das E-Mail-Programm von Evolution". A translator replaces the name and
touches nothing else. The code-word rules (code_words.py) do that for names with a capital
inside (OpenType -> OpenPGP), but a plain capitalised word is as often an English noun that a
German target happens to write as it is ("Hyperlinks einfügen", "Den Server konfigurieren"):
"Inserting Pictures" must not become "Pictures einfügen". So the new word must be one the memory
never translates: every pair of it that holds the word writes it as it is in its target, or none
holds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from tm_guide.pieces.code_words import Word, rebuilt
from tm_guide.pieces.collect import AlignedPair
from tm_guide.pieces.tokenizer import SENTENCEPIECE_SPACE

# a capitalised word of letters (three or more), standing alone: not part of a hyphened or
# dotted word, not a word in capitals (an identifier: code_words.py)
_CAPITALISED = re.compile(r"(?<![\w.-])[A-ZÄÖÜ][a-zäöüß]{2,}(?![\w-])")
_WORD = re.compile(r"[^\W_]+(?:[-.][^\W_]+)*")


def absorb_names(
    query: Sequence[str],
    pairs: Sequence[AlignedPair],
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
    is_name: Callable[[str], bool],
) -> list[AlignedPair]:
    """Each pair with the capitalised word of its source that `query` (tokens) replaces by
    another replaced on both sides, where its target writes it as it is once and `is_name`
    says the new one is a name (what the memory writes as it is); the pair itself where there
    is none."""
    query_text = "".join(query)
    capitalised = frozenset(_CAPITALISED.findall(query_text))
    if not capitalised:
        return list(pairs)
    return [
        _absorbed(query_text, capitalised, pair, encode_source, encode_target, is_name)
        for pair in pairs
    ]


def _absorbed(
    query_text: str,
    capitalised: frozenset[str],
    pair: AlignedPair,
    encode_source: Callable[[str], list[str]],
    encode_target: Callable[[str], list[str]],
    is_name: Callable[[str], bool],
) -> AlignedPair:
    if not any(SENTENCEPIECE_SPACE in token for token in pair.source):
        return pair
    source_text, target_text = "".join(pair.source), "".join(pair.target)
    # most pairs replace no name by another: tell them apart before any diff (a word that the
    # input lacks and the target writes as it is, and a word of the input the source lacks)
    own = frozenset(_CAPITALISED.findall(source_text))
    if not (capitalised - own) or not (own - capitalised) & set(_CAPITALISED.findall(target_text)):
        return pair
    old_words = list(_WORD.finditer(source_text))
    new_words = list(_WORD.finditer(query_text))
    a, b = [m.group() for m in old_words], [m.group() for m in new_words]
    source_edits: list[tuple[Word, str]] = []
    target_edits: list[tuple[Word, str]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        old, new = old_words[i1], new_words[j1].group()
        if not (_CAPITALISED.fullmatch(old.group()) and _CAPITALISED.fullmatch(new)):
            continue
        if new in a:
            continue
        written = [m for m in _CAPITALISED.finditer(target_text) if m.group() == old.group()]
        if len(written) != 1 or not is_name(new):
            continue
        source_edits.append((Word(old.start(), old.end(), old.group(), "name"), new))
        at = written[0]
        target_edits.append((Word(at.start(), at.end(), at.group(), "name"), new))
    if not source_edits:
        return pair
    return rebuilt(pair, source_edits, target_edits, encode_source, encode_target)


def written_as_is(word: str, pairs: Sequence[tuple[str, str]]) -> bool:
    """Whether a memory's `pairs` (source and target texts, found for `word`) write `word` as it
    is: at least one source holds it, and every one that does has a word of its target start
    with it ("Mozilla-Software", "Mozillas"). Case counts: "evolution" in a source is a noun,
    not the name "Evolution"."""
    held = re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])")
    written = re.compile(rf"(?<![^\W_]){re.escape(word)}")
    holding = [target for source, target in pairs if held.search(source)]
    return bool(holding) and all(written.search(target) for target in holding)
