"""The OpenAPI document this server serves, and the request checks read from it.

The document is the one statement of what a request may hold: its types, required fields,
ranges, patterns and unknown-field rules are checked here, from the document, and nowhere else.
Bounds an operator can configure (segment length, batch size, M, beam size) are marked in the
YAML with `x-limit: {keyword: Limits field}`; the served document carries the configured value,
so what clients read and what the server refuses never differ.

Handlers call `request_body()` / `query_arguments()` after authenticating, so that a client
without a key learns nothing from a 400 before its 401. What the document cannot say (a memory
named twice, a tag of no known language, a reward weighting's grammar) stays with the handler.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml
from flask import current_app, request
from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS30Validator, oas30_format_checker

from tm_guide.errors import InvalidInput
from tm_guide.server.config import Limits
from tm_guide.server.validation import json_body, json_name

JSON = "application/json"
_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "a list",
    "object": "an object",
}


def document_text() -> str:
    """The document as written (YAML), before the configured limits are put into it."""
    return resources.files("tm_guide.server").joinpath("openapi.yaml").read_text(encoding="utf-8")


@functools.cache
def _written_document() -> dict[str, Any]:
    return yaml.safe_load(document_text())


@functools.cache
def openapi_path(rule: str) -> str:
    """A Flask URL rule as the document spells its path: `<int:segment_id>` -> `{segment_id}`."""
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)


def served_document(limits: Limits) -> dict[str, Any]:
    """The document with every `x-limit` keyword set to `limits`' value (shared: do not change
    it)."""
    return _ApiDocument.for_limits(limits).document


@dataclass(frozen=True)
class _Check:
    """A compiled validator and the schema it checks, references resolved (for its words)."""

    validator: OAS30Validator
    schema: dict[str, Any]

    def __call__(self, value: Any, where: str = "", *, query: bool = False) -> None:
        # the deepest fault first: a bad field says more than "matches none of the forms"
        ranked = sorted(
            self.validator.iter_errors(value),
            key=lambda e: (-len(e.path), e.validator in ("oneOf", "anyOf", "not")),
        )
        if ranked:
            message, field = _explain(ranked[0], self.schema, where, query=query)
            raise InvalidInput(message, field=field or "body")


@dataclass(frozen=True)
class _Parameter:
    """A query parameter of an operation, checked by its schema in the document."""

    name: str
    required: bool
    check: _Check


@dataclass(frozen=True)
class _Operation:
    """One method of one route: the check of its JSON body (None: it takes none) and its query
    parameters."""

    body: _Check | None = None
    query: tuple[_Parameter, ...] = ()


class _ApiDocument:
    """A document with its limits applied and a compiled validator for every operation."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._components = document.get("components", {})
        self.operations: dict[tuple[str, str], _Operation] = {}
        for path, item in document["paths"].items():
            shared = item.get("parameters", [])
            for method, operation in item.items():
                if method == "parameters":
                    continue
                self.operations[(method.upper(), path)] = self._compile(
                    operation, shared + operation.get("parameters", [])
                )

    @classmethod
    @functools.cache
    def for_limits(cls, limits: Limits) -> _ApiDocument:
        document = copy.deepcopy(_written_document())
        _apply_limits(document, limits)
        return cls(document)

    def _check(self, schema: dict[str, Any]) -> _Check:
        # `#/components/...` references resolve against the root the validator is given
        validator = OAS30Validator(
            {**schema, "components": self._components}, format_checker=oas30_format_checker
        )
        return _Check(validator, self._resolve(schema))

    def _resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = self._components_at(node["$ref"])
        return node

    def _components_at(self, ref: str) -> dict[str, Any]:
        node: Any = self.document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def _compile(self, operation: dict[str, Any], parameters: list[dict]) -> _Operation:
        content = operation.get("requestBody", {}).get("content", {}).get(JSON, {})
        body = self._check(content["schema"]) if "schema" in content else None
        query = []
        for parameter in map(self._resolve, parameters):
            if parameter["in"] == "query":
                check = self._check(parameter.get("schema", {}))
                query.append(_Parameter(parameter["name"], bool(parameter.get("required")), check))
        return _Operation(body, tuple(query))

    def operation(self, method: str | None = None) -> _Operation:
        """The request's operation (another method of its route where `method` is given)."""
        rule = request.url_rule.rule if request.url_rule is not None else ""
        return self.operations.get((method or request.method, openapi_path(rule)), _Operation())


def _apply_limits(node: Any, limits: Limits) -> None:
    if isinstance(node, dict):
        for keyword, limit in node.get("x-limit", {}).items():
            node[keyword] = getattr(limits, limit)
        for value in node.values():
            _apply_limits(value, limits)
    elif isinstance(node, list):
        for value in node:
            _apply_limits(value, limits)


def _current() -> _ApiDocument:
    return _ApiDocument.for_limits(current_app.extensions["tm_guide"].config.limits)


def request_body() -> dict[str, Any]:
    """The JSON body, checked against the operation's documented schema."""
    body = json_body()
    check = _current().operation().body
    if check is not None:
        check(body)
    return body


def protocol_arguments(args: dict[str, Any], method: str | None = None) -> dict[str, Any]:
    """An MT protocol's parameters (validation.request_arguments: the query string, a form or a
    JSON body, merged), checked against the operation's documented request schema as /v1's
    bodies are. Text that a form or a query string gives for a documented number or boolean is
    read as one first (`alternatives=2` in a form is the integer 2), and an optional form field
    left empty (`format=`) is absent. `method` names the operation whose request body
    documents the parameters, where the request's own carries them elsewhere (ModernMT's GET
    takes its POST's parameters in the query string or, behind a method override, a body)."""
    document = _current()
    check = document.operation(method).body
    if check is None:
        return args
    properties = check.schema.get("properties", {})
    # a form's or query string's empty optional field is an absent one (forms send unset
    # fields); in JSON, "" is a value, checked as any other
    keep_empty = set(check.schema.get("required", ())) if not request.is_json else set(args)
    typed = {
        name: _as_documented(document, name, properties.get(name), value)
        for name, value in args.items()
        if value != "" or name in keep_empty
    }
    check(typed)
    return typed


def _as_documented(
    document: _ApiDocument, name: str, schema: dict[str, Any] | None, value: Any
) -> Any:
    """`value`, or the number or boolean its text spells where the schema takes no string; in
    lower case where the document marks the parameter `x-case-insensitive` (DeepL's `XML`)."""
    if schema is None or not isinstance(value, str):
        return value
    if schema.get("x-case-insensitive"):
        return value.lower()
    kinds = _kinds(document, schema)
    if "string" in kinds:
        return value
    for kind in ("integer", "number", "boolean"):
        if kind in kinds:
            try:
                return _cast(name, kind, value)
            except InvalidInput:
                continue
    return value


def _kinds(document: _ApiDocument, schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema (its alternatives included) accepts."""
    schema = document._resolve(schema)
    kinds = {schema["type"]} if "type" in schema else set()
    for key in ("anyOf", "oneOf", "allOf"):
        for alternative in schema.get(key, ()):
            kinds |= _kinds(document, alternative)
    return kinds


def query_arguments() -> dict[str, Any]:
    """The operation's documented query parameters, typed as the document says, defaults filled
    in, each checked against its schema; undocumented ones are not returned."""
    values: dict[str, Any] = {}
    for parameter in _current().operation().query:
        raw = request.args.getlist(parameter.name)
        if not raw or raw == [""]:
            if parameter.required:
                raise InvalidInput(
                    f"query parameter '{parameter.name}' is required", field=parameter.name
                )
            values[parameter.name] = parameter.check.schema.get("default")
            continue
        value = _typed(parameter, raw)
        parameter.check(value, parameter.name, query=True)
        values[parameter.name] = value
    return values


def _typed(parameter: _Parameter, raw: list[str]) -> Any:
    schema = parameter.check.schema
    kind = schema.get("type", "string")
    if kind == "array":
        item_kind = schema.get("items", {}).get("type", "string")
        return [_cast(parameter.name, item_kind, text) for text in raw]
    return _cast(parameter.name, kind, raw[-1])


def _cast(name: str, kind: str, text: str) -> Any:
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            number = float(text)
            if not math.isfinite(number):  # nan, inf: no JSON number, and no setting's value
                raise ValueError(text)
            return number
    except ValueError:
        raise InvalidInput(
            f"query parameter '{name}' must be {_TYPE_NAMES[kind]}, not {text!r}", field=name
        ) from None
    if kind == "boolean":
        if text.lower() not in ("true", "false"):
            raise InvalidInput(
                f"query parameter '{name}' must be true or false, not {text!r}", field=name
            )
        return text.lower() == "true"
    return text


def _explain(
    error: ValidationError, root: dict[str, Any], where: str, *, query: bool
) -> tuple[str, str]:
    """(message, field) for the error, descending into the alternative of a oneOf/anyOf that the
    value was meant to follow: one it does not contradict (no `not` failed) and whose type fits."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        by_alternative: dict[Any, list[ValidationError]] = {}
        for sub in error.context:
            by_alternative.setdefault(sub.relative_schema_path[0], []).append(sub)
        place = _place(where, list(error.absolute_path))
        kinds = [
            sub.validator_value
            for subs in by_alternative.values()
            for sub in subs
            if sub.validator == "type" and not sub.path
        ]
        if len(kinds) == len(by_alternative):  # fits none of the alternatives' types
            return _type_message(_subject(place, query), kinds, error.instance), place
        meant = [
            subs
            for subs in by_alternative.values()
            if not any(s.validator in ("not", "type") and not s.path for s in subs)
        ]
        if not meant:  # contradicts every form: the rule is the schema's own words
            rule = error.schema.get("description") or (
                root.get("description") if not place else None
            )
            extra = _excess_field(by_alternative.values(), error.instance)
            if extra is not None:
                field = _place(place, [extra])
                return f"field '{field}' must be left out" + (f": {rule}" if rule else ""), field
            subject = _subject(place, query)
            return (f"{subject} must be {rule}" if rule else f"{subject}: {error.message}"), place
        error = max(meant[0], key=lambda sub: len(sub.path))
    return _message(error, where, query=query)


def _excess_field(alternatives: Any, instance: Any) -> str | None:
    """The field that keeps the value out of the form it otherwise fits best (the alternative
    with the fewest faults besides a `not`): the first field that its `not` forbids and the
    value holds."""
    closest = min(alternatives, key=lambda subs: sum(s.validator != "not" for s in subs))
    for sub in closest:
        if sub.validator == "not" and isinstance(instance, dict):
            forbidden = sub.validator_value
            for form in forbidden.get("anyOf", [forbidden]):
                held = [name for name in form.get("required", []) if name in instance]
                if held and len(held) == len(form.get("required", [])):
                    return held[0]
    return None


def _subject(place: str, query: bool) -> str:
    if not place:
        return "body"
    return f"query parameter '{place}'" if query else f"field '{place}'"


def _type_message(subject: str, kinds: list[Any], value: Any) -> str:
    flat = [k for kind in kinds for k in (kind if isinstance(kind, list) else [kind])]
    expected = " or ".join(_TYPE_NAMES.get(k, k) for k in dict.fromkeys(flat))
    return f"{subject} must be {expected}, not {json_name(value)}"


def _place(where: str, path: list[Any]) -> str:
    place = where
    for step in path:
        if isinstance(step, int):
            place += f"[{step}]"
        else:
            place = f"{place}.{step}" if place else str(step)
    return place


def _message(error: ValidationError, where: str, *, query: bool) -> tuple[str, str]:
    """One sentence a client's developer can act on, naming the field as the JSON spells it."""
    place = _place(where, list(error.absolute_path))
    subject = _subject(place, query)
    schema, value, keyword = error.schema, error.instance, error.validator
    if keyword == "required":
        missing = error.message.split("'")[1]
        field = _place(place, [missing])
        return f"field '{field}' is required", field
    if keyword == "additionalProperties":
        known = sorted(schema.get("properties", {}))
        field = _place(place, [sorted(set(value) - set(known))[0]])
        return f"unknown field '{field}'; expected one of: {', '.join(known)}", field
    if keyword == "type":
        return _type_message(subject, [schema["type"]], value), place
    if keyword == "not" and list(error.validator_value) == ["required"]:
        field = _place(place, [error.validator_value["required"][0]])
        rule = schema.get("description")
        return f"field '{field}' must be left out" + (f": {rule}" if rule else ""), field
    return _constraint_message(error, subject), place


# the size rules' messages: the value's size against the rule's bound
_SIZE_MESSAGES = {
    "minItems": "{subject} has {size} items; it needs at least {bound}",
    "minLength": "{subject} is {size} characters long; it needs at least {bound}",
    "maxLength": "{subject} is {size} characters long; the limit is {bound}",
    "maxItems": "{subject} has {size} items; the limit is {bound}",
}


def _constraint_message(error: ValidationError, subject: str) -> str:
    schema, value, keyword, bound = (
        error.schema,
        error.instance,
        error.validator,
        error.validator_value,
    )
    if keyword in ("minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"{subject} must be between {low} and {high}, not {value}"
        side = "at least" if keyword == "minimum" else "at most"
        return f"{subject} must be {side} {bound}, not {value}"
    if keyword in ("minLength", "minItems") and bound == 1:
        return f"{subject} must not be empty"
    if keyword in _SIZE_MESSAGES:
        return _SIZE_MESSAGES[keyword].format(subject=subject, size=len(value), bound=bound)
    if keyword == "uniqueItems":
        return f"{subject} holds the same item twice"
    if keyword == "enum":
        return f"{subject} must be one of {', '.join(repr(v) for v in bound)}, not {value!r}"
    if keyword == "pattern" and bound == "\\S":
        return f"{subject} must not be empty or white space"
    if keyword == "pattern":
        what = schema.get("description") or f"text matching {bound}"
        return f"{subject} must be {what}; {_shown(value)} is not"
    return f"{subject}: {error.message}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
