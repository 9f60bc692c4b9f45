"""`tm-guide` command line: each subcommand group lives in its own module and registers itself
here."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tm_guide.errors import TMGuideError

# Modules that define `register(subparsers)`; each adds its own subcommands.
# A module that is not there yet (or whose optional dependency is missing) is skipped.
COMMAND_MODULES = (
    "tm_guide.cli.memories",
    "tm_guide.cli.transfer",
    "tm_guide.cli.search",
    "tm_guide.cli.index",
    "tm_guide.cli.model",
    "tm_guide.cli.translate",
    "tm_guide.cli.align",
    "tm_guide.cli.keys",
    "tm_guide.cli.serve",
    "tm_guide.cli.evaluate",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tm-guide",
        description="Translation-memory guided machine translation for CAT tools.",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None,
        help="database URL (default: $TM_GUIDE_DB or sqlite:///tm-guide.sqlite)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except TMGuideError as exc:
        print(f"tm-guide: error: {exc.message}", file=sys.stderr)
        return 1 if exc.status < 500 else 2
    except KeyboardInterrupt:
        print("tm-guide: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
