"""A request's sentences answered from the memory are looked up in the index only until just
past its deadline: past it the client has given up, and the lookups of many requests at once
are what made answers late."""

from __future__ import annotations

import time

from tm_guide.server.config import Compute
from tm_guide.server.sentences import SentenceDecoder


def decoder(deadline: float | None, grace_s: float = Compute.tm_only_grace_ms / 1000):
    return SentenceDecoder(
        services=None,  # type: ignore[arg-type]
        translator=None,
        mt_options=None,
        names={},
        deadline=deadline,
        tm_only_grace_s=grace_s,
    )


def test_lookups_stop_a_grace_after_the_deadline() -> None:
    now = time.perf_counter()
    assert decoder(None)._may_look_up()  # no deadline
    assert decoder(now + 10)._may_look_up()
    assert decoder(now)._may_look_up()  # within the grace
    assert not decoder(now - Compute.tm_only_grace_ms / 1000 - 0.01)._may_look_up()
    assert decoder(now - 1.0, grace_s=2.0)._may_look_up()  # TM_GUIDE_TM_ONLY_GRACE_MS
