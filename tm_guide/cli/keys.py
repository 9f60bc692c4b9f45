"""`tm-guide keys`: create, list and revoke the API keys of the HTTP server.

A key is shown once, when it is created; the store keeps only its hash.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from tm_guide.config import Settings
from tm_guide.errors import InvalidInput

SCOPE = re.compile(r"^(?P<memory>\*|[A-Za-z0-9][A-Za-z0-9._-]{0,99}):(?P<right>read|write)$")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("keys", help="manage API keys of the HTTP server")
    commands = parser.add_subparsers(dest="keys_command", metavar="COMMAND")
    commands.required = True

    create = commands.add_parser(
        "create",
        help="create a key and print its token (shown only this once)",
        description="Create an API key. Each --scope is MEMORY:read or MEMORY:write; "
        "MEMORY '*' means "
        "every memory (write on '*' also allows creating and deleting memories).",
    )
    create.add_argument("name", help="a name to recognise the key by (unique)")
    create.add_argument(
        "--scope", action="append", required=True, metavar="MEMORY:RIGHT", dest="scopes"
    )
    create.set_defaults(func=create_key)

    listing = commands.add_parser("list", help="list keys (names and scopes, never tokens)")
    listing.set_defaults(func=list_keys)

    revoke = commands.add_parser("revoke", help="revoke a key by name")
    revoke.add_argument("name")
    revoke.set_defaults(func=revoke_key)


def parse_scopes(items: list[str]) -> dict[str, str]:
    scopes: dict[str, str] = {}
    for item in items:
        match = SCOPE.match(item)
        if not match:
            raise InvalidInput(
                f"--scope {item!r} must look like MEMORY:read or MEMORY:write "
                "('*' for every memory)",
                field="scope",
            )
        memory, right = match["memory"], match["right"]
        if scopes.get(memory) != "write":
            scopes[memory] = right
    return scopes


def _open_store(args: argparse.Namespace) -> Any:
    from tm_guide.store import Store

    settings = Settings.from_env(args.db)
    return Store.open(settings.db_url, index_dir=settings.index_dir)


def create_key(args: argparse.Namespace) -> int:
    scopes = parse_scopes(args.scopes)
    store = _open_store(args)
    try:
        _, token = store.create_api_key(args.name, scopes)
        existing = {memory.name for memory in store.list_memories()}
    finally:
        store.close()
    print(token)
    print(f"key '{args.name}' created; store the token now, it is not shown again", file=sys.stderr)
    for memory in sorted(set(scopes) - existing - {"*"}):
        # a scope may name a memory made later; until then the key reaches nothing by it
        print(
            f"warning: no memory named '{memory}' exists yet: this key's '{memory}' scope "
            f"reaches nothing until it is created (tm-guide memory create {memory} SRC TGT)",
            file=sys.stderr,
        )
    return 0


def list_keys(args: argparse.Namespace) -> int:
    store = _open_store(args)
    try:
        keys = store.list_api_keys()
    finally:
        store.close()
    for key in keys:
        scopes = " ".join(f"{memory}:{right}" for memory, right in sorted(key.scopes.items()))
        state = " (revoked)" if getattr(key, "revoked_at", None) else ""
        print(f"{key.name}\t{scopes}{state}")
    return 0


def revoke_key(args: argparse.Namespace) -> int:
    store = _open_store(args)
    try:
        store.revoke_api_key(args.name)
    finally:
        store.close()
    print(f"key '{args.name}' revoked", file=sys.stderr)
    return 0
