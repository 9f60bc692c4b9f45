"""How many positions a CTranslate2 model has encodings for, read from the model.bin header.

A Marian model with 256 learned or tabled positions makes CTranslate2 fail on a 257-token input
("No position encodings are defined for positions >= 256"); knowing the limit lets the bundle
truncate instead of failing a whole batch. Only variable headers are read; the weights are skipped.
Layout (CTranslate2 ModelSpec._serialize): u32 version, string spec, u32 revision, u32 count, then
per variable: string name, u8 rank, u32 dims[rank], u8 dtype, u32 byte count, bytes; then aliases.
Strings are a u16 length (counting a trailing NUL) and the bytes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tm_guide.errors import ModelError

_ENCODER = "encoder/position_encodings/encodings"
_DECODER = "decoder/position_encodings/encodings"
_KNOWN_BINARY_VERSIONS = (5, 6)  # the layout above


@dataclass(frozen=True)
class PositionLimits:
    """Longest source and target token sequences the model can encode (None: no fixed table)."""

    source: int | None
    target: int | None


NO_LIMITS = PositionLimits(None, None)


def read_position_limits(model_bin: Path) -> PositionLimits:
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        with model_bin.open("rb") as handle:
            if _unpack(handle, "I") not in _KNOWN_BINARY_VERSIONS:
                return NO_LIMITS  # an older layout: leave limits to CTranslate2
            _string(handle)  # spec name
            _unpack(handle, "I")  # spec revision
            for _ in range(_unpack(handle, "I")):
                name = _string(handle)
                shape = tuple(_unpack(handle, "I") for _ in range(_unpack(handle, "B")))
                _unpack(handle, "B")  # dtype
                handle.seek(_unpack(handle, "I"), 1)
                if name in (_ENCODER, _DECODER):
                    shapes[name] = shape
            for _ in range(_unpack(handle, "I")):
                alias, target = _string(handle), _string(handle)
                if alias in (_ENCODER, _DECODER) and target in shapes:
                    shapes[alias] = shapes[target]
    except (struct.error, UnicodeDecodeError) as exc:
        raise ModelError(f"{model_bin}: truncated or not a CTranslate2 model file") from exc
    return PositionLimits(_rows(shapes.get(_ENCODER)), _rows(shapes.get(_DECODER)))


def _rows(shape: tuple[int, ...] | None) -> int | None:
    return shape[0] if shape else None


def _unpack(handle: BinaryIO, fmt: str) -> int:
    size = struct.calcsize("<" + fmt)
    (value,) = struct.unpack("<" + fmt, handle.read(size))
    return int(value)


def _string(handle: BinaryIO) -> str:
    length = _unpack(handle, "H")
    return handle.read(length).rstrip(b"\0").decode("utf-8")
