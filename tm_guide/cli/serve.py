"""`tm-guide serve`: the HTTP server on the embedded defaults (SQLite file + bundled demo model)."""

from __future__ import annotations

import argparse
import dataclasses

from tm_guide.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTP server",
        description=(
            "Serve suggestions over HTTP with gunicorn. Database, index and model come from "
            "--db / TM_GUIDE_DB, TM_GUIDE_INDEX_DIR, TM_GUIDE_MODEL and TM_GUIDE_DEVICE. "
            "API keys are required unless TM_GUIDE_AUTH=off (or --auth off), which is "
            "allowed only on a loopback address. One worker with several threads is the "
            "default; several workers need PostgreSQL."
        ),
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker (default 16)")
    parser.add_argument(
        "--timeout", type=int, default=120, help="seconds before a stuck worker is restarted"
    )
    parser.add_argument(
        "--auth", choices=("on", "off"), default=None, help="override TM_GUIDE_AUTH"
    )
    parser.add_argument("--access-log", action="store_true", help="log every request to stderr")
    parser.add_argument(
        "--no-warm", action="store_true", help="load the model on first use, not at start"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tm_guide.server.config import ServerConfig
    from tm_guide.server.serving import ServeOptions, serve

    config = ServerConfig.from_env(Settings.from_env(args.db))
    if args.auth is not None:
        config = dataclasses.replace(config, auth_enabled=args.auth == "on")
    options = ServeOptions(
        host=args.host,
        port=args.port,
        workers=max(1, args.workers),
        threads=max(1, args.threads),
        timeout_s=args.timeout,
        access_log=args.access_log,
        warm=not args.no_warm,
    )
    serve(config, options)
    return 0
