"""Every error leaves the server as JSON with its status, never a stack trace or HTML.

`/v1` and tmserver answer `{error, message, field}`; each MT protocol (LibreTranslate, ModernMT,
DeepL) registers the error body its clients parse for the routes under its prefix."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, current_app, has_request_context, jsonify, request
from sqlalchemy.exc import InterfaceError, OperationalError
from werkzeug.exceptions import HTTPException

from tm_guide.errors import ModelError, TMGuideError

log = logging.getLogger(__name__)


# (status, code, message, field) -> (status, body): a protocol may answer with other statuses
ErrorBody = Callable[[int, str, str, "str | None"], tuple[int, Any]]
ERROR_BODIES = "tm_guide.error_bodies"


def default_body(status: int, code: str, message: str, field: str | None) -> tuple[int, Any]:
    body: dict[str, Any] = {"error": code, "message": message}
    if field:
        body["field"] = field
    return status, body


def register_error_body(app: Flask, url_prefix: str, shape: ErrorBody) -> None:
    """Errors under `url_prefix` (a protocol's routes, matched or not) take `shape`: each
    protocol's clients parse their own error JSON, and read ours as no answer at all."""
    app.extensions.setdefault(ERROR_BODIES, []).append((url_prefix.rstrip("/") + "/", shape))


def _shape_for_request() -> ErrorBody:
    if has_request_context():
        path = request.path
        for prefix, shape in current_app.extensions.get(ERROR_BODIES, ()):
            if path.startswith(prefix) or path == prefix[:-1]:
                return shape
    return default_body


def error_response(status: int, code: str, message: str, field: str | None = None) -> Response:
    status, body = _shape_for_request()(status, code, message, field)
    response = jsonify(body)
    response.status_code = status
    return response


def _code_for(exc: HTTPException) -> str:
    name = exc.name or "error"
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _unavailable(code: str, what: str) -> Response:
    """503 for what the operator must fix on the server (a model, a database), said without
    its paths or driver messages; the log has them."""
    response = error_response(503, code, f"{what}; the server's log says why")
    response.headers["Retry-After"] = "30"
    return response


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(ModelError)
    def handle_model_error(exc: ModelError) -> Response:
        # the message names the bundle's files on this server: for its log, not for clients
        log.error("model unavailable: %s", exc.message)
        return _unavailable("model_unavailable", "the translation model cannot be loaded")

    @app.errorhandler(OperationalError)
    @app.errorhandler(InterfaceError)
    def handle_database_error(exc: Exception) -> Response:
        log.error("database unavailable: %s", exc)
        return _unavailable(
            "database_unavailable", "the translation memory database is unreachable"
        )

    @app.errorhandler(TMGuideError)
    def handle_tm_guide_error(exc: TMGuideError) -> Response:
        if exc.status >= 500:
            log.error("%s: %s", type(exc).__name__, exc.message)
        return error_response(exc.status, exc.code, exc.message, exc.field)

    @app.errorhandler(HTTPException)
    def handle_http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        message = exc.description or exc.name
        if status == 413:
            return error_response(413, "payload_too_large", "request body is larger than allowed")
        if status == 405:
            allowed = ", ".join(sorted(exc.valid_methods or []))  # type: ignore[attr-defined]
            message = f"method not allowed here; allowed: {allowed}" if allowed else message
        if status == 404:
            message = "no such endpoint"
        response = error_response(status, _code_for(exc), message)
        if status == 405 and getattr(exc, "valid_methods", None):
            response.headers["Allow"] = ", ".join(exc.valid_methods)  # type: ignore[attr-defined]
        return response

    @app.errorhandler(Exception)
    def handle_unexpected(exc: Exception) -> Response:
        log.exception("unhandled error")
        return error_response(500, "internal_error", "internal server error")
