"""The gunicorn worker: gunicorn's threaded worker, with whole requests read before a thread is
given to them, and gunicorn's own errors answered in JSON.

Slow clients. gunicorn's threaded worker hands a connection to a request thread as soon as its
first bytes arrive, and the thread then blocks reading the rest: 16 clients sending their
headers a byte at a time hold all 16 threads, and every other request waits. Here the worker's
main loop, which waits on every socket at once, reads what each connection has sent, without
blocking, until the request head is complete, and its body too when it is small (a JSON body up
to BUFFERED_BODY_MAX with a Content-Length); only then does a thread take it, and the parser
reads those bytes from memory. A connection that has not sent that much within
REQUEST_READ_TIMEOUT_S is closed without ever holding a thread.

Errors. Errors gunicorn answers before the app sees the request (a request line over its limit,
headers too large, a malformed request) it writes as an HTML page. The worker hands gunicorn a
socket that turns that one write into `{"error": ..., "message": ...}` with the same status.
"""

from __future__ import annotations

import contextlib
import json
import re
import selectors
import socket
import time
from functools import partial
from typing import Any

from gunicorn.workers.gthread import ThreadWorker

from tm_guide.server import arrival

REQUEST_READ_TIMEOUT_S = 30.0  # to send the head (and a small body) of one request
BUFFERED_BODY_MAX = 1024 * 1024  # bodies up to this are read before a thread is given
HEAD_MAX = 128 * 1024  # past this much without the end of the head, the parser says why (431)
_HEAD_END = b"\r\n\r\n"
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*([0-9]{1,12})[ \t]*\r?$", re.I | re.M)
_EXPECT_CONTINUE = re.compile(rb"^expect[ \t]*:[ \t]*100-continue", re.I | re.M)
_STATUS_LINE = re.compile(rb"^HTTP/1\.[01] (\d{3}) ([^\r\n]*)\r\n")


def _complete(data: bytes | bytearray) -> bool:
    wanted = request_bytes_wanted(data)
    return wanted is not None and len(data) >= wanted


def request_bytes_wanted(data: bytes | bytearray) -> int | None:
    """How many bytes of `data` make up what a thread needs before it starts on the request:
    the head, plus a small body of known length; None while the head is incomplete."""
    end = data.find(_HEAD_END)
    if end < 0:
        return len(data) if len(data) >= HEAD_MAX else None
    head = data[: end + len(_HEAD_END)]
    length = _CONTENT_LENGTH.search(head)
    if length is None or _EXPECT_CONTINUE.search(head):
        return len(head)  # chunked, no body, or a client that waits to be told to send it
    body = int(length.group(1))
    return len(head) + body if body <= BUFFERED_BODY_MAX else len(head)


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


class TMGuideWorker(ThreadWorker):  # type: ignore[misc]
    """gunicorn's threaded worker that reads whole requests on its main loop and answers its
    own errors in JSON."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting: set[Any] = set()  # connections still sending their request

    def enqueue_req(self, conn: Any) -> None:
        """Runs on the main loop for every connection with something to read: gathers what it
        sent, and gives it to a thread once the request is there (see the module docstring)."""
        received = getattr(conn, "tmg_received", None)
        if received is None:
            received = conn.tmg_received = bytearray()
            conn.tmg_deadline = time.monotonic() + REQUEST_READ_TIMEOUT_S
        if conn.parser is not None:  # a kept-alive connection: the parser may hold read-ahead
            received[:0] = conn.parser.unreader.take_buffered()
        while not _complete(received):
            try:
                data = conn.sock.recv(65536, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                data = b""
            if not data:  # closed: the parser says what a cut request is
                self._hand_over(conn)
                return
            received += data
        if _complete(received):
            self._hand_over(conn)
        elif time.monotonic() > conn.tmg_deadline:
            self.nr_conns -= 1
            conn.close()
        else:
            self._waiting.add(conn)
            self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._more, conn))

    def _more(self, conn: Any, sock: Any) -> None:
        self.poller.unregister(sock)
        self._waiting.discard(conn)
        self.enqueue_req(conn)

    def _hand_over(self, conn: Any) -> None:
        data = bytes(conn.tmg_received)
        del conn.tmg_received, conn.tmg_deadline
        conn.tmg_arrived = time.perf_counter()
        if data:
            conn.tmg_head = data
        conn.data_ready = True
        super().enqueue_req(conn)

    def murder_pending(self) -> None:
        """gunicorn's own expiry, then the connections still sending their request."""
        super().murder_pending()
        now = time.monotonic()
        for conn in [c for c in self._waiting if c.tmg_deadline < now]:
            self._waiting.discard(conn)
            with contextlib.suppress(OSError, KeyError, ValueError):
                self.poller.unregister(conn.sock)
            self.nr_conns -= 1
            conn.close()

    def handle(self, conn: Any) -> Any:
        """Runs in a request thread: the parser starts on the bytes the main loop gathered."""
        head = getattr(conn, "tmg_head", None)
        if head is not None:
            del conn.tmg_head
            conn.sock.setblocking(True)
            conn.init()
            if conn.parser is not None:
                conn.parser.unreader.unread(head)
        arrival.mark(getattr(conn, "tmg_arrived", None))
        try:
            return super().handle(conn)
        finally:
            arrival.mark(None)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        super().handle_error(req, _JsonErrorSocket(client), addr, exc)
