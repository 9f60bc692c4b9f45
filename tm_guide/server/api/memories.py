"""Memories: create, list, show (size, languages, revision), delete."""

from __future__ import annotations

import re

from flask import Blueprint, Response, jsonify

from tm_guide.errors import InvalidInput
from tm_guide.server.api.common import services
from tm_guide.server.auth import ALL_MEMORIES, current_principal, require
from tm_guide.server.shapes import memory_json
from tm_guide.server.validation import get_field, json_body

blueprint = Blueprint("memories", __name__, url_prefix="/v1")

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def checked_name(value: str, where: str = "name") -> str:
    if not NAME_PATTERN.match(value):
        raise InvalidInput(
            f"field '{where}' must be 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
            field=where,
        )
    return value


@blueprint.get("/memories")
def list_memories() -> Response:
    principal = current_principal()
    memories = [m for m in services().store().list_memories() if principal.allows(m.name, "read")]
    return jsonify({"memories": [memory_json(m) for m in memories]})


@blueprint.post("/memories")
def create_memory() -> tuple[Response, int]:
    require(ALL_MEMORIES, "write")
    body = json_body()
    name = checked_name(get_field(body, "name", str, required=True))
    # the store normalises them (tm_guide.languages), refusing what is no language tag
    source_lang = get_field(body, "source_lang", str, required=True)
    target_lang = get_field(body, "target_lang", str, required=True)
    description = get_field(body, "description", str, default="")
    memory = services().store().create_memory(name, source_lang, target_lang, description)
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
