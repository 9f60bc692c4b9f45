"""The web console under /ui: a page that shows what the TM does to a translation.

The page is static HTML, CSS and JavaScript: it reads and writes nothing itself, but calls the
same `/v1` API as any client, with the key the user enters (kept in the browser's session
storage). So it needs no session, cookie or CSRF handling of its own, and a key's scopes bound
what it can show exactly as they bound any other client.
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template

blueprint = Blueprint(
    "console",
    __name__,
    url_prefix="/ui",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

# Scripts and styles only from this server, no inline code, no framing: a page that holds an API
# key in its session storage must not run anything it did not ship.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


@blueprint.get("/")
def index() -> Response:
    return Response(render_template("console/index.html"), mimetype="text/html")


@blueprint.after_request
def security_headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
