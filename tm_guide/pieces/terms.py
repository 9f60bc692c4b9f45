"""Glossary terms as translation pieces: the search is rewarded for writing them.

A glossary entry that applies to a sentence (tm_guide.text.glossary) gives its target term's
n-grams as pieces, scored `score` (eq. 8 scores are at most 1, so a score above 1 outweighs any
TM piece); the term's tokens join L_X. Each n-gram may be rewarded once, as a term is asked for
once. A repair template is dropped where it is asked to be (`keep_template` False): a repaired
TM target writes the TM's word, not the glossary's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tm_guide.pieces.builder import Ngram, TranslationPieces


def with_terms(
    found: TranslationPieces | None,
    source_tokens: Sequence[str],
    terms: Sequence[Sequence[str]],
    score: float,
    max_n: int = 4,
    keep_template: bool = True,
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
        template=base.template if keep_template else None,
    )


def _ngrams(tokens: Sequence[str], max_n: int) -> list[Ngram]:
    return [
        tuple(tokens[i : i + n])
        for n in range(1, min(max_n, len(tokens)) + 1)
        for i in range(len(tokens) - n + 1)
    ]
