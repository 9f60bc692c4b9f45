"""Memories: create, list, show (size, languages, revision), delete."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from tm_guide.server.api.common import services
from tm_guide.server.auth import ALL_MEMORIES, current_principal, require
from tm_guide.server.document import request_body
from tm_guide.server.shapes import memory_json

blueprint = Blueprint("memories", __name__, url_prefix="/v1")


@blueprint.get("/memories")
def list_memories() -> Response:
    principal = current_principal()
    memories = [m for m in services().store().list_memories() if principal.allows(m.name, "read")]
    return jsonify({"memories": [memory_json(m) for m in memories]})


@blueprint.post("/memories")
def create_memory() -> tuple[Response, int]:
    require(ALL_MEMORIES, "write")
    body = request_body()
    # the store normalises the tags (tm_guide.languages), refusing a tag of no known language
    memory = (
        services()
        .store()
        .create_memory(
            body["name"], body["source_lang"], body["target_lang"], body.get("description") or ""
        )
    )
    return jsonify(memory_json(memory)), 201


@blueprint.get("/memories/<name>")
def show_memory(name: str) -> Response:
    require(name, "read")
    return jsonify(memory_json(services().store().get_memory(name)))


@blueprint.delete("/memories/<name>")
def delete_memory(name: str) -> tuple[str, int]:
    """Deleting a whole memory is an administrator's act: it needs write on every memory."""
    require(ALL_MEMORIES, "write")
    store = services().store()
    store.get_memory(name)
    store.delete_memory(name)
    return "", 204
