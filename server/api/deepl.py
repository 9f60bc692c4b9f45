"""DeepL's API (v2) under /deepl, answered with tm-guide's guided translation.

Clients are pointed at `http://host:port/deepl/`: the official `deepl` libraries take it as
`server_url` (with the trailing slash: they resolve `v2/translate` against it), Weblate's DeepL
service as its API URL `http://host:port/deepl/v2`. The key is a tm-guide API key, sent as
`Authorization: DeepL-Auth-Key <key>` (or, as DeepL's legacy clients do, `auth_key` in the form
or query string); its memory scope picks the memories whose pieces guide the translation
(TM_GUIDE_DEEPL_MEMORIES overrides it). Parameters come from the query string and a form or a
JSON body, whichever the client sends.

- `POST /v2/translate`: `text` (a list, a string, or the form field repeated), `target_lang`
  (DeepL's codes, `DE`, `EN-GB`, `PT-BR`, `ZH-HANS`, in any case), `source_lang` (left out: the
  model's source language, given back as `detected_source_language`; nothing is detected),
  `tag_handling` `xml` or `html` (the text between tags is translated, the tags kept) with
  `ignore_tags` (elements whose content is kept as it is), `show_billed_characters`, and
  `glossary_id` (a glossary made here, which is a memory: its pieces guide too). `formality`
  `more` or `less` is 400, as DeepL answers it for a target without formality (no target here
  has it; `prefer_*` falls back); `model_type` is answered with `model_type_used` (one model
  serves every kind). Accepted and ignored: `context`, `split_sentences`,
  `preserve_formatting`, `outline_detection`, `splitting_tags`,
  `non_splitting_tags`, `tag_handling_version`, `glossary_ids`, `custom_instructions`.
- `GET|POST /v2/languages?type=source|target`: the model's two languages (targets with
  `supports_formality` false).
- `GET|POST /v2/usage`: the characters this key had translated by this worker process since it
  started (per worker, kept in memory); the limit is never reached.
- Glossaries are tm-guide memories: `POST /v2/glossaries` (TSV or CSV entries) creates a memory
  of the model's pair named as the glossary (a name that is already such a glossary gets the
  entries merged in); its entries are aligned by a background import job (`/v1/jobs`). It
  needs write on every memory, as creating any memory does; `GET /v2/glossaries`,
  `GET|DELETE /v2/glossaries/{id}`, `GET /v2/glossaries/{id}/entries` list, show, delete and
  export those the key may read.
  `GET /v2/glossary-language-pairs` lists the model's pair to keys that may create glossaries
  and nothing to others, so that Weblate does not try to upload a glossary with a key that may
  not.

Errors are DeepL's `{"message": ...}`: 400 for bad input or an unsupported language, 403 for a
missing or wrong key (DeepL has no 401) or a missing right, 404, 413 and 500. No 456 (quota).
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request

from tm_guide import languages
from tm_guide.errors import Forbidden, InvalidInput, NotFound, Unauthorized
from tm_guide.formats.glossary import glossary_rows
from tm_guide.records import SegmentRecord
from tm_guide.server.api.common import services
from tm_guide.server.api.jobs import align_in_background
from tm_guide.server.auth import ALL_MEMORIES, Principal, authenticate
from tm_guide.server.document import protocol_arguments
from tm_guide.server.machine_translation import (
    TextsToTranslate,
    check_pair,
    model_pair,
    require_text_list,
    translate_texts,
)
from tm_guide.server.markup import translate_markup
from tm_guide.server.protocol import Protocol
from tm_guide.server.validation import request_arguments
from tm_guide.store import check_memory_fields

PREFIX = "/deepl"
blueprint = Blueprint("deepl", __name__, url_prefix=PREFIX)
USAGE = "tm_guide.deepl_usage"
CHARACTER_LIMIT = 1_000_000_000_000
# the description of a glossary made through /deepl/v2/glossaries (its kind is "glossary")
GLOSSARY_DESCRIPTION = "DeepL glossary (created through /deepl/v2/glossaries)"
_TAG_NAME = re.compile(r"^[A-Za-z_][\w.:-]*$")


class UsageCounter:
    """Characters translated per API key name, in this worker process since it started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, key: str, characters: int) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + characters

    def count(self, key: str) -> int:
        with self._lock:
            return self._counts.get(key, 0)


def _usage() -> UsageCounter:
    counter: UsageCounter = current_app.extensions[USAGE]
    return counter


# ---- requests ----------------------------------------------------------------------------------


def _principal(args: dict[str, Any]) -> Principal:
    def token() -> str | None:
        header = request.headers.get("Authorization", "").strip()
        if header:
            scheme, _, key = header.partition(" ")
            if scheme.lower() == "deepl-auth-key" and key.strip():
                return key.strip()
            raise Unauthorized("Authorization header must be 'DeepL-Auth-Key <key>'")
        legacy = args.get("auth_key")
        return (legacy.strip() or None) if isinstance(legacy, str) else None

    return authenticate(
        token, "an API key is required: send the header 'Authorization: DeepL-Auth-Key <key>'"
    )


def _formality(formality: str | None) -> None:
    """No target here has formality (`supports_formality` false): `more` and `less` are refused
    as DeepL refuses them for such a target; `prefer_*` falls back to the default silently."""
    if formality is not None and formality.lower() in ("more", "less"):
        raise InvalidInput(
            "'formality' is not supported for given 'target_lang'.", field="formality"
        )


def _flag(args: dict[str, Any], name: str) -> bool:
    """A boolean the document has checked: true, 1, "1" or "true" (read in lower case)."""
    value = args.get(name)
    return value is True or (not isinstance(value, bool) and value in (1, "1", "true"))


def _tag_names(args: dict[str, Any], name: str) -> list[str]:
    """Tag names as a list of strings, each of which may hold several comma-separated (the
    document checks the types; the names are checked here)."""
    value = args.get(name)
    if value is None or value == "":
        return []
    items = [value] if isinstance(value, str) else value  # the document: strings only
    names = [tag.strip() for item in items for tag in item.split(",") if tag.strip()]
    for tag in names:
        if not _TAG_NAME.match(tag):
            raise InvalidInput(f"Parameter '{name}': {tag!r} is not a tag name.", field=name)
    return names


def _code(tag: str) -> str:
    """DeepL's spelling of a language tag: upper case (`EN`, `PT-BR`, `ZH-HANS`)."""
    return tag.upper()


# ---- translation -------------------------------------------------------------------------------


@blueprint.post("/v2/translate")
def translate() -> Response:
    args = request_arguments()
    principal = _principal(args)
    # types, required fields and choices: the document's DeepLTranslateRequest; `context` is
    # accepted and ignored, `auth_key` is the legacy key field (a string even beside the header)
    args = protocol_arguments(args)
    svc = services()
    limits = svc.config.limits
    texts = require_text_list(args["text"], "text", limits.max_batch_size, limits.max_segment_chars)
    target = args["target_lang"]
    source = args.get("source_lang") or None
    tag_handling = args.get("tag_handling")
    ignore_tags = _tag_names(args, "ignore_tags")
    billed = _flag(args, "show_billed_characters")
    _formality(args.get("formality"))
    model_type = args.get("model_type")
    glossary_id = args.get("glossary_id") or None
    options = svc.config.protocols.deepl

    glossaries: tuple[str, ...] = ()
    if glossary_id is not None:
        glossaries = (_glossary(glossary_id, principal).name,)

    def run(chunk: list[str]) -> list[str]:
        wanted = TextsToTranslate(tuple(chunk), target, source, glossaries=glossaries)
        return [item.text for item in translate_texts(svc, principal, wanted, options).items]

    if tag_handling is not None:
        outputs = translate_markup(list(texts), run, ignore_tags)
    else:
        outputs = run(list(texts))
    _usage().add(principal.name, sum(len(text) for text in texts))
    detected = _code(model_pair(svc)[0])
    translations = []
    for text, output in zip(texts, outputs, strict=True):
        one: dict[str, Any] = {"detected_source_language": detected, "text": output}
        if billed:
            one["billed_characters"] = len(text)
        if model_type is not None:  # one model serves every kind: the kind asked for, as used
            one["model_type_used"] = model_type.lower().removeprefix("prefer_")
        translations.append(one)
    return jsonify({"translations": translations})


# ---- languages and usage -----------------------------------------------------------------------


@blueprint.route("/v2/languages", methods=["GET", "POST"])
def languages_view() -> Response:
    args = request_arguments()
    _principal(args)
    # the document's DeepLLanguagesRequest: the POST's body, the GET's query string
    kind = protocol_arguments(args, method="POST").get("type") or "source"
    source, target = model_pair(services())
    if kind == "source":
        return jsonify([{"language": _code(source), "name": languages.display_name(source)}])
    return jsonify(
        [
            {
                "language": _code(target),
                "name": languages.display_name(target),
                "supports_formality": False,
            }
        ]
    )


@blueprint.route("/v2/usage", methods=["GET", "POST"])
def usage() -> Response:
    """The characters this key had translated by this worker process since it started."""
    principal = _principal(request_arguments())
    return jsonify(
        {"character_count": _usage().count(principal.name), "character_limit": CHARACTER_LIMIT}
    )


# ---- glossaries (memories) ---------------------------------------------------------------------


def _glossary_id(memory: Any) -> str:
    return str(uuid.UUID(memory.uuid)) if memory.uuid else str(memory.id)


def _is_glossary(memory: Any) -> bool:
    return bool(memory.kind == "glossary")


def _glossaries(principal: Principal) -> list[Any]:
    store = services().store()
    return [
        m for m in store.list_memories() if _is_glossary(m) and principal.allows(m.name, "read")
    ]


def _glossary(glossary_id: str, principal: Principal) -> Any:
    """The glossary memory with this id that the key may read (404 for any other)."""
    for memory in _glossaries(principal):
        if _glossary_id(memory) == glossary_id.strip().lower():
            return memory
    raise NotFound(f"Glossary {glossary_id!r} not found.", field="glossary_id")


def _glossary_json(memory: Any) -> dict[str, Any]:
    created = memory.created_at.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    return {
        "glossary_id": _glossary_id(memory),
        "name": memory.name,
        "ready": True,
        "source_lang": languages.primary(memory.source_lang),
        "target_lang": languages.primary(memory.target_lang),
        "creation_time": created,
        "entry_count": memory.segment_count,
    }


def _may_create(principal: Principal) -> bool:
    return principal.allows(ALL_MEMORIES, "write")


@blueprint.get("/v2/glossary-language-pairs")
def glossary_language_pairs() -> Response:
    """The model's pair, to a key that may create glossaries; none to any other key."""
    principal = _principal(request_arguments())
    pairs = []
    if _may_create(principal):
        source, target = model_pair(services())
        pairs.append(
            {"source_lang": languages.primary(source), "target_lang": languages.primary(target)}
        )
    return jsonify({"supported_languages": pairs})


@blueprint.get("/v2/glossaries")
def list_glossaries() -> Response:
    principal = _principal(request_arguments())
    return jsonify({"glossaries": [_glossary_json(m) for m in _glossaries(principal)]})


@blueprint.post("/v2/glossaries")
def create_glossary() -> tuple[Response, int]:
    """A memory of the model's pair named as the glossary, holding its entries; entries posted
    under the name of a glossary that exists are merged into it. It is ready at once: its
    entries are aligned by a background import job, and one not yet aligned when a translation
    names the glossary is aligned for that translation."""
    args = request_arguments()
    principal = _principal(args)
    if not _may_create(principal):
        raise Forbidden(
            f"API key '{principal.name}' may not create glossaries: a glossary is a tm-guide "
            "memory, and creating one needs write access to every memory"
        )
    args = protocol_arguments(args)  # the document's DeepLGlossaryInput
    name = args["name"]
    if not name.strip():
        raise InvalidInput("Parameter 'name' must not be blank.", field="name")
    check_memory_fields(name)  # kept as sent: refused, not trimmed, where it cannot be a name
    svc = services()
    pair = check_pair(svc, args["source_lang"], args["target_lang"])
    entries_format = args.get("entries_format") or "tsv"
    entries = args["entries"]
    records = _entries(entries, entries_format, pair, principal.name)
    store = svc.store()
    try:
        memory = store.get_memory(name)
    except NotFound:
        source, target = model_pair(svc)
        memory = store.create_memory(name, source, target, GLOSSARY_DESCRIPTION, kind="glossary")
    else:
        if not _is_glossary(memory):
            raise InvalidInput(
                f"a memory named {name!r} exists and is not a DeepL glossary", field="name"
            )
    store.import_records(memory, records, source_name="glossary")
    svc.metrics.segments_added.labels(kind="import").inc(len(records))
    align_in_background(svc, memory.name, principal.name, len(records), "glossary")
    return jsonify(_glossary_json(store.get_memory(memory.id))), 201


def _entries(text: str, entries_format: str, pair: tuple[str, str], author: str) -> list[Any]:
    """Every entry as a record, or a 400 naming its line; nothing is stored before all are read.

    TSV: `source<TAB>target` per line; CSV: `source,target[,source_lang,target_lang]`."""
    limit = services().config.limits.max_segment_chars
    records = []
    rows = list(glossary_rows(text, entries_format, "Entries: CSV", "entries"))
    for line, fields in rows:
        if len(fields) not in ((2,) if entries_format == "tsv" else (2, 4)):
            raise InvalidInput(
                f"Entries line {line}: expected a source and a target term"
                + (" separated by a tab" if entries_format == "tsv" else ""),
                field="entries",
            )
        if len(fields) == 4 and not languages.pair_matches(pair, (fields[2], fields[3])):
            raise InvalidInput(
                f"Entries line {line}: {fields[2]}->{fields[3]} is not the glossary's "
                f"{pair[0]}->{pair[1]}",
                field="entries",
            )
        source, target = fields[0].strip(), fields[1].strip()
        if not source or not target or max(len(source), len(target)) > limit:
            raise InvalidInput(
                f"Entries line {line}: each term must be 1 to {limit} characters, not blank",
                field="entries",
            )
        records.append(
            SegmentRecord(source=source, target=target, created_by=author, changed_by=author)
        )
    if not records:
        raise InvalidInput("Parameter 'entries' holds no entries.", field="entries")
    return records


@blueprint.get("/v2/glossaries/<glossary_id>")
def show_glossary(glossary_id: str) -> Response:
    return jsonify(_glossary_json(_glossary(glossary_id, _principal(request_arguments()))))


@blueprint.delete("/v2/glossaries/<glossary_id>")
def delete_glossary(glossary_id: str) -> tuple[str, int]:
    """Deleting a memory is an administrator's act, as in /v1: write on every memory."""
    principal = _principal(request_arguments())
    memory = _glossary(glossary_id, principal)
    if not _may_create(principal):
        raise Forbidden(
            f"API key '{principal.name}' may not delete glossaries: a glossary is a tm-guide "
            "memory, and deleting one needs write access to every memory"
        )
    services().store().delete_memory(memory.id)
    return "", 204


@blueprint.get("/v2/glossaries/<glossary_id>/entries")
def glossary_entries(glossary_id: str) -> Response:
    """The entries as TSV, one `source<TAB>target` a line (tabs and newlines in a term become
    spaces)."""
    memory = _glossary(glossary_id, _principal(request_arguments()))
    clean = re.compile(r"[\t\r\n]+")
    lines = [
        f"{clean.sub(' ', s.source)}\t{clean.sub(' ', s.target)}"
        for s in services().store().iter_segments(memory)
    ]
    return Response("\n".join(lines), mimetype="text/tab-separated-values")


class DeepL(Protocol):
    name = "deepl"
    blueprint = blueprint

    def error_body(
        self, status: int, code: str, message: str, field: str | None
    ) -> tuple[int, Any]:
        """DeepL's error JSON; it has no 401 (a key problem is 403), no 409 and no 422 (400)."""
        status = {401: 403, 409: 400, 422: 400}.get(status, status)
        return status, {"message": message}

    def setup(self, app: Flask) -> None:
        app.extensions[USAGE] = UsageCounter()


PROTOCOL = DeepL()
