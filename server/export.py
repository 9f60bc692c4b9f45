"""Streamed TMX export: the memory leaves the server chunk by chunk, never whole in memory."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)


def tmx_chunks(store: Any, memory: Any) -> Iterator[bytes]:
    """A segment XML cannot carry is left out, logged, and listed in a comment at the end of the
    file (the status line is sent before the segments are read)."""
    from tm_guide.formats.tmx_writer import iter_tmx

    def report(why: str) -> None:
        log.warning("export of memory %r: %s", memory.name, why)

    yield from iter_tmx(
        source_lang=memory.source_lang,
        target_lang=memory.target_lang,
        segments=store.iter_segments(memory),
        on_skip=report,
    )
