"""amaGama/tmserver read endpoint, so Weblate's "tmserver" (and "amaGama") service works unchanged.

GET /tmserver/<source_lang>/<target_lang>/unit/<text>?max_candidates=5&min_similarity=70 answers a
JSON list of {source, target, context, quality, rank}, best first:

- `quality` is amaGama's: character-level Levenshtein similarity in percent
  (`tm_guide.matching.amagama_quality`), which is what Weblate's threshold of 75 is meant for;
  `rank` is the retrieval score.
- It reads every memory of that language pair the caller may read (tags match by
  `tm_guide.languages`: de_DE finds a `de` memory, zh_CN never a zh-TW one), or the memories
  TM_GUIDE_TMSERVER_MEMORIES names; a pair stored in several memories comes back once.
- The text is everything after `/unit/`: newlines, leading, trailing and lone slashes included.
- `max_candidates` and `min_similarity` are clamped as amaGama does (1..50, 0..100; a value that
  is not a whole number is the default), never refused.

Weblate's tmserver setting is a URL and nothing more, so a key can ride in the path:
`/tmserver/key/<token>/...`. The server's own access log redacts it; a proxy in front logs it
unless told not to (see server/README.md).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from flask.blueprints import BlueprintSetupState
from werkzeug.routing import BaseConverter

from tm_guide import languages
from tm_guide.errors import InvalidInput
from tm_guide.matching import amagama_quality
from tm_guide.server.api.common import services
from tm_guide.server.auth import LOCAL_USER, Principal, authenticate, current_principal
from tm_guide.server.protocol import Protocol
from tm_guide.store.types import SearchHit

blueprint = Blueprint("tmserver", __name__, url_prefix="/tmserver")

MAX_CANDIDATES = (1, 5, 50)  # lowest, default, highest
MIN_SIMILARITY = (0, 70, 100)
# BM25 candidates looked at per answer: a character-level match can rank low on words
RETRIEVED_PER_CANDIDATE = 6
MIN_RETRIEVED = 30


class AnyText(BaseConverter):
    """The rest of the path, whatever it holds: newlines and slashes too (Werkzeug's `path`
    matches neither a newline nor a leading slash)."""

    regex = r"[\s\S]*"
    part_isolating = False


@blueprint.record_once
def _register_converter(state: BlueprintSetupState) -> None:
    state.app.url_map.converters.setdefault("anytext", AnyText)


UNIT = "/<source_lang>/<target_lang>/unit/<anytext:text>"


@blueprint.get(UNIT, merge_slashes=False, strict_slashes=False)
def unit(source_lang: str, target_lang: str, text: str) -> Response:
    svc = services()
    principal = LOCAL_USER if svc.config.tmserver_anonymous else current_principal()
    return _answer(principal, source_lang, target_lang, text)


@blueprint.get("/key/<token>" + UNIT, merge_slashes=False, strict_slashes=False)
def unit_with_key(token: str, source_lang: str, target_lang: str, text: str) -> Response:
    principal = authenticate(lambda: token, "the key in the path is empty")
    return _answer(principal, source_lang, target_lang, text)


def _path_is_utf8() -> bool:
    """Whether the path's bytes are UTF-8: Werkzeug decodes invalid bytes to U+FFFD, which a
    client may also send as itself (EF BF BD); WSGI's PATH_INFO keeps the bytes (as latin-1)."""
    try:
        request.environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8")
    except UnicodeError:
        return False
    return True


def _clamped(name: str, bounds: tuple[int, int, int]) -> int:
    low, default, high = bounds
    try:
        value = int(request.args.get(name, ""))
    except ValueError:
        return default
    return min(high, max(low, value))


def _answer(principal: Principal, source_lang: str, target_lang: str, text: str) -> Response:
    svc = services()
    limit = svc.config.limits.max_segment_chars
    if len(text) > limit:
        raise InvalidInput(
            f"the unit text is {len(text)} characters long; the limit is {limit}", field="text"
        )
    if "\ufffd" in text and not _path_is_utf8():
        raise InvalidInput("the unit text is not valid UTF-8", field="text")
    pair = (
        languages.normalize(source_lang, field="source_lang"),
        languages.normalize(target_lang, field="target_lang"),
    )
    max_candidates = _clamped("max_candidates", MAX_CANDIDATES)
    min_similarity = _clamped("min_similarity", MIN_SIMILARITY)
    if not text.strip():
        return jsonify([])
    memory_ids = [m.id for m in _readable_memories(principal, pair)]
    if not memory_ids:
        return jsonify([])
    retrieved = max(MIN_RETRIEVED, max_candidates * RETRIEVED_PER_CANDIDATE)
    store = svc.store()
    hits = store.search(memory_ids, text, limit=retrieved)
    if not hits:  # a text without indexed words ("/", "%s") can still be stored verbatim
        hits = [SearchHit(s, 0.0) for s in store.same_source(memory_ids, text, retrieved)]
    return jsonify(_units(text, hits, min_similarity)[:max_candidates])


def _readable_memories(principal: Principal, pair: tuple[str, str]) -> list[Any]:
    configured = set(services().config.protocols.tmserver.memories)
    return [
        m
        for m in services().store().list_memories()
        if (not configured or m.name in configured)
        and principal.allows(m.name, "read")
        and languages.pair_matches((m.source_lang, m.target_lang), pair)
    ]


def _units(text: str, hits: list[Any], min_similarity: int) -> list[dict[str, Any]]:
    """One unit per distinct (source, target) pair, wherever it is stored, at its best."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for hit in hits:
        segment = hit.segment
        quality = amagama_quality(text, segment.source)
        if quality < min_similarity:
            continue
        key = (segment.source, segment.target)
        unit = {
            "source": segment.source,
            "target": segment.target,
            "context": segment.context or "",
            "quality": quality,
            "rank": round(float(hit.score), 4),
        }
        if key not in best or (quality, unit["rank"]) > (best[key]["quality"], best[key]["rank"]):
            best[key] = unit
    return sorted(best.values(), key=lambda u: (-u["quality"], -u["rank"], u["source"]))


class TmServer(Protocol):
    name = "tmserver"
    blueprint = blueprint


PROTOCOL = TmServer()
