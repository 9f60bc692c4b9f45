"""The OpenAPI 3 description of this API, served as JSON and as the YAML it is written in."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import yaml
from flask import Blueprint, Response, jsonify

blueprint = Blueprint("docs", __name__, url_prefix="/v1")


def spec_text() -> str:
    return resources.files("tm_guide.server").joinpath("openapi.yaml").read_text(encoding="utf-8")


@functools.cache
def spec() -> dict[str, Any]:
    return yaml.safe_load(spec_text())


@blueprint.get("/openapi.json")
def openapi_json() -> Response:
    return jsonify(spec())


@blueprint.get("/openapi.yaml")
def openapi_yaml() -> Response:
    return Response(spec_text(), mimetype="application/yaml")
