"""Server configuration: the shared `Settings` plus the limits and switches of the HTTP server."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tm_guide.config import Settings
from tm_guide.errors import InvalidInput

MIB = 1024 * 1024
MAX_LAMBDA = 100.0  # the largest piece-reward weight a request or the server default may ask for


@dataclass(frozen=True)
class Limits:
    """Bounds on what one request may ask for, so that one client cannot exhaust a worker."""

    max_body_bytes: int = 1 * MIB
    max_import_bytes: int = 512 * MIB
    max_batch_size: int = 64
    max_segment_chars: int = 2000
    max_m: int = 100
    max_beam_size: int = 16
    # a request still running after this many seconds is cancelled in its thread (0: never)
    request_timeout_s: float = 120.0
    # a ModernMT or DeepL upload waits this long for the alignment of what it stored; a longer
    # one answers before it ends, and its import job reports the rest
    upload_wait_s: float = 2.0


@dataclass(frozen=True)
class Compute:
    """How a worker spends its CPU cores on decoding.

    Concurrent suggestion requests are decoded together: the decoding thread takes every request
    waiting (up to `batch_max_sentences` sentences), waiting at most `batch_wait_ms` after the
    oldest one arrived for companions, and runs one beam search over all of them. On a few cores
    this is what keeps up with many editors: one search over 16 sentences costs far less than 16
    searches competing for the same cores. `batch_max_sentences = 1` decodes each request in its
    own request thread instead (no batching). `decoders` decoding threads take rounds from the
    same queue, so that on a machine with cores to spare one batch decodes while another runs.

    `threads` is the intra-op thread count of the PyTorch and CTranslate2 engines; 0 means the
    CPUs this process may run on. The fused engine (the default on CPU) runs each batch on one
    core whatever it says; `decoders` is what gives it more cores. The default is 1: the
    decoding thread keeps one core and retrieval, pieces and writes of the request threads the
    others; and with 2 intra-op threads on 2 cores that something else also uses (a training
    run), every PyTorch op waits for a descheduled sibling thread: measured 34 s instead of
    1.1 s for one 30-token sentence.
    """

    batch_max_sentences: int = 32
    batch_wait_ms: float = 5.0
    threads: int = 1
    # decoding threads taking batches from the one queue (one per core that decoding may use)
    decoders: int = 1
    # request threads collecting TM pieces at once (0: no bound). Retrieval is Python work
    # under the GIL: 32 requests sharing it all finish late together, where taking turns
    # finishes the first ones early, inside their clients' deadlines (32 Weblate batches of 20
    # at once on 2 cores, bench/deadline_bench.py: unbounded 29 of 64 batches past 5 s, 1 or 2
    # slots none).
    retrieval_slots: int = 2
    # auto: the engine registry's choice (tm_guide.decoding.engines); rerank trades exactness
    # for native speed
    engine: str = "auto"
    # lambda (eq. 10) of requests that leave it open; None: the model card's guided_lambda
    # (tuned on a dev set with `tm-guide eval`), else 1
    default_lambda: float | None = None
    # how long past its deadline a sentence answered from the memory (tm-only) whose pieces were
    # not collected may still be looked up in the index; past it the sentence is answered as
    # it is. 32 Weblate batches of 20 strings at once had 640 such lookups, which took up to
    # 1.9 s past the deadline, when the client had given up (bench/deadline_bench.py)
    tm_only_grace_ms: float = 50.0

    def __post_init__(self) -> None:
        from tm_guide.decoding.engines import ENGINES

        if self.decoders < 1:
            raise InvalidInput(
                f"TM_GUIDE_DECODERS must be >= 1, not {self.decoders}", field="TM_GUIDE_DECODERS"
            )

        if self.engine not in ENGINES:
            raise InvalidInput(
                f"TM_GUIDE_ENGINE must be one of {', '.join(ENGINES)}, not {self.engine!r}",
                field="TM_GUIDE_ENGINE",
            )
        if self.default_lambda is not None and not 0 <= self.default_lambda <= MAX_LAMBDA:
            raise InvalidInput(
                f"TM_GUIDE_LAMBDA must be between 0 and {MAX_LAMBDA}, not {self.default_lambda}",
                field="TM_GUIDE_LAMBDA",
            )

    @property
    def batching(self) -> bool:
        return self.batch_max_sentences > 1

    @property
    def resolved_threads(self) -> int:
        if self.threads > 0:
            return self.threads
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            return max(1, os.cpu_count() or 1)


PROTOCOLS = ("tmserver", "libretranslate", "modernmt", "deepl")


# Weblate waits 5 s for its LibreTranslate, ModernMT and DeepL services (the vendors' own clients
# longer); an answer is due 2 s before, for the wait before the request is read and the work
# after the answer is decided. 32 Weblate batches of 20 strings at once, 3 rounds, on a 2-core
# server (bench/deadline_bench.py; the machine's speed varied between runs by 1.5x): with 4 s,
# 7 to 30 of 96 batches came after 5 s, and still 0 to 19 once TM lookups stop soon after the
# deadline (Compute.tm_only_grace_ms); with 3 s, none in three runs (the latest at 4.1 s once
# lookups stop), the share of sentences decoded about the same (16-21%). tmserver does no MT,
# so it has no deadline.
DEADLINES_MS = {"libretranslate": 3000.0, "modernmt": 3000.0, "deepl": 3000.0}


@dataclass(frozen=True)
class ProtocolOptions:
    """How one protocol that CAT tools speak (see PROTOCOLS) answers.

    `memories` names the memories it reads (tmserver) or whose pieces guide its translations;
    empty means every memory of the request's language pair that the caller's key may read, so
    a key's scope decides where the protocol cannot name memories. A memory the protocol's
    request names itself (ModernMT's `hints`) wins over both. `lam` and `engine` left None are
    the server's (TM_GUIDE_LAMBDA, else the model card; TM_GUIDE_ENGINE), as for /v1/suggest;
    `m` is the number of TM matches pieces are collected from. `deadline_ms` is how long after
    its request arrived an answer is still of use (0: no deadline): the clients' own timeout less
    a margin; a translation that would end later is decoded with a smaller beam, greedily, or
    not at all (tm_guide.server.batching).
    """

    enabled: bool = True
    memories: tuple[str, ...] = ()
    lam: float | None = None
    engine: str | None = None
    m: int = 10
    deadline_ms: float = 0.0

    def __post_init__(self) -> None:
        from tm_guide.decoding.engines import ENGINES

        if self.engine is not None and self.engine not in ENGINES:
            raise InvalidInput(
                f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}", field="engine"
            )
        if self.lam is not None and not 0 <= self.lam <= MAX_LAMBDA:
            raise InvalidInput(f"lambda must be between 0 and {MAX_LAMBDA}", field="lambda")


@dataclass(frozen=True)
class Protocols:
    """The CAT-tool protocols, each with its options; TM_GUIDE_PROTOCOLS lists those served."""

    tmserver: ProtocolOptions = field(default_factory=ProtocolOptions)
    libretranslate: ProtocolOptions = field(default_factory=ProtocolOptions)
    modernmt: ProtocolOptions = field(default_factory=ProtocolOptions)
    deepl: ProtocolOptions = field(default_factory=ProtocolOptions)

    def __getitem__(self, name: str) -> ProtocolOptions:
        if name not in PROTOCOLS:
            raise KeyError(name)
        options: ProtocolOptions = getattr(self, name)
        return options

    @classmethod
    def from_env(cls) -> Protocols:
        """TM_GUIDE_PROTOCOLS (comma-separated; default all) and, per protocol P,
        TM_GUIDE_P_MEMORIES (comma-separated names), TM_GUIDE_P_LAMBDA, TM_GUIDE_P_ENGINE,
        TM_GUIDE_P_M, TM_GUIDE_P_DEADLINE_MS (default DEADLINES_MS)."""
        raw = os.environ.get("TM_GUIDE_PROTOCOLS", "").strip()
        enabled = [p.strip().lower() for p in raw.split(",") if p.strip()] if raw else PROTOCOLS
        unknown = sorted(set(enabled) - set(PROTOCOLS))
        if unknown:
            raise InvalidInput(
                f"TM_GUIDE_PROTOCOLS names {unknown[0]!r}; known: {', '.join(PROTOCOLS)}",
                field="TM_GUIDE_PROTOCOLS",
            )
        chosen = {}
        for name in PROTOCOLS:
            prefix = f"TM_GUIDE_{name.upper()}_"
            memories = os.environ.get(prefix + "MEMORIES", "")
            engine = os.environ.get(prefix + "ENGINE", "").strip()
            chosen[name] = ProtocolOptions(
                enabled=name in enabled,
                memories=tuple(m.strip() for m in memories.split(",") if m.strip()),
                lam=_optional_float_env(prefix + "LAMBDA", maximum=MAX_LAMBDA),
                engine=engine or None,
                m=_int_env(prefix + "M", ProtocolOptions.m),
                deadline_ms=_float_env(
                    prefix + "DEADLINE_MS", DEADLINES_MS.get(name, 0.0), maximum=3_600_000
                ),
            )
        return cls(**chosen)


@dataclass(frozen=True)
class ServerConfig:
    """Everything `create_app` needs; built from environment variables by `from_env`.

    TM_GUIDE_AUTH                 on (default) or off; off is honoured only for loopback clients
    TM_GUIDE_TMSERVER_ANONYMOUS   1 lets the read-only tmserver endpoint answer without a key
    TM_GUIDE_JOBS_DIR             import uploads and job state (default: beside the index)
    TM_GUIDE_JOB_TTL_HOURS        how long an ended job's record is kept (default 168: a week)
    TM_GUIDE_KEY_CACHE_S          seconds a verified API key is trusted without a database lookup
                                  (default 5; 0 = look up every request); a revoked key stops
                                  working at once in the worker that revoked it, within this
                                  time in the others
    TM_GUIDE_MAX_BODY_BYTES, TM_GUIDE_MAX_IMPORT_BYTES, TM_GUIDE_MAX_BATCH_SIZE,
    TM_GUIDE_MAX_SEGMENT_CHARS    the limits
    TM_GUIDE_REQUEST_TIMEOUT_S    a request still running after this many seconds is cancelled
                                  in its thread, logged, and answered 503 (default 120; 0 = off)
    TM_GUIDE_BATCH_MAX_SENTENCES  sentences decoded together at most (default 32; 1 = no batching)
    TM_GUIDE_BATCH_WAIT_MS        how long a lone request waits for others to batch with (5)
    TM_GUIDE_TM_ONLY_GRACE_MS     how long past its deadline a sentence answered from the
                                  memory may still be looked up in the index (50)
    TM_GUIDE_DECODERS             decoding threads per worker, each taking its own batches (1)
    TM_GUIDE_COMPUTE_THREADS      intra-op threads of the torch/ct2 engines (default 1; 0 = the
                                  usable CPUs); the fused engine uses one core per decoder
    TM_GUIDE_ENGINE               decoding engine: auto (default), fused, torch, ct2 or rerank
    TM_GUIDE_LAMBDA               lambda of requests that leave it open (default: the model
                                  card's guided_lambda, else 1)
    TM_GUIDE_UI                   on (default) or off: the web console under /ui (a page that
                                  calls /v1 with the user's key; it reads nothing by itself)
    TM_GUIDE_PROTOCOLS            CAT-tool protocols served (default all): tmserver,
                                  libretranslate, modernmt, deepl; see `Protocols.from_env` for
                                  each one's memories, lambda, engine and M
    """

    settings: Settings = field(default_factory=Settings)
    limits: Limits = field(default_factory=Limits)
    compute: Compute = field(default_factory=Compute)
    auth_enabled: bool = True
    tmserver_anonymous: bool = False
    ui_enabled: bool = True
    jobs_dir: Path | None = None
    job_ttl_hours: float = 168.0
    key_cache_s: float = 5.0
    protocols: Protocols = field(default_factory=Protocols)
    # request threads per worker (`serve` sets it from ServeOptions.threads): the store's
    # connection pool is sized to them and the worker's background threads
    request_threads: int = 16

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
            request_timeout_s=_float_env(
                "TM_GUIDE_REQUEST_TIMEOUT_S", defaults.request_timeout_s, maximum=86400
            ),
            upload_wait_s=_float_env("TM_GUIDE_UPLOAD_WAIT_S", defaults.upload_wait_s, maximum=600),
        )
        compute_defaults = Compute()
        compute = Compute(
            batch_max_sentences=_int_env(
                "TM_GUIDE_BATCH_MAX_SENTENCES", compute_defaults.batch_max_sentences
            ),
            batch_wait_ms=_float_env("TM_GUIDE_BATCH_WAIT_MS", compute_defaults.batch_wait_ms),
            threads=_int_env("TM_GUIDE_COMPUTE_THREADS", compute_defaults.threads, minimum=0),
            decoders=_int_env("TM_GUIDE_DECODERS", compute_defaults.decoders, minimum=1),
            retrieval_slots=_int_env(
                "TM_GUIDE_RETRIEVAL_SLOTS", compute_defaults.retrieval_slots, minimum=0
            ),
            engine=os.environ.get("TM_GUIDE_ENGINE", "").strip() or compute_defaults.engine,
            default_lambda=_optional_float_env("TM_GUIDE_LAMBDA", maximum=MAX_LAMBDA),
            tm_only_grace_ms=_float_env(
                "TM_GUIDE_TM_ONLY_GRACE_MS", compute_defaults.tm_only_grace_ms, maximum=3_600_000
            ),
        )
        jobs_dir = os.environ.get("TM_GUIDE_JOBS_DIR", "").strip()
        return cls(
            settings=settings,
            limits=limits,
            compute=compute,
            auth_enabled=_switch_env("TM_GUIDE_AUTH", True),
            tmserver_anonymous=_switch_env("TM_GUIDE_TMSERVER_ANONYMOUS", False),
            ui_enabled=_switch_env("TM_GUIDE_UI", True),
            jobs_dir=Path(jobs_dir) if jobs_dir else None,
            job_ttl_hours=_float_env("TM_GUIDE_JOB_TTL_HOURS", 168.0, maximum=24 * 365 * 10),
            key_cache_s=_float_env("TM_GUIDE_KEY_CACHE_S", 5.0, maximum=3600),
            protocols=Protocols.from_env(),
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


_N = TypeVar("_N", int, float)


def _number_env(name: str, parse: Callable[[str], _N], what: str) -> _N | None:
    """The variable read by `parse` (int or float); None where it is unset or blank."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return parse(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be {what}, not {raw!r}", field=name) from None


def _int_env(name: str, default: int, minimum: int = 1) -> int:
    value = _number_env(name, int, "a whole number")
    if value is None:
        return default
    if value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, not {value}", field=name)
    return value


def _optional_float_env(name: str, maximum: float) -> float | None:
    if not os.environ.get(name, "").strip():
        return None
    return _float_env(name, 0.0, maximum)


def _float_env(name: str, default: float, maximum: float = 1000) -> float:
    value = _number_env(name, float, "a number")
    if value is None:
        return default
    if not 0 <= value <= maximum:
        raise InvalidInput(f"{name} must be between 0 and {maximum:g}, not {value}", field=name)
    return value
