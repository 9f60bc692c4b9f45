"""Glossary terms as translation pieces: the search is rewarded for writing them.

A glossary entry that applies to a sentence (tm_guide.text.glossary) gives its target term's
n-grams as pieces, scored `score` (eq. 8 scores are at most 1, so a score above 1 outweighs any
TM piece); the term's tokens join L_X. Each n-gram may be rewarded once, as a term is asked for
once. A reward alone draws a term to wherever it is cheapest, so the terms are forced
(`forced_terms`): a template of the terms alone, which the search must write, in place of a
repair's template (a repaired TM target writes the TM's word, not the glossary's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tm_guide.pieces.builder import Ngram, TranslationPieces
from tm_guide.pieces.repair import MatchTemplate


def with_terms(
    found: TranslationPieces | None,
    source_tokens: Sequence[str],
    terms: Sequence[Sequence[str]],
    score: float,
    max_n: int = 4,
) -> TranslationPieces:
    """`found` (or no pieces at all) with every n-gram of each term's target tokens added."""
    base = found if found is not None else TranslationPieces(tokens=list(source_tokens))
    ngrams = dict(base.ngrams)
    # Limits say how often each piece is rewarded; a term's n-grams once each, or a term of
    # rewarded pieces is written over and over. Pieces without limits keep their own rule:
    # 2+ tokens once, single tokens every time (0).
    limits = dict(base.limits) or {gram: (1 if len(gram) > 1 else 0) for gram in ngrams}
    provenance = dict(base.provenance)
    unigrams = set(base.unigrams)
    for tokens in terms:
        unigrams.update(tokens)
        for gram in _ngrams(tokens, max_n):
            ngrams[gram] = max(score, ngrams.get(gram, 0.0))
            provenance.setdefault(gram, [])
            limits[gram] = max(1, limits.get(gram, 0))
    return replace(
        base,
        unigrams=frozenset(unigrams),
        ngrams=ngrams,
        limits=limits,
        provenance=provenance,
    )


def forced_terms(
    found: TranslationPieces | None,
    source_tokens: Sequence[str],
    terms: Sequence[Sequence[str]],
    score: float,
    room: int,
    word_rules: bool = False,
) -> TranslationPieces:
    """with_terms, and a template that makes the search write every term, in the order given,
    with up to `room` free tokens before, between and after them: the model still chooses
    where each goes and what surrounds it. `word_rules` (MatchTemplate.word_rules): whether a
    gap may not glue onto a term, which keeps a term that does not inflect from taking an
    ending; without them an inflecting term may take one."""
    pieces = with_terms(found, source_tokens, terms, score)
    tokens: list[str] = []
    gaps: list[int] = []
    for term in terms:
        tokens.extend(term)
        gaps.extend([room] + [0] * (len(term) - 1))
    gaps.append(room)
    template = MatchTemplate(
        tokens=tuple(tokens),
        gaps=tuple(gaps),
        positions=(),
        segment_id=None,
        similarity=0.0,
        word_rules=word_rules,
    )
    return replace(pieces, template=template)


def _ngrams(tokens: Sequence[str], max_n: int) -> list[Ngram]:
    return [
        tuple(tokens[i : i + n])
        for n in range(1, min(max_n, len(tokens)) + 1)
        for i in range(len(tokens) - n + 1)
    ]
