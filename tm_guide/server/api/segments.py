"""Segments of a memory: add (usable by the next suggestion), update by tuid, delete, search."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from tm_guide.errors import InvalidInput, NotFound
from tm_guide.records import NOT_XML, SegmentRecord
from tm_guide.server.api.common import services
from tm_guide.server.auth import require
from tm_guide.server.shapes import memory_json, segment_json
from tm_guide.server.validation import get_field, int_arg, json_body, text_field

blueprint = Blueprint("segments", __name__, url_prefix="/v1/memories/<name>")


def record_from_json(body: dict[str, Any], author: str, *, path: str = "") -> SegmentRecord:
    """A SegmentRecord from a request object, every field checked and named on error."""
    limit = services().config.limits.max_segment_chars
    props = get_field(body, "props", dict, path=path, default={})
    for key, value in props.items():
        if not isinstance(value, str):
            where = f"{path}props.{key}"
            raise InvalidInput(f"field '{where}' must be a string", field=where)
    return SegmentRecord(
        source=text_field(body, "source", limit, path=path) or "",
        target=text_field(body, "target", limit, path=path) or "",
        tuid=text_field(body, "tuid", 200, path=path, required=False),
        context=text_field(body, "context", limit, path=path, required=False),
        created_by=get_field(body, "created_by", str, path=path) or author,
        changed_by=get_field(body, "changed_by", str, path=path) or author,
        props=dict(props),
    )


def _written(segment: Any, memory: Any, status: int) -> tuple[Response, int]:
    """Answers once the segment is committed and indexed; its word alignment follows in the
    background (a suggestion that retrieves it first aligns it itself)."""
    from tm_guide.server.translation import align_after_write

    svc = services()
    align_after_write(svc, [segment])
    svc.metrics.segments_added.labels(kind="api").inc()
    return jsonify({"segment": segment_json(segment), "memory": memory_json(memory)}), status


@blueprint.post("/segments")
def add_segment(name: str) -> tuple[Response, int]:
    principal = require(name, "write")
    record = record_from_json(json_body(), principal.name)
    store = services().store()
    segment, memory = store.write_segment(store.get_memory(name), record)
    return _written(segment, memory, 201)


@blueprint.put("/segments/by-tuid/<tuid>")
def update_segment(name: str, tuid: str) -> tuple[Response, int]:
    principal = require(name, "write")
    body = json_body()
    if "tuid" in body:
        raise InvalidInput("the tuid is the path's; leave it out of the body", field="tuid")
    record = record_from_json({**body, "tuid": tuid}, principal.name)
    store = services().store()
    segment = store.update_segment(store.get_memory(name), tuid, record)
    return _written(segment, store.get_memory(name), 200)


def _segment_of(name: str, segment_id: int) -> tuple[Any, Any]:
    store = services().store()
    memory = store.get_memory(name)
    found = [s for s in store.get_segments([segment_id]) if s is not None]
    if not found or found[0].memory_id != memory.id:
        raise NotFound(f"memory '{name}' has no segment {segment_id}")
    return memory, found[0]


@blueprint.get("/segments/<int:segment_id>")
def show_segment(name: str, segment_id: int) -> Response:
    require(name, "read")
    _, segment = _segment_of(name, segment_id)
    return jsonify(segment_json(segment))


@blueprint.delete("/segments/<int:segment_id>")
def delete_segment(name: str, segment_id: int) -> tuple[str, int]:
    require(name, "write")
    memory, segment = _segment_of(name, segment_id)
    services().store().delete_segment(memory, segment.id)
    return "", 204


@blueprint.get("/concordance")
def concordance(name: str) -> Response:
    """Word or substring search on either side, as a CAT tool's concordance window."""
    require(name, "read")
    query = request.args.get("q", "")
    if not query.strip():
        raise InvalidInput("query parameter 'q' is required", field="q")
    bad = NOT_XML.search(query)
    if bad is not None:  # no stored text holds one (and PostgreSQL refuses NUL in a pattern)
        raise InvalidInput(
            f"query parameter 'q' holds U+{ord(bad.group()):04X}, which no segment can hold",
            field="q",
        )
    limit_chars = services().config.limits.max_segment_chars
    if len(query) > limit_chars:
        raise InvalidInput(
            f"query parameter 'q' is longer than {limit_chars} characters", field="q"
        )
    side = request.args.get("side", "source")
    if side not in ("source", "target"):
        raise InvalidInput("query parameter 'side' must be 'source' or 'target'", field="side")
    limit = int_arg("limit", 50, 1, 500)
    store = services().store()
    hits = store.concordance(store.get_memory(name), query, side=side, limit=limit)
    return jsonify({"segments": [segment_json(s) for s in hits]})
