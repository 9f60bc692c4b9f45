"""Streamed TMX export: the memory leaves the server chunk by chunk, never whole in memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def tmx_chunks(store: Any, memory: Any) -> Iterator[bytes]:
    from tm_guide.formats.tmx_writer import iter_tmx

    yield from iter_tmx(
        source_lang=memory.source_lang,
        target_lang=memory.target_lang,
        segments=store.iter_segments(memory),
    )
