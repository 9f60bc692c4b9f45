"""API-key authentication and per-memory read/write scopes.

A key arrives as `Authorization: Bearer <token>` or `X-API-Key: <token>`; the store verifies it
(tokens are stored hashed). A key's scopes map a memory name, or "*" for every memory, to "read" or
"write"; write implies read. Creating memories needs write on "*".

With auth disabled (TM_GUIDE_AUTH=off, meant for one user on one machine) every request from a
loopback address acts with full rights and any other client is refused, so a server that was
exposed by mistake does not open its memories to the network.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field

from flask import current_app, g, request

from tm_guide.errors import Forbidden, Unauthorized

RIGHTS = ("read", "write")
ALL_MEMORIES = "*"


@dataclass(frozen=True)
class Principal:
    """Who is asking and what they may do."""

    name: str
    scopes: Mapping[str, str] = field(default_factory=dict)

    def allows(self, memory: str, right: str) -> bool:
        granted = self.scopes.get(memory) or self.scopes.get(ALL_MEMORIES)
        if granted is None:
            return False
        return granted == "write" or right == "read"


LOCAL_USER = Principal("local", {ALL_MEMORIES: "write"})


def is_loopback(address: str | None) -> bool:
    if not address:
        return False
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return address == "localhost"


def presented_token() -> str | None:
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
        raise Unauthorized("Authorization header must be 'Bearer <token>'")
    token = request.headers.get("X-API-Key", "").strip()
    return token or None


def current_principal() -> Principal:
    """The authenticated caller (cached per request); 401 without a valid key."""
    if "principal" in g:
        return g.principal
    services = current_app.extensions["tm_guide"]
    if not services.config.auth_enabled:
        if not is_loopback(request.remote_addr):
            raise Unauthorized(
                "authentication is off on this server, which only serves loopback clients"
            )
        g.principal = LOCAL_USER
        return g.principal
    token = presented_token()
    if token is None:
        raise Unauthorized("an API key is required (Authorization: Bearer <token> or X-API-Key)")
    api_key = services.store().verify_api_key(token)
    g.principal = Principal(api_key.name, dict(api_key.scopes))
    return g.principal


def require(memory: str, right: str) -> Principal:
    """The caller, after checking it may `right` ("read" or "write") the memory named `memory`."""
    principal = current_principal()
    if not principal.allows(memory, right):
        target = "every memory" if memory == ALL_MEMORIES else f"memory '{memory}'"
        raise Forbidden(f"API key '{principal.name}' has no {right} access to {target}")
    return principal
