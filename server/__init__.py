"""tm-guide HTTP server: a Flask application factory with one blueprint per area."""

from __future__ import annotations

import logging
import time

from flask import Flask, Response, g, request

from tm_guide.server import arrival
from tm_guide.server.config import ServerConfig
from tm_guide.server.errors import register_error_handlers
from tm_guide.server.services import Services
from tm_guide.server.watchdog import Watchdog

log = logging.getLogger(__name__)


def create_app(config: ServerConfig | None = None) -> Flask:
    """Build the app; cheap (no database, no model) so that gunicorn can fork it into workers."""
    config = config or ServerConfig.from_env()
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = config.limits.max_body_bytes
    app.json.sort_keys = False  # type: ignore[attr-defined]
    services = Services(config)
    app.extensions["tm_guide"] = services
    if not config.auth_enabled:
        log.warning("authentication is off: only loopback clients are served")

    register_error_handlers(app)
    _register_blueprints(app, config)
    _register_request_metrics(app, services)
    _register_watchdog(app, Watchdog(config.limits.request_timeout_s))
    return app


def _register_watchdog(app: Flask, watchdog: Watchdog) -> None:
    app.extensions["tm_guide_watchdog"] = watchdog

    @app.before_request
    def watch() -> None:
        # the route's rule, not the path, which may carry a key (/tmserver/key/<token>)
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        g.watch = watchdog.start_request(f"{request.method} {rule}")

    @app.teardown_request
    def unwatch(_exc: BaseException | None) -> None:
        watchdog.end_request(g.pop("watch", None))


def _register_blueprints(app: Flask, config: ServerConfig) -> None:
    """tm-guide's own API, its web console (unless TM_GUIDE_UI=off), then each CAT-tool protocol
    that TM_GUIDE_PROTOCOLS serves (tm_guide.server.protocol)."""
    from tm_guide.server.api import docs, health, jobs, memories, segments, suggest
    from tm_guide.server.api.protocols import FRONT_ENDS

    for module in (health, docs, memories, segments, suggest, jobs):
        app.register_blueprint(module.blueprint)
    if config.ui_enabled:
        from tm_guide.server import console

        app.register_blueprint(console.blueprint)
    for protocol in FRONT_ENDS:
        if config.protocols[protocol.name].enabled:
            protocol.register(app)


def _register_request_metrics(app: Flask, services: Services) -> None:
    @app.before_request
    def start_timer() -> None:
        # from when the request had arrived whole, its wait for a thread included
        g.started = arrival.arrived() or time.perf_counter()

    @app.after_request
    def count_request(response: Response) -> Response:
        degraded = g.get("degraded")
        if degraded is not None:  # decoded below its options to meet its deadline
            response.headers["X-TM-Guide-Degraded"] = degraded
        terms = g.get("glossary_terms")
        if terms:  # glossary entries that applied, and how many the translations hold
            held = sum(1 for term in terms if term.applied)
            response.headers["X-TM-Guide-Glossary-Terms"] = f"{held}/{len(terms)}"
            log.info(
                "glossary terms applied: %s",
                ", ".join(
                    f"{t.source} -> {t.target}{'' if t.applied else ' (missing)'}" for t in terms
                ),
            )
        started = g.get("started")
        endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
        services.metrics.requests.labels(
            endpoint=endpoint, method=request.method, status=str(response.status_code)
        ).inc()
        if started is not None:
            services.metrics.latency.labels(endpoint=endpoint, method=request.method).observe(
                time.perf_counter() - started
            )
        return response
