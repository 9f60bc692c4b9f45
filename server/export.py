"""Streamed TMX export: the memory leaves the server segment by segment, never whole in memory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def tmx_chunks(store: Any, memory: Any) -> Iterator[bytes]:
    raise NotImplementedError
