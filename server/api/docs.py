"""The OpenAPI 3 description of this API, as JSON and as YAML, with this server's limits."""

from __future__ import annotations

import yaml
from flask import Blueprint, Response, jsonify

from tm_guide.server.api.common import services
from tm_guide.server.document import served_document

blueprint = Blueprint("docs", __name__, url_prefix="/v1")


@blueprint.get("/openapi.json")
def openapi_json() -> Response:
    return jsonify(served_document(services().config.limits))


@blueprint.get("/openapi.yaml")
def openapi_yaml() -> Response:
    document = served_document(services().config.limits)
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return Response(text, mimetype="application/yaml")
