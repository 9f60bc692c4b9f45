"""Reader for CTranslate2's model directory (model.bin, config.json, vocabularies).

The fast engine runs the very weights that CTranslate2 runs, so that a bundle has one model
format. The binary layout is the one written by CTranslate2's ``ModelSpec._serialize``:

    u32 binary version, string spec name, u32 spec revision, u32 variable count,
    per variable: string name, u8 rank, u32 dims[rank], u8 dtype id, u32 byte count, raw bytes,
    u32 alias count, per alias: string alias, string target name.

Strings are a u16 length (counting a trailing NUL), the UTF-8 bytes and the NUL.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tm_guide.errors import ModelError

# Order of the DataType enum in CTranslate2 (include/ctranslate2/types.h).
_DTYPES: tuple[np.dtype | None, ...] = (
    np.dtype(np.float32),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.float16),
    None,  # bfloat16: numpy has no such type; decoded by hand below
)
_SUPPORTED_BINARY_VERSIONS = (5, 6)


@dataclass
class CT2ModelFile:
    """All variables of a model.bin (aliases resolved), the config and the vocabularies."""

    spec_name: str
    spec_revision: int
    variables: dict[str, np.ndarray]
    aliases: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    source_vocabulary: list[str] = field(default_factory=list)
    target_vocabulary: list[str] = field(default_factory=list)

    def get(self, name: str) -> np.ndarray:
        try:
            return self.variables[name]
        except KeyError:
            raise ModelError(f"model.bin has no variable {name!r}") from None

    def has(self, name: str) -> bool:
        return name in self.variables

    def scalar(self, name: str, default: float | int | None = None) -> float | int:
        if name not in self.variables:
            if default is None:
                raise ModelError(f"model.bin has no variable {name!r}")
            return default
        value: float | int = self.variables[name].item()
        return value

    def dequantized(self, name: str) -> np.ndarray:
        """A weight as float32: int8/int16 weights are divided by their per-row scale."""
        value = self.get(name)
        # Aliases are made before quantization: the scale lives with the aliased variable.
        scale_name = self.aliases.get(name, name) + "_scale"
        if value.dtype in (np.int8, np.int16):
            if scale_name not in self.variables:
                raise ModelError(f"quantized weight {name!r} has no {scale_name!r}")
            scale = self.variables[scale_name].astype(np.float32)
            if scale.ndim == 0:
                return value.astype(np.float32) / scale
            return value.astype(np.float32) / scale.reshape((-1,) + (1,) * (value.ndim - 1))
        return value.astype(np.float32)


def read_model_file(model_dir: Path) -> CT2ModelFile:
    """Read model.bin, config.json and the vocabularies of a CTranslate2 model directory."""
    model_dir = Path(model_dir)
    path = model_dir / "model.bin"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the model file ({exc})") from exc
    spec_name, revision, variables, aliases = _parse(data, path)
    config_path = model_dir / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
    source_vocab, target_vocab = read_vocabularies(model_dir)
    return CT2ModelFile(spec_name, revision, variables, aliases, config, source_vocab, target_vocab)


def read_vocabularies(model_dir: Path) -> tuple[list[str], list[str]]:
    """Source and target vocabularies (shared_ or source_/target_vocabulary, .json or .txt)."""
    shared = _read_vocabulary(model_dir, "shared_vocabulary")
    if shared is not None:
        return shared, shared
    source = _read_vocabulary(model_dir, "source_vocabulary")
    target = _read_vocabulary(model_dir, "target_vocabulary")
    if source is None or target is None:
        raise ModelError(f"{model_dir}: no shared_vocabulary or source/target_vocabulary file")
    return source, target


def _read_vocabulary(model_dir: Path, stem: str) -> list[str] | None:
    json_path = model_dir / f"{stem}.json"
    if json_path.exists():
        tokens = json.loads(json_path.read_text(encoding="utf-8"))
        if not isinstance(tokens, list):
            raise ModelError(f"{json_path}: expected a JSON list of tokens")
        return [str(t) for t in tokens]
    txt_path = model_dir / f"{stem}.txt"
    if txt_path.exists():
        return txt_path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    return None


def _parse(data: bytes, path: Path) -> tuple[str, int, dict[str, np.ndarray], dict[str, str]]:
    offset = 0

    def unpack(fmt: str) -> int:
        nonlocal offset
        (value,) = struct.unpack_from("<" + fmt, data, offset)
        offset += struct.calcsize("<" + fmt)
        return int(value)

    def string() -> str:
        nonlocal offset
        length = unpack("H")
        text = data[offset : offset + length - 1].decode("utf-8")
        offset += length
        return text

    try:
        version = unpack("I")
        if version not in _SUPPORTED_BINARY_VERSIONS:
            raise ModelError(
                f"{path}: binary version {version} is not supported "
                f"(supported: {', '.join(map(str, _SUPPORTED_BINARY_VERSIONS))})"
            )
        spec_name = string()
        revision = unpack("I")
        count = unpack("I")
        variables: dict[str, np.ndarray] = {}
        aliases: dict[str, str] = {}
        for _ in range(count):
            name = string()
            rank = unpack("B")
            shape = tuple(unpack("I") for _ in range(rank))
            dtype_id = unpack("B")
            num_bytes = unpack("I")
            raw = data[offset : offset + num_bytes]
            offset += num_bytes
            variables[name] = _to_array(raw, dtype_id, shape, name, path)
        for _ in range(unpack("I")):
            alias = string()
            target = string()
            if target not in variables:
                raise ModelError(f"{path}: alias {alias!r} points to missing {target!r}")
            variables[alias] = variables[target]
            aliases[alias] = target
    except struct.error as exc:
        raise ModelError(f"{path}: truncated model file at byte {offset}") from exc
    return spec_name, revision, variables, aliases


def _to_array(
    raw: bytes, dtype_id: int, shape: tuple[int, ...], name: str, path: Path
) -> np.ndarray:
    if dtype_id >= len(_DTYPES):
        raise ModelError(f"{path}: variable {name!r} has unknown dtype id {dtype_id}")
    dtype = _DTYPES[dtype_id]
    if dtype is None:  # bfloat16: the high half of a float32
        halves = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
        return halves.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)
