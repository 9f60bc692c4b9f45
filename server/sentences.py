"""Decoding a request's sentences: TM pieces collected in the request's own thread (so that a
segment added just before is seen), the search shared with concurrent requests
(tm_guide.server.batching), done by the protocol's deadline, and a glossary's terms put in
(tm_guide.server.glossaries).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tm_guide.matching import match_percentage
from tm_guide.server.batching import DEGRADED_LEVELS
from tm_guide.server.config import Compute
from tm_guide.server.glossaries import (
    TERM_FORCE_MAX_LOSS,
    TERM_SCORE,
    OwnTranslations,
    closed_compounds,
    count_applied,
    swap_own_words,
    term_pieces,
    terms_used,
)
from tm_guide.server.results import Timing, Translation
from tm_guide.server.services import Services
from tm_guide.server.translation import collect_pieces_until, translations_of
from tm_guide.text.glossary import Glossary, Term, all_applied
from tm_guide.text.placeholders import kept

# the model's own translation of glossary terms, kept for every request of this process
OWN_TRANSLATIONS = OwnTranslations()
# a TM target stands in for a translation not decoded in time from this similarity (eq. 9) up
TM_ONLY_MIN_SIMILARITY = 0.5
# Of the time left before a deadline, the share that collecting TM pieces may take: on a loaded
# server retrieval, not decoding, is what runs late (32 Weblate batches of 20 strings on 2 cores:
# 0.46 s of wall time per sentence in retrieval, 8 ms in decoding); a sentence not reached by
# then is decoded without pieces, which costs next to nothing.
RETRIEVAL_SHARE = 0.6
# a long sentence with a match of this CAT percentage or more is translated whole, not clause by
# clause: a clause matches no TM sentence, and the match's repair needs the whole sentence
CLOSE_MATCH = 50


@dataclass(frozen=True)
class Decoded:
    """Per sentence: its translation, the pieces it was decoded with (their fuzzy matches too),
    and its stage timings."""

    translations: list[Translation]
    pieces: list[Any]
    timings: list[Timing]


@dataclass(frozen=True)
class SentenceDecoder:
    """What every decoding of one request shares: the model, its options, the names of the
    memories its pieces come from, its deadline (time.perf_counter() seconds; None: none), the
    glossary whose terms it must use and how long past the deadline a sentence answered from
    the memory may still be looked up (Compute.tm_only_grace_ms, in seconds)."""

    services: Services
    translator: Any
    mt_options: Any
    names: dict[int, str]
    deadline: float | None = None
    glossary: Glossary | None = None
    tm_only_grace_s: float = Compute.tm_only_grace_ms / 1000

    def has_close_match(self, text: str) -> bool:
        """Whether the request's memories hold a match of `text` of CLOSE_MATCH percent or more
        (a sentence to repair whole rather than clause by clause)."""
        memory_ids = list(self.mt_options.memory_ids)
        if not memory_ids:
            return False
        hits = self.services.store().search(memory_ids, text, limit=self.mt_options.pieces.m)
        return any(match_percentage(text, hit.segment.source) >= CLOSE_MATCH for hit in hits)

    def _may_look_up(self) -> bool:
        """Whether a sentence answered from the memory may still be looked up in the index:
        up to tm_only_grace_s past the request's deadline (if any)."""
        if self.deadline is None:
            return True
        return time.perf_counter() < self.deadline + self.tm_only_grace_s

    def decode(self, texts: list[str]) -> Decoded:
        """The sentences' pieces collected (retrieval gets RETRIEVAL_SHARE of the time left),
        then decoded, the glossary's terms put in (_follow_glossary)."""
        if not texts:
            return Decoded([], [], [])
        stop_at = None
        if self.deadline is not None:
            now = time.perf_counter()
            stop_at = now + RETRIEVAL_SHARE * max(0.0, self.deadline - now)
        slots = self.services.retrieval_slots
        with slots if slots is not None else contextlib.nullcontext():
            collected, skipped = collect_pieces_until(
                self.translator, texts, self.mt_options, stop_at
            )
        decoded = self.search(texts, list(collected), skipped)
        if self.glossary:
            terms = [self.glossary.terms_in(text) for text in texts]
            if any(terms):
                self._follow_glossary(texts, collected, terms, decoded)
        return decoded

    def search(
        self, texts: list[str], pieces: list[Any], skipped: int = 0, in_time: bool = True
    ) -> Decoded:
        """The sentences decoded with their pieces; `in_time`: by the deadline
        (tm_guide.server.batching). `skipped` sentences had their retrieval cut."""
        services, translator, options = self.services, self.translator, self.mt_options
        prepared = translator.prepare(texts, options, pieces)
        deadline = self.deadline if in_time else None
        decoded = services.decoder().translate(prepared, options, deadline)
        if skipped and decoded.degraded != "tm-only":
            decoded = replace(decoded, degraded="unguided")
        if decoded.degraded is not None:
            services.metrics.degraded.labels(level=decoded.degraded).inc()
        if decoded.degraded == "tm-only":
            return Decoded(
                [
                    _tm_only(text, collected, services, options, self._may_look_up())
                    for text, collected in zip(texts, pieces, strict=True)
                ],
                pieces,
                [stage_timings(collected, 0.0, decoded.queued_s) for collected in pieces],
            )
        services.metrics.batch_sentences.observe(decoded.batch_sentences)
        results = translator.finish(prepared, decoded.results, options)
        done = translations_of(translator, results, services.store(), self.names, pieces)
        return Decoded(
            [replace(translation, degraded=decoded.degraded) for translation, _ in done],
            pieces,
            [
                stage_timings(collected, decoding_ms, decoded.queued_s)
                for collected, (_, decoding_ms) in zip(pieces, done, strict=True)
            ],
        )

    def _follow_glossary(
        self,
        texts: list[str],
        collected: list[Any],
        terms: list[list[Term]],
        decoded: Decoded,
    ) -> None:
        """The glossary's terms put into the decoded records (tm_guide.server.glossaries: the
        model's own word swapped, else a second search that must write them), each translation
        listing its terms in `glossary`."""
        done, options = decoded.translations, self.mt_options
        decodable = [i for i, t in enumerate(done) if t.degraded != "tm-only"]

        def alone(sources: list[str]) -> list[str]:
            found = self.search(sources, [None] * len(sources), in_time=False)
            return [translation.text for translation in found.translations]

        own = OWN_TRANSLATIONS.of([t.source for i in decodable for t in terms[i]], alone)
        for i in decodable:
            if terms[i]:
                done[i] = swap_own_words(done[i], terms[i], own)
        missing = [i for i in decodable if not all_applied(terms[i], done[i].text)]
        if missing:
            pieces = term_pieces(
                self.translator,
                [texts[i] for i in missing],
                [collected[i] for i in missing],
                [terms[i] for i in missing],
                TERM_SCORE,
                options,
            )
            again = self.search([texts[i] for i in missing], pieces, in_time=False)
            for k, i in enumerate(missing):
                forced = swap_own_words(again.translations[k], terms[i], own)
                forced = closed_compounds(forced, terms[i])
                before = done[i]
                if (
                    count_applied(terms[i], forced.text) > count_applied(terms[i], before.text)
                    and forced.model_score >= before.model_score - TERM_FORCE_MAX_LOSS
                ):
                    done[i] = forced
                    decoded.timings[i] = decoded.timings[i] + again.timings[k]
        for i, wanted in enumerate(terms):
            done[i] = replace(done[i], glossary=terms_used(wanted, done[i].text))


def _tm_only(
    text: str, collected: Any, services: Services, mt_options: Any, lookup: bool
) -> Translation:
    """The translation of a sentence not decoded in time: the target of its closest TM match,
    when that is close and keeps the sentence's non-translatables; else the sentence itself. A
    sentence whose pieces were not collected is looked up in the index alone where `lookup`
    (SentenceDecoder._may_look_up)."""
    record = replace(Translation.verbatim(text), degraded="tm-only")
    if collected is not None:
        candidates = [(m.similarity, m.segment) for m in collected.matches]
    elif mt_options.memory_ids and lookup:
        hits = services.store().search(list(mt_options.memory_ids), text, limit=1)
        candidates = [(match_percentage(text, h.segment.source) / 100, h.segment) for h in hits]
    else:
        candidates = []
    if not candidates:
        return record
    similarity, segment = max(candidates, key=lambda candidate: candidate[0])
    if similarity >= TM_ONLY_MIN_SIMILARITY and kept(text, segment.target):
        record = replace(record, text=segment.target, best_match_similarity=round(similarity, 4))
    return record


def worst_level(levels: Sequence[str | None]) -> str | None:
    """The lowest of the levels its sentences were decoded at (None: all as asked)."""
    ranked = [level for level in levels if level is not None]
    return max(ranked, key=DEGRADED_LEVELS.index) if ranked else None


def stage_timings(pieces: Any, decoding_ms: float, queued_s: float) -> Timing:
    """Retrieval and piece collection as the piece builder measured them, the wait for the
    decoding thread, then decoding (this sentence's share of its engine call)."""
    retrieval = pieces_ms = 0.0
    if pieces is not None:
        retrieval_s = pieces.timings.get("retrieval", 0.0)
        retrieval = round(retrieval_s * 1000, 3)
        pieces_ms = round((pieces.timings.get("total", 0.0) - retrieval_s) * 1000, 3)
    return Timing(
        retrieval=retrieval,
        pieces=pieces_ms,
        queue=round(queued_s * 1000, 3),
        decoding=decoding_ms,
    )
