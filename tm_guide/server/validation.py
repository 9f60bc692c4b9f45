"""Reading request bodies and fields with errors that name exactly what is wrong and where."""

from __future__ import annotations

import json
from typing import Any

from flask import request

from tm_guide.errors import InvalidInput


def json_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def json_body() -> dict[str, Any]:
    """The body as a JSON object; malformed JSON and invalid UTF-8 are 400s that say where."""
    raw = request.get_data(cache=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"request body is not valid UTF-8 (byte {exc.start}: {exc.reason})", field="body"
        ) from None
    if not text.strip():
        raise InvalidInput("request body is empty; a JSON object is expected", field="body")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", field="body"
        ) from None
    if not isinstance(body, dict):
        raise InvalidInput(
            f"request body must be a JSON object, not {json_name(body)}", field="body"
        )
    _refuse_lone_surrogates(body, "")
    return body


def _refuse_lone_surrogates(value: Any, where: str) -> None:
    """JSON's `\\ud800` escapes can spell half a character, which no text can hold: 400 naming
    the field, before anything tries to encode it."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            field = where or "body"
            raise InvalidInput(
                f"field '{field}' holds a lone UTF-16 surrogate (half a character)", field=field
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_lone_surrogates(key, where or "body")
            _refuse_lone_surrogates(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _refuse_lone_surrogates(item, f"{where}[{i}]")


def request_arguments() -> dict[str, Any]:
    """An MT protocol's parameters, wherever its client puts them: the query string, then a form
    or a JSON body over it; a field repeated in the query string or a form is a list."""
    args: dict[str, Any] = {}
    sources = [request.args]
    if not request.is_json:
        sources.append(request.form)
    for source in sources:
        for key in source:
            values = source.getlist(key)
            args[key] = values if len(values) > 1 else values[0]
    if request.is_json and request.get_data(cache=True).strip():
        args.update(json_body())
    return args


def string_arg(args: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    """A string parameter of `request_arguments`; empty counts as absent."""
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise InvalidInput(f"missing parameter '{name}'", field=name)
        return None
    if not isinstance(value, str):
        raise InvalidInput(
            f"parameter '{name}' must be a string, not {json_name(value)}", field=name
        )
    return value
