"""Server configuration: the shared `Settings` plus the limits and switches of the HTTP server."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tm_guide.config import Settings
from tm_guide.errors import InvalidInput

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for, so that one client cannot exhaust a worker."""

    max_body_bytes: int = 1 * MIB
    max_import_bytes: int = 512 * MIB
    max_batch_size: int = 64
    max_segment_chars: int = 2000
    max_m: int = 100
    max_beam_size: int = 16


@dataclass(frozen=True)
class ServerConfig:
    """Everything `create_app` needs; built from environment variables by `from_env`.

    TM_GUIDE_AUTH                 on (default) or off; off is honoured only for loopback clients
    TM_GUIDE_TMSERVER_ANONYMOUS   1 lets the read-only tmserver endpoint answer without a key
    TM_GUIDE_JOBS_DIR             import uploads and job state (default: beside the index)
    TM_GUIDE_MAX_BODY_BYTES, TM_GUIDE_MAX_IMPORT_BYTES, TM_GUIDE_MAX_BATCH_SIZE,
    TM_GUIDE_MAX_SEGMENT_CHARS    the limits
    """

    settings: Settings = field(default_factory=Settings)
    limits: Limits = field(default_factory=Limits)
    auth_enabled: bool = True
    tmserver_anonymous: bool = False
    jobs_dir: Path | None = None

    @property
    def resolved_jobs_dir(self) -> Path:
        if self.jobs_dir is not None:
            return self.jobs_dir
        index_dir = self.settings.index_dir
        return index_dir.with_name(index_dir.name + ".jobs")

    @classmethod
    def from_env(cls, settings: Settings | None = None) -> ServerConfig:
        settings = settings or Settings.from_env()
        defaults = Limits()
        limits = Limits(
            max_body_bytes=_int_env("TM_GUIDE_MAX_BODY_BYTES", defaults.max_body_bytes),
            max_import_bytes=_int_env("TM_GUIDE_MAX_IMPORT_BYTES", defaults.max_import_bytes),
            max_batch_size=_int_env("TM_GUIDE_MAX_BATCH_SIZE", defaults.max_batch_size),
            max_segment_chars=_int_env("TM_GUIDE_MAX_SEGMENT_CHARS", defaults.max_segment_chars),
        )
        jobs_dir = os.environ.get("TM_GUIDE_JOBS_DIR", "").strip()
        return cls(
            settings=settings,
            limits=limits,
            auth_enabled=_switch_env("TM_GUIDE_AUTH", True),
            tmserver_anonymous=_switch_env("TM_GUIDE_TMSERVER_ANONYMOUS", False),
            jobs_dir=Path(jobs_dir) if jobs_dir else None,
        )


_TRUE = {"1", "on", "true", "yes"}
_FALSE = {"0", "off", "false", "no"}


def _switch_env(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise InvalidInput(f"{name} must be on or off, not {raw!r}", field=name)


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw!r}", field=name) from None
    if value <= 0:
        raise InvalidInput(f"{name} must be positive, not {value}", field=name)
    return value
