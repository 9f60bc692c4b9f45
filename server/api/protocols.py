"""The CAT-tool protocol front-ends the server can serve, in the order they are registered
(config.PROTOCOLS names them, for TM_GUIDE_PROTOCOLS and each protocol's settings)."""

from __future__ import annotations

from tm_guide.server.api import deepl, libretranslate, modernmt, tmserver
from tm_guide.server.protocol import Protocol

FRONT_ENDS: tuple[Protocol, ...] = (
    tmserver.PROTOCOL,
    libretranslate.PROTOCOL,
    modernmt.PROTOCOL,
    deepl.PROTOCOL,
)
