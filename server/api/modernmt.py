"""ModernMT's API (v1) under /modernmt, answered with tm-guide's guided translation.

Clients (Weblate's ModernMT service, the official `modernmt` libraries, CAT-tool plugins) are
pointed at `http://host:port/modernmt` (Weblate: `http://host:port/modernmt/`). The key is a
tm-guide API key sent as `MMT-ApiKey`. Every route also answers a POST that names its method in
`X-HTTP-Method-Override`, as the official clients send every request; parameters come from the
query string, a form (multipart for files) or a JSON body, whichever the client uses.

- `GET /translate` (and plain `POST /translate`): `q` (a string or a list), `source` (left out:
  the model's source language, given back as `detectedLanguage`; no detection is done),
  `target`, `hints` (memory ids, comma-separated or a list: the memories whose pieces guide the
  translation; without them the key's readable memories of the pair do), `glossaries` (memory
  ids as well: a glossary imported here is a memory; its pieces guide beside those memories),
  `alt_translations` (0-32: the unguided translation and the closest TM targets). Accepted and
  ignored: `context`, `context_vector`, `priority`, `multiline`, `timeout`, `format`, `session`,
  `project_id`, `ignore_glossary_case`, `mask_profanities`.
- `GET /translate/languages` and `GET /languages` (Weblate's spelling): the model's pair.
- `GET /translate/detect`: `q`; answers the model's source language (nothing is detected).
- `GET|POST /memories`, `GET|DELETE /memories/{id}`: memories the key may read; a new memory has
  the model's language pair (ModernMT's memories have none) and needs write on every memory, as
  deleting one does; creating a name that exists gives back the existing memory.
- `POST|PUT /memories/{id}/content`: a confirmed segment (`source`/`target` are language tags,
  `sentence`/`translation` the texts, `tuid` replaces the unit with that tuid), aligned at once
  so that the next translation uses its pieces; or a multipart `tmx` file (`compression` gzip).
- `POST|PUT /memories/{id}/glossary`: a multipart `csv` file (first row the language header,
  `type` unidirectional or equivalent) or JSON `terms`, stored as segments in one transaction.
- `GET /import-jobs/{id}`: a file (TMX or CSV) is stored within its request and aligned by a
  background import job (the `/v1/jobs` one, its id as a UUID), whose progress reaches 1.0 when
  the alignment ends; the request waits for it up to TM_GUIDE_UPLOAD_WAIT_S. A single segment
  or term is done within its request, and its job id encodes the memory, the size and the
  revision it made, so it needs no state.

Errors are ModernMT's envelope `{"status": N, "error": {"type": "...Exception", "message": ...}}`.
"""

from __future__ import annotations

import gzip
import io
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, Flask, Response, jsonify, request

from tm_guide import languages
from tm_guide.errors import Conflict, Forbidden, InvalidInput, NotFound, PayloadTooLarge
from tm_guide.formats.glossary import glossary_rows
from tm_guide.records import SegmentRecord
from tm_guide.server.api.common import services
from tm_guide.server.api.jobs import align_in_background
from tm_guide.server.auth import ALL_MEMORIES, Principal, authenticate
from tm_guide.server.document import protocol_arguments
from tm_guide.server.machine_translation import (
    TextsToTranslate,
    model_pair,
    require_text_list,
    translate_texts,
)
from tm_guide.server.protocol import Protocol
from tm_guide.server.translation import align_after_write
from tm_guide.server.validation import json_name, request_arguments, string_arg
from tm_guide.store import check_memory_fields

PREFIX = "/modernmt"
blueprint = Blueprint("modernmt", __name__, url_prefix=PREFIX)

GLOSSARY_TYPES = ("unidirectional", "equivalent")
OVERRIDABLE = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH"})
ERROR_TYPES = {
    400: "ValidationException",
    401: "AuthenticationException",
    403: "ForbiddenException",
    404: "NotFoundException",
    405: "MethodNotAllowedException",
    409: "ConflictException",
    413: "PayloadTooLargeException",
    503: "ServiceUnavailableException",
}
_48_BITS = (1 << 48) - 1
_ID = re.compile(r"[0-9]{1,18}")


class _MethodOverride:
    """Under /modernmt, a POST with `X-HTTP-Method-Override: get|put|delete` is that method (the
    official clients send every request this way); routing happens after, on the real method."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if environ.get("REQUEST_METHOD") == "POST" and (
            path == PREFIX or path.startswith(PREFIX + "/")
        ):
            override = str(environ.get("HTTP_X_HTTP_METHOD_OVERRIDE", "")).strip().upper()
            if override in OVERRIDABLE:
                environ["REQUEST_METHOD"] = override
        return self.app(environ, start_response)


def _ok(data: Any) -> Response:
    return jsonify({"status": 200, "data": data})


def _principal() -> Principal:
    return authenticate(
        lambda: request.headers.get("MMT-ApiKey", "").strip() or None,
        "an API key is required: send it in the MMT-ApiKey header",
    )


def _tuid(args: dict[str, Any]) -> str | None:
    """The unit's id, as a string (the document takes a number for one too)."""
    value = args.get("tuid")
    return None if value is None or value == "" else str(value)


def _memory_refs(value: Any, field: str) -> list[int]:
    """Memory ids as `1,2`, a list, or one number."""
    if value is None or value == "":
        return []
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, int) and not isinstance(items, bool):
        items = [items]
    if not isinstance(items, list):
        raise InvalidInput(
            f"parameter '{field}' must be memory ids, comma-separated or a list", field=field
        )
    refs: list[int] = []
    for item in items:
        if isinstance(item, int) and not isinstance(item, bool):
            refs.append(_memory_ref(item, field))
        elif isinstance(item, str):
            item = item.strip()
            if item:
                refs.append(_memory_ref(item, field))
        else:
            raise InvalidInput(
                f"parameter '{field}' must list memory ids, not {json_name(item)}", field=field
            )
    return refs


def _memory_ref(value: str | int, field: str) -> int:
    """A memory id. ModernMT names memories by id only: a name, an id no database can hold, or
    digits that are not ASCII (`²`) name no memory."""
    if isinstance(value, int):
        if 0 <= value < 2**63:
            return value
    elif _ID.fullmatch(value):
        return int(value)
    raise NotFound(f"memory {value} does not exist", field=field)


@blueprint.route("/translate", methods=["GET", "POST"])
def translate() -> Response:
    principal = _principal()
    # types, required fields and ranges: the document's ModernMTTranslateRequest, which the
    # POST takes as its body and the GET in its query string (or behind a method override)
    args = protocol_arguments(request_arguments(), method="POST")
    svc = services()
    limits = svc.config.limits
    texts = require_text_list(args["q"], "q", limits.max_batch_size, limits.max_segment_chars)
    source = args.get("source") or None
    target = args["target"]
    hints = _memory_refs(args.get("hints"), "hints")
    glossaries = _memory_refs(args.get("glossaries"), "glossaries")
    alternatives = args.get("alt_translations") or 0
    wanted = TextsToTranslate(
        texts, target, source, tuple(hints), alternatives, glossaries=tuple(glossaries)
    )
    result = translate_texts(svc, principal, wanted, svc.config.protocols.modernmt)
    items = []
    for text, item in zip(texts, result.items, strict=True):
        one: dict[str, Any] = {
            "translation": item.text,
            "characters": len(text),
            "billedCharacters": len(text),
        }
        if source is None:
            one["detectedLanguage"] = result.source_lang
        if alternatives:
            one["altTranslations"] = list(item.alternatives)
        items.append(one)
    return _ok(items[0] if isinstance(args["q"], str) else items)


@blueprint.get("/translate/languages")
@blueprint.get("/languages")
def languages_view() -> Response:
    _principal()
    source, target = model_pair(services())
    return _ok({source: [target]})


@blueprint.get("/translate/detect")
def detect() -> Response:
    """No detection is done: every text is in the model's source language."""
    _principal()
    args = request_arguments()
    svc = services()
    if args.get("q") is None:
        raise InvalidInput("missing parameter 'q'", field="q")
    limits = svc.config.limits
    texts = require_text_list(args["q"], "q", limits.max_batch_size, limits.max_segment_chars)
    source = model_pair(svc)[0]
    items = [{"billedCharacters": len(text), "detectedLanguage": source} for text in texts]
    return _ok(items[0] if isinstance(args["q"], str) else items)


# ---- memories ----------------------------------------------------------------------------------


def _date(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()


def _memory_json(memory: Any) -> dict[str, Any]:
    return {
        "id": memory.id,
        "name": memory.name,
        "description": memory.description,
        "creationDate": _date(memory.created_at),
        "sourceLanguage": memory.source_lang,
        "targetLanguage": memory.target_lang,
        "segments": memory.segment_count,
    }


def _memory(memory_id: str, principal: Principal, right: str) -> Any:
    """The memory whose id is `memory_id`, once the key may `right` it. A memory the key may not
    read is answered as one that does not exist, so that ids outside a scope cannot be probed."""
    missing = NotFound(f"memory {memory_id} does not exist", field="id")
    try:
        memory = services().store().get_memory(_memory_ref(memory_id, "id"))
    except NotFound:
        raise missing from None
    if not principal.allows(memory.name, "read"):
        raise missing
    if not principal.allows(memory.name, right):
        raise Forbidden(
            f"API key '{principal.name}' has no {right} access to memory {memory.id}", field="id"
        )
    return memory


def _memory_named(name: str, principal: Principal) -> Any:
    """The memory an import job names, once the key may read it (404 for any other)."""
    memory = services().store().get_memory(name)
    if not principal.allows(memory.name, "read"):
        raise NotFound(f"memory {memory.id} does not exist", field="id")
    return memory


def _require_all(principal: Principal) -> None:
    if not principal.allows(ALL_MEMORIES, "write"):
        raise Forbidden(f"API key '{principal.name}' has no write access to every memory")


@blueprint.get("/memories")
def list_memories() -> Response:
    principal = _principal()
    store = services().store()
    readable = [m for m in store.list_memories() if principal.allows(m.name, "read")]
    return _ok([_memory_json(m) for m in readable])


@blueprint.post("/memories")
def create_memory() -> Response:
    """A memory with the model's pair; an existing name gives back that memory (Weblate counts
    on ModernMT doing so). `external_id` is accepted and ignored."""
    principal = _principal()
    _require_all(principal)
    # the whole body is checked (the document's ModernMTMemoryInput) before an existing memory
    # of that name is answered
    args = protocol_arguments(request_arguments())
    name = check_memory_fields(args["name"], args.get("description") or "")
    svc = services()
    store = svc.store()
    try:
        return _ok(_memory_json(store.get_memory(name)))
    except NotFound:
        pass
    source, target = model_pair(svc)
    try:
        memory = store.create_memory(name, source, target, args.get("description") or "")
    except Conflict:  # created by a concurrent request: answer with that one
        memory = store.get_memory(name)
    return _ok(_memory_json(memory))


@blueprint.get("/memories/<memory_id>")
def show_memory(memory_id: str) -> Response:
    return _ok(_memory_json(_memory(memory_id, _principal(), "read")))


@blueprint.delete("/memories/<memory_id>")
def delete_memory(memory_id: str) -> Response:
    """Deleting a whole memory is an administrator's act, as in /v1: write on every memory."""
    principal = _principal()
    memory = _memory(memory_id, principal, "read")
    _require_all(principal)
    services().store().delete_memory(memory.id)
    return _ok(_memory_json(memory))


# ---- content: segments, TMX, glossaries ---------------------------------------------------------


def _job(memory: Any, size: int) -> dict[str, Any]:
    """An import job that is already done: its id holds the memory, size and revision."""
    value = (memory.id << 96) | (min(size, _48_BITS) << 48) | (memory.revision & _48_BITS)
    return {"id": str(uuid.UUID(int=value)), "memory": memory.id, "size": size, "progress": 1.0}


def _background_job(memory: Any, state: dict[str, Any]) -> dict[str, Any]:
    """An upload's import job (tm_guide.server.jobs): its id is the job's, as a UUID; progress
    is its alignment's, and 1.0 only once the job succeeded. A job that failed or was cut short
    answers with its error, so that a client polling it stops."""
    status = state.get("status")
    if status in ("failed", "interrupted") and not state.get("resumed_at"):
        error = state.get("error") or {}
        raise Conflict(f"import job failed: {error.get('message', status)}", field="id")
    if status == "succeeded":
        progress = 1.0
    else:
        progress = min(0.99, float((state.get("progress") or {}).get("fraction") or 0.0))
    return {
        "id": str(uuid.UUID(hex=state["id"])),
        "memory": memory.id,
        "size": int(state.get("size") or 0),
        "progress": progress,
    }


@blueprint.get("/import-jobs/<job_id>")
def show_import_job(job_id: str) -> Response:
    principal = _principal()
    try:
        parsed = uuid.UUID(job_id)
    except ValueError:
        raise NotFound(f"import job {job_id} does not exist", field="id") from None
    svc = services()
    try:
        state: dict[str, Any] | None = svc.jobs.read(parsed.hex)
    except NotFound:
        state = None
    if state is not None:
        try:
            memory = _memory_named(state["memory"], principal)
        except NotFound:
            raise NotFound(f"import job {job_id} does not exist", field="id") from None
        return _ok(_background_job(memory, state))
    value = parsed.int
    memory_id, size, revision = value >> 96, (value >> 48) & _48_BITS, value & _48_BITS
    try:
        memory = _memory(str(memory_id), principal, "read")
    except NotFound:
        raise NotFound(f"import job {job_id} does not exist", field="id") from None
    job = {"id": str(parsed), "memory": memory.id, "size": size}
    job["progress"] = 1.0 if memory.revision >= revision else 0.0
    return _ok(job)


def _check_languages(memory: Any, source: str, target: str, what: str) -> None:
    have = (memory.source_lang, memory.target_lang)
    pair = (languages.normalize(source, "source"), languages.normalize(target, "target"))
    if not languages.pair_matches(have, pair):
        raise InvalidInput(
            f"memory {memory.id} is {have[0]}->{have[1]}; {what} is {source}->{target}",
            field="source",
        )


def _written(memory: Any, records: list[SegmentRecord], kind: str) -> Response:
    """Stores the records in one transaction and answers with its import job. One segment is
    aligned after the answer, so that its pieces serve the next translation; an import's
    alignment is a background job, which a short one finishes before the answer."""
    svc = services()
    store = svc.store()
    if kind == "api":
        segment = store.add_segment(memory, records[0])
        align_after_write(svc, [segment])
        svc.metrics.segments_added.labels(kind="api").inc()
        return _ok(_job(store.get_memory(memory.id), 1))
    store.import_records(memory, records, source_name=kind)
    svc.metrics.segments_added.labels(kind="import").inc(len(records))
    if not records:
        return _ok(_job(store.get_memory(memory.id), 0))
    state = align_in_background(svc, memory.name, _principal().name, len(records), kind)
    return _ok(_background_job(memory, state))


@blueprint.post("/memories/<memory_id>/content")
@blueprint.put("/memories/<memory_id>/content")
def add_content(memory_id: str) -> Response:
    """One confirmed segment (PUT: `tuid` required, replacing that unit; POST: a `tuid` that is
    there replaces it too), or a multipart `tmx` file. `session` is accepted and ignored."""
    principal = _principal()
    memory = _memory(memory_id, principal, "write")
    if "tmx" in request.files:
        if request.method != "POST":
            raise InvalidInput("a TMX file is imported with POST", field="tmx")
        return _import_tmx(memory, _upload("tmx"))
    args = protocol_arguments(request_arguments())  # the document's ModernMTSegmentInput
    _check_languages(memory, args["source"], args["target"], "this segment")
    record = _record(args["sentence"], args["translation"], _tuid(args), principal)
    return _written(memory, [record], "api")


def _upload(field: str) -> bytes:
    """The uploaded file's bytes, gunzipped when `compression` is gzip (the file's size is
    bounded by the body limit; larger imports go through /v1/memories/{name}/imports)."""
    data = request.files[field].read()
    compression = request.form.get("compression", "").strip().lower()
    if compression in ("", "none"):
        return data
    if compression != "gzip":
        raise InvalidInput("parameter 'compression' must be gzip", field="compression")
    limits = services().config.limits
    # unzipped in memory: up to 16 times the body limit (a TMX or CSV zips about 5-10 times)
    limit = min(limits.max_import_bytes, 16 * limits.max_body_bytes)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
            raw = unzipped.read(limit + 1)
    except (OSError, EOFError) as exc:
        raise InvalidInput(f"{field}: not a gzip file ({exc})", field=field) from None
    if len(raw) > limit:
        raise PayloadTooLarge(f"{field}: more than {limit} bytes once unzipped", field=field)
    return raw


def _import_tmx(memory: Any, data: bytes) -> Response:
    from tm_guide.formats.tmx import read_tmx

    upload = io.BytesIO(data)
    upload.name = "tmx"  # type: ignore[attr-defined]
    records = list(read_tmx(upload, memory.source_lang, memory.target_lang))
    return _written(memory, records, "tmx")


@blueprint.post("/memories/<memory_id>/glossary")
@blueprint.put("/memories/<memory_id>/glossary")
def add_glossary(memory_id: str) -> Response:
    """A multipart `csv` file, or JSON `terms` ([{term, language}], one unit; PUT needs its
    `tuid` and replaces it); `type` unidirectional or equivalent. Terms are stored as segments
    of the memory, so they guide like any other."""
    principal = _principal()
    memory = _memory(memory_id, principal, "write")
    args = request_arguments()
    if "csv" in request.files:  # a file's form fields: the document cannot see the file
        if request.method != "POST":
            raise InvalidInput("a CSV glossary is imported with POST", field="csv")
        kind = string_arg(args, "type", required=True)
        if kind not in GLOSSARY_TYPES:
            raise InvalidInput(
                f"parameter 'type' must be one of {', '.join(GLOSSARY_TYPES)}", field="type"
            )
        records = _glossary_csv(_upload("csv"), memory, kind, principal.name)
        return _written(memory, records, "glossary")
    if "terms" not in args and not request.is_json:
        raise InvalidInput("missing parameter 'csv' (a file) or 'terms'", field="csv")
    args = protocol_arguments(args)  # the document's ModernMTGlossaryTerms
    source, target = _glossary_terms(args["terms"], memory, args["type"])
    return _written(memory, [_record(source, target, _tuid(args), principal)], "api")


def _record(source: str, target: str, tuid: str | None, principal: Principal) -> SegmentRecord:
    return SegmentRecord(
        source=source,
        target=target,
        tuid=tuid,
        created_by=principal.name,
        changed_by=principal.name,
    )


def _glossary_terms(terms: Any, memory: Any, kind: str) -> tuple[str, str]:
    if isinstance(terms, str):
        raise InvalidInput("parameter 'terms' must be a JSON list", field="terms")
    if not isinstance(terms, list) or len(terms) < 2:
        raise InvalidInput(
            "parameter 'terms' must list at least two {term, language} objects", field="terms"
        )
    pairs = []
    for i, term in enumerate(terms):
        if not (
            isinstance(term, dict)
            and isinstance(term.get("term"), str)
            and isinstance(term.get("language"), str)
        ):
            raise InvalidInput(
                f"'terms[{i}]' must be an object with string 'term' and 'language'", field="terms"
            )
        pairs.append((languages.normalize(term["language"], "terms"), term["term"]))
    if kind == "unidirectional" and len(pairs) != 2:
        raise InvalidInput("a unidirectional entry has two terms, source first", field="terms")
    columns = _glossary_columns([lang for lang, _ in pairs], memory, kind, "terms")
    source, target = (pairs[c][1] for c in columns)
    limit = services().config.limits.max_segment_chars
    for text in (source, target):
        if not text.strip() or len(text) > limit:
            raise InvalidInput(
                f"each term must be 1 to {limit} characters, not blank", field="terms"
            )
    return source, target


def _glossary_columns(tags: list[str], memory: Any, kind: str, where: str) -> tuple[int, int]:
    """Which columns hold the memory's source and target terms."""
    if kind == "unidirectional":
        if len(tags) == 2 and languages.pair_matches(
            (memory.source_lang, memory.target_lang), (tags[0], tags[1])
        ):
            return 0, 1
        raise InvalidInput(
            f"{where}: a unidirectional glossary for memory {memory.id} is "
            f"{memory.source_lang}, {memory.target_lang}; this one is {', '.join(tags)}",
            field=where,
        )
    found = []
    for wanted in (memory.source_lang, memory.target_lang):
        column = languages.best_match(tags, wanted)
        if column is None:
            raise InvalidInput(
                f"{where}: no {wanted} column among {', '.join(tags)} (memory {memory.id} is "
                f"{memory.source_lang}->{memory.target_lang})",
                field=where,
            )
        found.append(column)
    return found[0], found[1]


def _glossary_csv(data: bytes, memory: Any, kind: str, author: str) -> list[SegmentRecord]:
    """Every row as a record, or a 400 naming the line; nothing is stored before all are read.

    The first row is the header: a language tag per column (and an optional `tuid` column); a
    row without a term in the memory's source or target language is skipped."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"csv: not valid UTF-8 (byte {exc.start})", field="csv") from None
    rows = glossary_rows(text, "csv", "csv", "csv")
    header = next(rows, None)
    if header is None:
        raise InvalidInput("csv: the file is empty; the first row names the languages", field="csv")
    line, names = header
    names = [name.strip() for name in names]
    tuid_column = next((i for i, n in enumerate(names) if n.lower() == "tuid"), None)
    tags = []
    for name in names:
        if name.lower() != "tuid":
            try:
                tags.append(languages.normalize(name, "csv"))
            except InvalidInput:
                raise InvalidInput(
                    f"csv line {line}: {name!r} is not a language tag; the first row names "
                    "the language of each column",
                    field="csv",
                ) from None
    columns = _glossary_columns(tags, memory, kind, f"csv line {line}")
    positions = [i for i, n in enumerate(names) if n.lower() != "tuid"]
    source_at, target_at = positions[columns[0]], positions[columns[1]]
    limit = services().config.limits.max_segment_chars
    records = []
    for line, row in rows:
        if len(row) != len(names):
            raise InvalidInput(
                f"csv line {line}: {len(row)} fields, but the header has {len(names)}",
                field="csv",
            )
        source, target = row[source_at], row[target_at]
        if not source.strip() or not target.strip():
            continue
        if max(len(source), len(target)) > limit:
            raise InvalidInput(
                f"csv line {line}: a term is longer than {limit} characters", field="csv"
            )
        tuid = row[tuid_column].strip() if tuid_column is not None else ""
        records.append(
            SegmentRecord(
                source=source,
                target=target,
                tuid=tuid or None,
                created_by=author,
                changed_by=author,
                line=line,
            )
        )
    return records


class ModernMT(Protocol):
    name = "modernmt"
    blueprint = blueprint

    def error_body(
        self, status: int, code: str, message: str, field: str | None
    ) -> tuple[int, Any]:
        """ModernMT's error envelope; it has no 422 (a well-formed but unusable request is 400)."""
        status = {422: 400}.get(status, status)
        if code == "unsupported_language":
            kind = "UnsupportedLanguageException"
        else:
            fallback = "InternalServerErrorException" if status >= 500 else "ValidationException"
            kind = ERROR_TYPES.get(status, fallback)
        return status, {"status": status, "error": {"type": kind, "message": message}}

    def setup(self, app: Flask) -> None:
        app.wsgi_app = _MethodOverride(app.wsgi_app)  # type: ignore[method-assign]


PROTOCOL = ModernMT()
