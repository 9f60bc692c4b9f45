"""A request's sentences answered from the memory are looked up in the index only until just
past its deadline: past it the client has given up, and the lookups of many requests at once
are what made answers late."""

from __future__ import annotations

import time

from tm_guide.server.sentences import TM_ONLY_LOOKUP_GRACE_S, SentenceDecoder


def decoder(deadline: float | None) -> SentenceDecoder:
    return SentenceDecoder(
        services=None, translator=None, mt_options=None, names={}, deadline=deadline
    )  # type: ignore[arg-type]


def test_lookups_stop_a_grace_after_the_deadline() -> None:
    now = time.perf_counter()
    assert decoder(None)._may_look_up()  # no deadline
    assert decoder(now + 10)._may_look_up()
    assert decoder(now)._may_look_up()  # within the grace
    assert not decoder(now - TM_ONLY_LOOKUP_GRACE_S - 0.01)._may_look_up()
