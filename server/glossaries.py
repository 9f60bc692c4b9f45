"""Glossaries a translation must follow.

A request names its glossaries (DeepL `glossary_id`, ModernMT `glossaries`, /v1 `glossaries`):
memories whose segments are term entries. Their entries are read once per memory revision and
kept, since a glossary is small and read by every request that names it. An entry that applies
to a sentence is enforced in two steps:

1. Where the translation holds the model's own translation of the source term (the term decoded
   alone: "file" -> "Datei"), that word is replaced by the glossary's ("Akte"). So is the source
   term left untranslated, or a word that spells it nearly (a name copied and bent: "Brasil"
   for Brazil, "Tanzanien" for Tanzania). The sentence around it stays the model's: rewarding
   the term instead draws it to wherever the reward is cheapest, often the start of the
   sentence.
2. A sentence still lacking a term (the model wrote an inflected or another word, or none) is
   decoded again under a template of its terms, which the search must write in the order they
   occur in the source, choosing where each goes and what surrounds it, with the terms' n-grams
   rewarded as pieces (tm_guide.pieces.terms.forced_terms). That translation is taken if it
   holds more of its terms and the model does not score it much worse (TERM_FORCE_MAX_LOSS);
   else the term is reported missing. A search only rewarded for the terms draws them to
   wherever the reward is cheapest ("Aktektekte den Ordner in die Akte." for "Move the folder
   to the file."), where the template lets the model place them ("Verschiebt den Ordner in die
   Akte.").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rapidfuzz import fuzz

from tm_guide.pieces.terms import forced_terms
from tm_guide.server.results import PieceUse, TermUse, Translation
from tm_guide.text.glossary import Glossary, Term, applied, code_spans

# The score of a glossary term's n-grams in the second search: that of a piece from an exact TM
# match (eq. 8 scores are at most 1), each n-gram rewarded once.
TERM_SCORE = 1.0
# The second search's translation is kept only if the model scores it at most this much below
# the first (length-normalised log-probability): where the model would put a term nowhere of
# its own accord, it puts it where it must, and may tack it on at the end ("... in externem
# »%s«-Wert Ungültige Adressen-Funktionen Wert"), which it scores far lower. On
# bench/glossary_bench.py (95 catalogues, 489 pairs; 94.1% held and 51.54 BLEU without the
# glossary): 0.3 held 97.3% (51.71 BLEU), 0.5 98.0% (51.57), 0.7 98.4% (51.39), 0.8 99.0%
# (51.19); a search rewarded for the terms instead of held to them held 96.9% (51.72) at 0.2.
TERM_FORCE_MAX_LOSS = 0.5
# a term's own translation longer than this many words is a sentence, not a word to swap
_MAX_OWN_WORDS = 4
# a word of the translation spells a one-word source term of NEAR_SOURCE_LETTERS or more
# nearly from this rapidfuzz ratio (0-100) up: "Brasil" for Brazil is 83, "Tanzanien" for
# Tanzania 82, "Streams" for stream 92; a German word is below ("sicheren" for secure 57). A
# short term is too near too many words to be told by spelling ("Daten" for date is 89).
NEAR_SOURCE_RATIO = 80.0
NEAR_SOURCE_LETTERS = 6

# the prop of a glossary entry (a segment of a glossary memory: /v1 `props`, a TMX <prop>) that
# says its term does not inflect: "no", "false" or "0"
INFLECT_PROP = "inflect"
_NO = frozenset({"no", "false", "0"})

_cache: dict[tuple[str, int, int], Glossary] = {}
_cache_lock = threading.Lock()
_CACHE_SIZE = 64


def glossary_of(store: Any, memories: Sequence[Any]) -> Glossary | None:
    """The entries of these glossary memories as one Glossary; None when there are none. One
    memory's Glossary is the one kept for its revision; several are joined for the request."""
    if not memories:
        return None
    kept = [_glossary(store, memory) for memory in memories]
    glossary = kept[0] if len(kept) == 1 else Glossary([e for g in kept for e in g.entries])
    return glossary or None


def _glossary(store: Any, memory: Any) -> Glossary:
    # the uuid too: a deleted memory's id (and revision) can come back with a new memory
    key = (str(memory.uuid), memory.id, memory.revision)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    glossary = Glossary(
        [Term(s.source, s.target, _inflects(s.props)) for s in store.iter_segments(memory)]
    )
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = glossary
    return glossary


def _inflects(props: dict[str, str]) -> bool:
    """Whether an entry's term may take an ending: unless its INFLECT_PROP says no."""
    value = props.get(INFLECT_PROP, "").strip().casefold()
    return value not in _NO


def term_pieces(
    translator: Any,
    texts: Sequence[str],
    collected: Sequence[Any],
    terms: Sequence[Sequence[Term]],
    score: float,
    options: Any,
) -> list[Any]:
    """Each sentence's pieces with its applying terms forced in (forced_terms: their n-grams
    rewarded, and a template of the terms in place of a repair's, whose TM target would write
    the TM's word, not the glossary's), each gap as long as the request's options let a whole
    output be. A sentence with a term that does not inflect keeps the word rules, so that no
    ending is glued to it."""
    out = []
    bundle = translator.bundle
    for text, found, wanted in zip(texts, collected, terms, strict=True):
        if not wanted:
            out.append(found)
            continue
        tokens = found.tokens if found is not None else bundle.encode_source(text)
        targets = [bundle.encode_target(term.target) for term in wanted]
        room = options.output_cap(len(tokens))
        exact = not all(term.inflects for term in wanted)
        out.append(forced_terms(found, tokens, targets, score, room, word_rules=exact))
    return out


class OwnTranslations:
    """The model's own translation of each source term, decoded once per term and kept."""

    SIZE = 4096

    def __init__(self) -> None:
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def of(
        self, sources: Sequence[str], translate: Callable[[list[str]], list[str]]
    ) -> dict[str, str]:
        """Each source term's own translation; `translate` decodes the ones not known yet."""
        with self._lock:
            unknown = sorted({s for s in sources if s not in self._known})
        if unknown:
            done = translate(unknown)
            with self._lock:
                if len(self._known) + len(unknown) > self.SIZE:
                    self._known.clear()
                self._known.update(zip(unknown, done, strict=True))
        with self._lock:
            return {s: self._known.get(s, "") for s in sources}


def swap_own_words(
    translation: Translation, terms: Sequence[Term], own: dict[str, str]
) -> Translation:
    """The translation with each missing term put in where the model wrote its own translation
    of the term, or left the source term untranslated (first occurrence, whole words, any
    case); piece spans after it move."""
    text = translation.text
    pieces = list(translation.pieces_used)
    for term in terms:
        if applied(term, text):
            continue
        word = own.get(term.source, "").strip().rstrip(".!?;:,").strip()
        candidates = [term.source]
        if word and len(word.split()) <= _MAX_OWN_WORDS:
            candidates.insert(0, word)
        found = None
        for candidate in candidates:
            found = _whole_word(candidate, text)
            if found is not None:
                break
        if found is None:
            found = _near_word(term.source, text)
        if found is None:
            continue
        start, end = found.start(), found.end()
        target = _cased_as(term.target, found.group(), at_start=start == 0)
        text = text[:start] + target + text[end:]
        pieces = [_moved(piece, start, end, len(target) - (end - start)) for piece in pieces]
    return translation.with_text(text, pieces)


def closed_compounds(translation: Translation, terms: Sequence[Term]) -> Translation:
    """The translation with a term that follows a hyphen and a space joined to the hyphen:
    a term forced in is a word of its own, so a compound it closes comes out "Locale- Name".
    German leaves a hyphen open before a space only where a conjunction follows ("Ein- und
    Ausgabe"), never a term the glossary asks for."""
    text = translation.text
    pieces = list(translation.pieces_used)
    for term in terms:
        pattern = r"(?<=\w-) (?=" + re.escape(term.target) + ")"
        while (found := re.search(pattern, text)) is not None:
            start, end = found.start(), found.end()
            text = text[:start] + text[end:]
            pieces = [_moved(piece, start, end, start - end) for piece in pieces]
    return translation.with_text(text, pieces)


def _whole_word(word: str, text: str) -> re.Match[str] | None:
    """The first occurrence of `word` in `text` as whole words, outside non-translatables and
    code (tm_guide.text.glossary.code_spans)."""
    spans = code_spans(text)
    for found in re.finditer(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE):
        if not _in_code(found, spans):
            return found
    return None


def _in_code(found: re.Match[str], spans: Sequence[tuple[int, int]]) -> bool:
    """Whether `found` overlaps one of the code spans of its text (code_spans)."""
    return any(start < found.end() and found.start() < end for start, end in spans)


def _near_word(source: str, text: str) -> re.Match[str] | None:
    """The word of `text` (outside code) that spells the one-word `source` most nearly, at
    NEAR_SOURCE_RATIO or more; None if none does, or the term has more than one word or fewer
    than NEAR_SOURCE_LETTERS letters."""
    source = source.strip()
    if not re.fullmatch(r"\w+", source) or len(source) < NEAR_SOURCE_LETTERS:
        return None
    spans = code_spans(text)
    best, best_ratio = None, NEAR_SOURCE_RATIO
    for found in re.finditer(r"\w+", text):
        if _in_code(found, spans):
            continue
        ratio = fuzz.ratio(found.group().casefold(), source.casefold())
        if ratio >= best_ratio and (best is None or ratio > best_ratio):
            best, best_ratio = found, ratio
    return best


def _cased_as(target: str, replaced: str, at_start: bool) -> str:
    """The glossary's target, capitalised where the word it replaces opens the sentence so."""
    if at_start and replaced[:1].isupper():
        return target[:1].upper() + target[1:]
    return target


def _moved(piece: PieceUse, start: int, end: int, delta: int) -> PieceUse:
    span = piece.span
    if span is None or span[1] <= start:
        return piece
    if span[0] >= end:
        return piece.moved(delta)
    return replace(piece, span=None)  # the replaced word was in it


def count_applied(terms: Sequence[Term], translation: str) -> int:
    return sum(applied(term, translation) for term in terms)


def terms_used(terms: Sequence[Term], translation: str) -> tuple[TermUse, ...]:
    return tuple(TermUse(term.source, term.target, applied(term, translation)) for term in terms)
