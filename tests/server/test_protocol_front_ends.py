"""Every CAT-tool protocol keeps the one contract (tm_guide.server.protocol), and the app serves
exactly those TM_GUIDE_PROTOCOLS names."""

from __future__ import annotations

from tm_guide.server.api.protocols import FRONT_ENDS
from tm_guide.server.config import PROTOCOLS
from tm_guide.server.protocol import Protocol


def test_the_front_ends_are_the_configurable_protocols_each_under_its_own_prefix() -> None:
    assert tuple(protocol.name for protocol in FRONT_ENDS) == PROTOCOLS
    assert all(isinstance(protocol, Protocol) for protocol in FRONT_ENDS)
    prefixes = [protocol.blueprint.url_prefix for protocol in FRONT_ENDS]
    assert len(set(prefixes)) == len(prefixes) and all(prefixes)
