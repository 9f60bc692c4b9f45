"""amaGama-compatible read endpoint, so Weblate's "tmserver" machine translation works unchanged.

GET /tmserver/<source_lang>/<target_lang>/unit/<text>?max_candidates=5&min_similarity=70 answers a
JSON list of {source, target, quality, rank}: quality is the fuzzy-match percentage (0-100), rank
the retrieval score, best first. It searches every memory of that language pair the caller may read
(language variants match: de_DE finds a `de` memory).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from server.api.common import services
from server.auth import LOCAL_USER, current_principal
from server.matching import match_percentage
from server.validation import int_arg
from tm_guide.errors import InvalidInput

blueprint = Blueprint("tmserver", __name__, url_prefix="/tmserver")


def _primary(tag: str) -> str:
    return tag.replace("_", "-").split("-", 1)[0].lower()


def _same_language(memory_lang: str, requested: str) -> bool:
    wanted = requested.replace("_", "-").lower()
    have = memory_lang.replace("_", "-").lower()
    return have == wanted or have == _primary(wanted) or _primary(have) == wanted


@blueprint.get("/<source_lang>/<target_lang>/unit/<path:text>")
def unit(source_lang: str, target_lang: str, text: str) -> Response:
    svc = services()
    principal = LOCAL_USER if svc.config.tmserver_anonymous else current_principal()
    limit = svc.config.limits.max_segment_chars
    if len(text) > limit:
        raise InvalidInput(
            f"the unit text is {len(text)} characters long; the limit is {limit}", field="text"
        )
    if "\ufffd" in text:
        raise InvalidInput("the unit text is not valid UTF-8", field="text")
    max_candidates = int_arg("max_candidates", 5, 1, 50)
    min_similarity = int_arg("min_similarity", 70, 0, 100)
    store = svc.store()
    memory_ids = [
        m.id
        for m in store.list_memories()
        if _same_language(m.source_lang, source_lang)
        and _same_language(m.target_lang, target_lang)
        and principal.allows(m.name, "read")
    ]
    if not memory_ids or not text.strip():
        return jsonify([])
    hits = store.search(memory_ids, text, limit=max(10, max_candidates * 2))
    units = []
    for hit in hits:
        quality = min(100, match_percentage(text, hit.segment.source))
        if quality >= min_similarity:
            units.append(
                {
                    "source": hit.segment.source,
                    "target": hit.segment.target,
                    "quality": quality,
                    "rank": round(float(hit.score), 4),
                }
            )
    units.sort(key=lambda u: (-u["quality"], -u["rank"]))
    return jsonify(units[:max_candidates])
