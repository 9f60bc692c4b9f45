"""Guided MT for the protocols CAT tools already speak (LibreTranslate, ModernMT, DeepL).

Each protocol's blueprint parses its own request and shapes its own answer; what they translate
goes through `translate_texts`, which answers with `/v1/suggest`'s machinery (`suggest()`): the
same engine, lambda and piece rules, with the memories chosen by one rule (`memories_for`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flask import g, has_request_context

from tm_guide import languages
from tm_guide.errors import InvalidInput, NotFound, Unprocessable
from tm_guide.server.auth import Principal
from tm_guide.server.config import ProtocolOptions
from tm_guide.server.results import Suggestion
from tm_guide.server.sentences import worst_level as _worst
from tm_guide.server.services import Services
from tm_guide.server.suggestions import MemoryChoice, SegmentQuery, SuggestOptions, suggest
from tm_guide.server.translation import MTOptions, model_info


@dataclass(frozen=True)
class TextsToTranslate:
    """What a protocol asks for: texts in one language pair, the memories it names if any
    (ModernMT's `hints`: they replace the usual ones) and the glossaries it names (ModernMT's
    `glossaries`, DeepL's `glossary_id`: they guide beside the usual memories, as a glossary adds
    terms to a project's translation memory); `source_lang` None means "detect", which is the
    model's source."""

    texts: tuple[str, ...]
    target_lang: str
    source_lang: str | None = None
    memories: tuple[str | int, ...] = ()
    alternatives: int = 0
    glossaries: tuple[str | int, ...] = ()


@dataclass(frozen=True)
class Translated:
    text: str
    # other candidates, best first: the unguided translation and the closest TM targets
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class Translations:
    items: tuple[Translated, ...]
    source_lang: str  # the model's source tag (what "auto" detected)
    memories: tuple[str, ...]  # names of the memories whose pieces guided them
    # how decoding was cut down to meet the protocol's deadline (batching.DEGRADED_LEVELS)
    degraded: str | None = None


class UnsupportedLanguage(InvalidInput, code="unsupported_language"):
    """A language pair the model does not translate; each protocol says it its own way."""


def model_pair(services: Services) -> tuple[str, str]:
    """The language pair the loaded model translates (loading it if needed)."""
    info = model_info(services.translator())
    return str(info["source_lang"]), str(info["target_lang"])


def memories_for(
    services: Services,
    principal: Principal,
    pair: tuple[str, str],
    named: Sequence[str | int] = (),
    configured: Sequence[str] = (),
    glossaries: Sequence[str | int] = (),
) -> list[Any]:
    """The memories whose pieces guide a translation in `pair`: those the request names, else
    those the protocol is configured with, else every memory of the pair the key may read; and
    the glossaries the request names, beside whichever of these applies.

    A memory named by the request or the configuration must exist and be readable by the key,
    else NotFound, the same answer for both, naming only what was asked for, so that a key
    cannot probe for memories outside its scope; and it must serve the pair (Unprocessable).
    The scope rule never fails, it only picks.
    """
    store = services.store()
    chosen = named or configured
    found = []
    if not chosen:
        found = [
            m
            for m in store.list_memories()
            if principal.allows(m.name, "read")
            and languages.pair_matches((m.source_lang, m.target_lang), pair)
        ]
    for ref in dict.fromkeys([*chosen, *glossaries]):
        try:
            memory = store.get_memory(ref)
        except NotFound:
            memory = None
        if memory is None or not principal.allows(memory.name, "read"):
            asked = ref if isinstance(ref, int) else repr(ref)
            raise NotFound(f"memory {asked} does not exist", field="memories")
        if not languages.pair_matches((memory.source_lang, memory.target_lang), pair):
            raise Unprocessable(
                f"memory '{memory.name}' is {memory.source_lang}->{memory.target_lang}, "
                f"not {pair[0]}->{pair[1]}",
                field="memories",
            )
        if all(m.id != memory.id for m in found):
            found.append(memory)
    return found


def check_pair(services: Services, source_lang: str | None, target_lang: str) -> tuple[str, str]:
    """The request's pair, normalised, after checking that the model translates it (its card's
    pair; a multilingual model, any pair it has language tokens for)."""
    bundle = services.translator().bundle
    model_source, model_target = model_pair(services)
    source = model_source if source_lang in (None, "", "auto") else str(source_lang)
    served = (
        f"the {len(bundle.card.language_tokens)} languages of its model"
        if bundle.card.language_tokens
        else f"{model_source} -> {model_target}"
    )
    pair = []
    for tag, field in ((source, "source"), (target_lang, "target")):
        normalized = languages.normalize(tag, field=field)
        if not bundle.serves_language(normalized, field):
            raise UnsupportedLanguage(
                f"this server translates {served}; {field} language {tag!r} is not supported",
                field=field,
            )
        pair.append(normalized)
    return pair[0], pair[1]


def translate_texts(
    services: Services,
    principal: Principal,
    request: TextsToTranslate,
    options: ProtocolOptions,
) -> Translations:
    """The guided translation of every text, as /v1/suggest would give it.

    Blank texts come back blank without decoding; the rest go through one `suggest()` call, so a
    protocol's batch is decoded as one batch, to be done by the protocol's deadline (counted from
    when the request arrived); how it was degraded to meet it is kept in flask.g for the
    response's X-TM-Guide-Degraded header."""
    pair = check_pair(services, request.source_lang, request.target_lang)
    memories = memories_for(
        services, principal, pair, request.memories, options.memories, request.glossaries
    )
    named = {str(ref) for ref in request.glossaries}
    glossaries = [m for m in memories if m.name in named or str(m.id) in named]
    wanted = [i for i, text in enumerate(request.texts) if text.strip()]
    items = [Translated(text) for text in request.texts]
    degraded = None
    if wanted:
        suggest_options = SuggestOptions(
            memories=tuple(MemoryChoice(m.name) for m in memories),
            m=options.m,
            max_matches=request.alternatives,
            translate=True,
            mt=MTOptions(lam=options.lam, engine=options.engine, unguided=request.alternatives > 0),
            languages=pair,
            deadline=_deadline(options),
            glossaries=tuple(m.name for m in glossaries),
        )
        queries = [SegmentQuery(request.texts[i]) for i in wanted]
        answer = suggest(services, queries, suggest_options)
        for i, result in zip(wanted, answer.results, strict=True):
            items[i] = _translated(result, request.alternatives)
        degraded = _worst([t.degraded for t in answer.translations()])
        if degraded is not None and has_request_context():
            g.degraded = degraded
        terms = [term for t in answer.translations() for term in t.glossary]
        if terms and has_request_context():
            g.glossary_terms = terms
    return Translations(tuple(items), pair[0], tuple(m.name for m in memories), degraded)


def _deadline(options: ProtocolOptions) -> float | None:
    """When the protocol's answer is due: its deadline after the request arrived."""
    if not options.deadline_ms:
        return None
    started = g.get("started") if has_request_context() else None
    return (started or time.perf_counter()) + options.deadline_ms / 1000


def _translated(result: Suggestion, alternatives: int) -> Translated:
    translation = result.translation
    assert translation is not None  # asked with translate=True
    text = translation.text
    others: list[str] = []
    if alternatives:  # the guided translation first where a verbatim TM match took its place
        candidates = [translation.mt_text, translation.unguided]
        candidates += [match.target for match in result.matches]
        for candidate in candidates:
            if candidate and candidate != text and candidate not in others:
                others.append(candidate)
    return Translated(text, tuple(others[:alternatives]))


def require_text_list(value: Any, field: str, max_items: int, max_chars: int) -> tuple[str, ...]:
    """A protocol's text or list of texts, each a string within the segment limit."""
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts:
        raise InvalidInput(
            f"'{field}' must be a string or a non-empty list of strings", field=field
        )
    if len(texts) > max_items:
        raise InvalidInput(
            f"'{field}' has {len(texts)} texts; the limit is {max_items}", field=field
        )
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InvalidInput(f"'{field}[{i}]' must be a string", field=field)
        if len(text) > max_chars:
            raise InvalidInput(
                f"'{field}[{i}]' is {len(text)} characters long; the limit is {max_chars}",
                field=field,
            )
    return tuple(texts)
