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
from collections.abc import Callable, Mapping
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
    g.principal = authenticate(
        presented_token,
        "an API key is required (Authorization: Bearer <token> or X-API-Key)",
    )
    return g.principal


def authenticate(token_of: Callable[[], str | None], missing: str) -> Principal:
    """The caller whose key `token_of()` reads from the request; the one door every protocol's
    way of sending a key goes through (a header, a body field, a path segment).

    With auth off, a loopback caller is LOCAL_USER whatever it sends, and nobody else is served;
    with auth on, no key is a 401 that says `missing`, and a wrong key a 401 from the store."""
    services = current_app.extensions["tm_guide"]
    if not services.config.auth_enabled:
        if not is_loopback(request.remote_addr):
            raise Unauthorized(
                "authentication is off on this server, which only serves loopback clients"
            )
        return LOCAL_USER
    token = token_of()
    if not token:
        raise Unauthorized(missing)
    api_key = services.store().verify_api_key(token)
    return Principal(api_key.name, dict(api_key.scopes))


def require(memory: str, right: str) -> Principal:
    """The caller, after checking it may `right` ("read" or "write") the memory named `memory`."""
    principal = current_principal()
    if not principal.allows(memory, right):
        target = "every memory" if memory == ALL_MEMORIES else f"memory '{memory}'"
        raise Forbidden(f"API key '{principal.name}' has no {right} access to {target}")
    return principal
