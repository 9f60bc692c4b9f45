"""Every route the app serves is in the OpenAPI spec with its methods, and nothing else is."""

from __future__ import annotations

import re

from tm_guide.server import create_app
from tm_guide.server.config import Limits, ServerConfig
from tm_guide.server.document import openapi_path, served_document

IGNORED_METHODS = {"HEAD", "OPTIONS"}


def app_routes() -> set[tuple[str, str]]:
    app = create_app(ServerConfig())
    routes = set()
    for rule in app.url_map.iter_rules():
        path = openapi_path(rule.rule)
        for method in rule.methods - IGNORED_METHODS:
            routes.add((method, path))
    return routes


def spec_routes() -> set[tuple[str, str]]:
    document = served_document(Limits())
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }


def test_every_route_is_documented_and_every_documented_route_exists() -> None:
    assert app_routes() == spec_routes()


def _parameter_names(document: dict, parameters: list[dict]) -> set[str]:
    names = set()
    for parameter in parameters:
        if "$ref" in parameter:
            parameter = document["components"]["parameters"][parameter["$ref"].rsplit("/", 1)[-1]]
        names.add(parameter["name"])
    return names


def test_spec_is_openapi_3_and_documents_path_parameters() -> None:
    document = served_document(Limits())
    assert document["openapi"].startswith("3.")
    for path, item in document["paths"].items():
        shared = _parameter_names(document, item.get("parameters", []))
        for method, operation in item.items():
            if method == "parameters":
                continue
            names = shared | _parameter_names(document, operation.get("parameters", []))
            for placeholder in re.findall(r"{([a-z_]+)}", path):
                assert placeholder in names, f"{method.upper()} {path}: {placeholder} undocumented"
            assert operation["responses"], f"{method.upper()} {path} has no responses"


def test_spec_is_valid_openapi_with_no_field_lost_to_yaml() -> None:
    """A comma inside a `{...}` flow mapping silently splits a description into a key with no
    value; the validator does not always notice, so no value may be null."""
    from openapi_spec_validator import validate

    document = served_document(Limits())
    validate(document)

    def nulls(node: object, path: str) -> list[str]:
        if isinstance(node, dict):
            found = [f"{path}/{k}" for k, v in node.items() if v is None]
            return found + [p for k, v in node.items() for p in nulls(v, f"{path}/{k}")]
        if isinstance(node, list):
            return [p for i, v in enumerate(node) for p in nulls(v, f"{path}[{i}]")]
        return []

    assert nulls(document, "") == []
