"""Liveness, readiness (database reachable, model loaded) and Prometheus metrics; no key needed."""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, jsonify

from tm_guide.server.api.common import services
from tm_guide.server.translation import engine_status

log = logging.getLogger(__name__)
blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
def health() -> Response:
    """The process answers; says nothing about its dependencies (that is /ready)."""
    return jsonify({"status": "ok"})


@blueprint.get("/ready")
def ready() -> tuple[Response, int]:
    """Ready when the database answers and the model is loaded; the first call loads the model.
    Indexes being caught up or rebuilt are listed with their progress: lookups of those memories
    are answered from the database meanwhile, so they do not make the server unready."""
    checks: dict[str, str] = {}
    repairs: list[dict[str, Any]] = []
    ok = True
    try:
        store = services().store()
        store.list_memories()
        checks["database"] = "ok"
        repairs = [repair.as_dict() for repair in store.index_repairs_under_way()]
    except Exception as exc:  # readiness reports any failure instead of raising it
        log.warning("readiness: database check failed: %s", exc)
        checks["database"] = f"error: {type(exc).__name__}"
        ok = False
    engine = None
    if ok:
        try:
            translator = services().translator()
            checks["model"] = "ok"
            engine = engine_status(translator, services().config.compute)
        except Exception as exc:
            log.warning("readiness: model check failed: %s", exc)
            # the class, not the message, which names the server's files: the log has it
            checks["model"] = f"error: {type(exc).__name__}"
            ok = False
    body: dict[str, Any] = {
        "status": "ready" if ok else "not_ready",
        "checks": checks,
        "index_repairs": repairs,
    }
    if engine is not None:
        body["engine"] = engine
    return jsonify(body), 200 if ok else 503


@blueprint.get("/metrics")
def metrics() -> Response:
    from tm_guide.server.metrics import CONTENT_TYPE

    return Response(services().metrics.render(), content_type=CONTENT_TYPE)
