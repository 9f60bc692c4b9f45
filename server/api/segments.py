"""Segments of a memory: add (usable by the next suggestion), update by tuid, delete, search."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from tm_guide.errors import NotFound
from tm_guide.records import SegmentRecord
from tm_guide.server.api.common import services
from tm_guide.server.auth import require
from tm_guide.server.document import query_arguments, request_body
from tm_guide.server.shapes import memory_json, segment_json

blueprint = Blueprint("segments", __name__, url_prefix="/v1/memories/<name>")


def record_from_json(body: dict[str, Any], author: str) -> SegmentRecord:
    """A SegmentRecord from a request object the document's SegmentInput has checked."""
    return SegmentRecord(
        source=body["source"],
        target=body["target"],
        tuid=body.get("tuid"),
        context=body.get("context"),
        created_by=body.get("created_by") or author,
        changed_by=body.get("changed_by") or author,
        props=dict(body.get("props") or {}),
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
    record = record_from_json(request_body(), principal.name)
    store = services().store()
    segment, memory = store.write_segment(store.get_memory(name), record)
    return _written(segment, memory, 201)


@blueprint.put("/segments/by-tuid/<tuid>")
def update_segment(name: str, tuid: str) -> tuple[Response, int]:
    principal = require(name, "write")
    body = request_body()  # SegmentReplacement: the tuid is the path's, never the body's
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
    args = query_arguments()
    store = services().store()
    hits = store.concordance(
        store.get_memory(name), args["q"], side=args["side"], limit=args["limit"]
    )
    return jsonify({"segments": [segment_json(s) for s in hits]})
