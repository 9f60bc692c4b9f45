"""gunicorn's own error answers (a request line too long, headers too large, a malformed request)
as JSON, like every answer of the app, instead of its HTML page.

These errors happen before the app sees the request, in the worker's parser; gunicorn writes
them to the client socket itself. The worker class here hands gunicorn a socket that turns that
one write into `{"error": ..., "message": ...}` with the same status.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

_STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3}) ([^\r\n]*)\r\n")


def json_error_response(html_response: bytes) -> bytes:
    """The JSON answer for the HTML error response gunicorn composed (its status kept)."""
    found = _STATUS_LINE.match(html_response)
    if found is None:
        return html_response
    status, reason = int(found.group(1)), found.group(2).decode("latin-1")
    body = json.dumps(
        {
            "error": re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_") or "bad_request",
            "message": f"{reason.lower() or 'bad request'}: the server could not read the request",
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1")
    return head + body


class _JsonErrorSocket:
    """The client socket, but for sendall: the one write of an error response."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(json_error_response(bytes(data)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class JsonErrorThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker whose parse errors are answered in JSON."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        super().handle_error(req, _JsonErrorSocket(client), addr, exc)
