"""LibreTranslate's API under /libretranslate, answered with tm-guide's guided translation.

Clients (Weblate's LibreTranslate service, libretranslatepy, editor plugins) are pointed at
`http://host:port/libretranslate/`:

- `POST /translate`: `q` (a string or a list), `source` (a tag, or `auto` for the model's source
  language: no detection is done), `target`, `format` (`text`, or `html`: translated whole, its
  tags placed by the model, entities kept), `alternatives` (0-3: the unguided translation and
  the closest TM targets), `api_key`; as JSON or as a form.
- `GET /languages`: the model's two languages, the source listing the target.

The key in `api_key` is a tm-guide API key; its memory scope picks the memories whose pieces guide
the translation (TM_GUIDE_LIBRETRANSLATE_MEMORIES overrides it). Errors are LibreTranslate's
`{"error": message}`: 400 for bad input or an unsupported language, 403 for a missing or wrong
key, 404, 413 and 500 as usual.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from tm_guide import languages
from tm_guide.server.api.common import services
from tm_guide.server.auth import authenticate
from tm_guide.server.document import protocol_arguments
from tm_guide.server.machine_translation import (
    TextsToTranslate,
    model_pair,
    require_text_list,
    translate_texts,
)
from tm_guide.server.markup import translate_markup
from tm_guide.server.protocol import Protocol
from tm_guide.server.validation import request_arguments

PREFIX = "/libretranslate"
blueprint = Blueprint("libretranslate", __name__, url_prefix=PREFIX)


@blueprint.post("/translate")
def translate() -> Response:
    args = request_arguments()
    principal = authenticate(
        lambda: args.get("api_key") if isinstance(args.get("api_key"), str) else None,
        "an API key is required: send it as 'api_key'",
    )
    args = protocol_arguments(args)  # types, required fields and ranges: the document's
    svc = services()
    limits = svc.config.limits
    texts = require_text_list(args["q"], "q", limits.max_batch_size, limits.max_segment_chars)
    source, target = args["source"], args["target"]
    text_format = args.get("format") or "text"
    alternatives = args.get("alternatives") or 0
    options = svc.config.protocols.libretranslate

    def run(chunk: list[str], alternatives: int = 0) -> Any:
        wanted = TextsToTranslate(tuple(chunk), target, source, alternatives=alternatives)
        return translate_texts(svc, principal, wanted, options)

    if text_format == "html":
        translated = translate_markup(list(texts), lambda chunk: [t.text for t in run(chunk).items])
        outputs: list[tuple[str, tuple[str, ...]]] = [(text, ()) for text in translated]
        detected = model_pair(svc)[0]
    else:
        result = run(list(texts), alternatives)
        outputs = [(item.text, item.alternatives) for item in result.items]
        detected = result.source_lang
    return jsonify(
        _answer(args["q"], outputs, alternatives, detected if source == "auto" else None)
    )


def _answer(
    q: Any, outputs: list[tuple[str, tuple[str, ...]]], alternatives: int, detected: str | None
) -> dict[str, Any]:
    single = isinstance(q, str)
    body: dict[str, Any] = {}
    texts = [text for text, _ in outputs]
    body["translatedText"] = texts[0] if single else texts
    if alternatives:
        others = [list(alt) for _, alt in outputs]
        body["alternatives"] = others[0] if single else others
    if detected is not None:
        # no detection is done: "auto" is the model's source language
        one = {"confidence": 100.0, "language": detected}
        body["detectedLanguage"] = one if single else [one] * len(outputs)
    return body


@blueprint.get("/languages")
def languages_view() -> Response:
    """Public, as LibreTranslate's is: the model's pair, nothing about the memories."""
    source, target = model_pair(services())
    return jsonify(
        [
            {"code": source, "name": languages.display_name(source), "targets": [target]},
            {"code": target, "name": languages.display_name(target), "targets": []},
        ]
    )


class LibreTranslate(Protocol):
    name = "libretranslate"
    blueprint = blueprint

    def error_body(
        self, status: int, code: str, message: str, field: str | None
    ) -> tuple[int, Any]:
        """LibreTranslate's error JSON; it has no 401 (a key problem is 403) and no 422."""
        status = {401: 403, 422: 400}.get(status, status)
        return status, {"error": message}


PROTOCOL = LibreTranslate()
