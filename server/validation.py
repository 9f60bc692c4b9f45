"""Reading request bodies and fields with errors that name exactly what is wrong and where."""

from __future__ import annotations

import json
from typing import Any

from flask import request

from tm_guide.errors import InvalidInput, PayloadTooLarge


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
    _refuse_cut_chunked_body(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"request body is not valid UTF-8 (byte {exc.start}: {exc.reason})", field="body"
        ) from None
    if not text.strip():
        raise InvalidInput("request body is empty; a JSON object is expected", field="body")
    try:
        body = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", field="body"
        ) from None
    except RecursionError:
        raise InvalidInput(_too_deep(), field="body") from None
    if not isinstance(body, dict):
        raise InvalidInput(
            f"request body must be a JSON object, not {json_name(body)}", field="body"
        )
    _check_values(body)
    return body


def _refuse_cut_chunked_body(raw: bytes) -> None:
    """A chunked body (no Content-Length) is read up to the body limit and no further, so one
    over it would arrive cut at the limit: counted here, it is a 413, as with Content-Length."""
    limit = request.max_content_length
    if request.content_length is not None or limit is None or len(raw) < limit:
        return
    if request.environ["wsgi.input"].read(1):
        raise PayloadTooLarge(f"request body is larger than allowed ({limit} bytes)", field="body")


# No request of any protocol nests deeper than a few levels or sends a number of more digits
# than a float holds; bounding both keeps the reader, the schema checks and every walk over a
# body from recursing or computing without limit.
MAX_JSON_DEPTH = 32
MAX_INTEGER_DIGITS = 40


def _too_deep() -> str:
    return f"request body nests more than {MAX_JSON_DEPTH} levels of lists and objects"


def _refuse_constant(name: str) -> Any:
    """NaN and Infinity are no JSON (RFC 8259); Python's reader would take them."""
    raise InvalidInput(f"{name} is not a JSON number", field="body")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise InvalidInput(
            f"a number in the request body has more than {MAX_INTEGER_DIGITS} digits",
            field="body",
        )
    return int(digits)


def _check_values(body: dict[str, Any]) -> None:
    """Refuses a body nested deeper than MAX_JSON_DEPTH, and text holding a lone UTF-16
    surrogate (JSON's `\\ud800` escapes can spell half a character, which no text can hold),
    naming the field, before anything tries to encode it. Iterative: a deep body cannot make
    this walk recurse."""
    stack: list[tuple[Any, str, int]] = [(body, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                field = where or "body"
                raise InvalidInput(
                    f"field '{field}' holds a lone UTF-16 surrogate (half a character)",
                    field=field,
                ) from None
            continue
        if isinstance(value, dict | list) and depth > MAX_JSON_DEPTH:
            raise InvalidInput(_too_deep(), field="body")
        if isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, where or "body", depth))
                stack.append((item, f"{where}.{key}" if where else str(key), depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))


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
