"""One small family of exceptions; each carries the HTTP status the server answers with."""

from __future__ import annotations


class TMGuideError(Exception):
    """Base class: a user-facing error with a message that says what is wrong and where."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict[str, str]:
        body = {"error": self.code, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body


class InvalidInput(TMGuideError):
    status = 400
    code = "invalid_input"


class Unauthorized(TMGuideError):
    status = 401
    code = "unauthorized"


class Forbidden(TMGuideError):
    status = 403
    code = "forbidden"


class NotFound(TMGuideError):
    status = 404
    code = "not_found"


class Conflict(TMGuideError):
    status = 409
    code = "conflict"


class PayloadTooLarge(TMGuideError):
    status = 413
    code = "payload_too_large"


class Unprocessable(TMGuideError):
    status = 422
    code = "unprocessable"


class ImportFormatError(Unprocessable):
    """A malformed import file; the message names the file, line and what is wrong."""

    code = "import_format_error"

    def __init__(self, path: str, line: int | None, what: str) -> None:
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {what}")
        self.path = path
        self.line = line


class RequestTimedOut(TMGuideError):
    """A request ran past the server's time limit and was cancelled in its thread (the
    watchdog raises it there, so it takes no arguments)."""

    status = 503
    code = "request_timeout"

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(
            message
            or "the request ran past the server's time limit and was cancelled; "
            "try again, or ask for less at once",
            field=field,
        )


class ModelError(TMGuideError):
    """A missing, corrupted or mismatched model bundle."""

    status = 500
    code = "model_error"
