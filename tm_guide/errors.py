"""One small family of exceptions; each carries the HTTP status the server answers with."""

from __future__ import annotations


class TMGuideError(Exception):
    """Base class: a user-facing error with a message that says what is wrong and where.

    A subclass states its HTTP status and error code in its class line, so that each kind of
    error is one line to read: `class NotFound(TMGuideError, status=404, code="not_found")`.
    """

    status: int = 500
    code: str = "internal_error"

    def __init_subclass__(cls, *, status: int | None = None, code: str | None = None) -> None:
        super().__init_subclass__()
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict[str, str]:
        body = {"error": self.code, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body


class InvalidInput(TMGuideError, status=400, code="invalid_input"):
    """The request or a setting is malformed."""


class Unauthorized(TMGuideError, status=401, code="unauthorized"):
    """No key, or a key the server does not know."""


class Forbidden(TMGuideError, status=403, code="forbidden"):
    """The key is known but may not do this."""


class NotFound(TMGuideError, status=404, code="not_found"):
    """A memory, segment, glossary, job or route that does not exist."""


class Conflict(TMGuideError, status=409, code="conflict"):
    """The request contradicts what is stored (a name taken, a revision moved on)."""


class PayloadTooLarge(TMGuideError, status=413, code="payload_too_large"):
    """A text, batch or upload over its configured limit."""


class Unprocessable(TMGuideError, status=422, code="unprocessable"):
    """Well-formed input that cannot be used (an unreadable file, an unknown language)."""


class ImportFormatError(Unprocessable, code="import_format_error"):
    """A malformed import file; the message names the file, line and what is wrong."""

    def __init__(self, path: str, line: int | None, what: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {what}")
        self.path = path
        self.line = line


class RequestTimedOut(TMGuideError, status=503, code="request_timeout"):
    """A request ran past the server's time limit and was cancelled in its thread (the
    watchdog raises it there, so it takes no arguments)."""

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(
            message
            or "the request ran past the server's time limit and was cancelled; "
            "try again, or ask for less at once",
            field=field,
        )


class ModelError(TMGuideError, status=500, code="model_error"):
    """A missing, corrupted or mismatched model bundle."""
