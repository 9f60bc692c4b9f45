"""What both exact re-implementations of a CTranslate2 Transformer read from model.bin.

The torch engine and the fused engine run the same TransformerSpec models; the checks of what
they support, the position encodings, the embedding scale and the source ids live here, once,
without PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tm_guide.decoding.model_file import CT2ModelFile
from tm_guide.errors import ModelError

# CTranslate2's LayerNorm epsilon when the config does not set one.
DEFAULT_LAYER_NORM_EPSILON = 1e-5

# Keys whose presence means an architecture feature these engines do not implement.
_UNSUPPORTED_KEYS = (
    "relative_position_keys",
    "relative_attention_bias",
    "relative_asymmetric_position_keys",
    "rotary_dim",
    "q_norm",
    "v_norm",
    "project_in",
    "layer_norm_use_residual",
)


def check_supported(model: CT2ModelFile) -> None:
    """A ModelError naming the first architecture feature that the engines do not implement."""
    if model.spec_name != "TransformerSpec":
        raise ModelError(f"the engine supports TransformerSpec models, not {model.spec_name}")
    for name in model.variables:
        key = name.rsplit("/", 1)[-1]
        if key in _UNSUPPORTED_KEYS:
            raise ModelError(f"the engine does not implement {name!r}")
    for flag in ("decoder/alibi", "decoder/parallel_residual", "encoder/multi_query_attention"):
        if model.has(flag) and model.scalar(flag):
            raise ModelError(f"the engine does not implement {flag!r}")
    if model.has("encoder/embeddings_1/weight"):
        raise ModelError("the engine does not implement source factors (embeddings_1)")
    if model.config.get("multi_query_attention"):
        raise ModelError("the engine does not implement multi-query attention")
    if model.has("decoder/scale_outputs"):
        raise ModelError("the engine does not implement decoder/scale_outputs")


def layer_norm_epsilon(model: CT2ModelFile) -> float:
    return float(model.config.get("layer_norm_epsilon") or DEFAULT_LAYER_NORM_EPSILON)


def count_layers(model: CT2ModelFile, stack: str) -> int:
    count = 0
    while model.has(f"{stack}/layer_{count}/self_attention/linear_0/weight"):
        count += 1
    return count


def embeddings_key(model: CT2ModelFile, scope: str) -> str:
    """`scope`'s embedding table: embeddings_0 (encoders with factors) or embeddings."""
    return (
        f"{scope}/embeddings_0"
        if model.has(f"{scope}/embeddings_0/weight")
        else (f"{scope}/embeddings")
    )


def embedding_scale(model: CT2ModelFile, scope: str, depth: int) -> float:
    """The factor of the embeddings: sqrt(depth), 1, or the float the spec stores."""
    key = embeddings_key(model, scope)
    scale = model.scalar(f"{scope}/scale_embeddings", 1)
    if model.has(f"{key}/multiply_by_sqrt_depth") and model.scalar(f"{key}/multiply_by_sqrt_depth"):
        scale = True
    stored = model.variables.get(f"{scope}/scale_embeddings")
    if isinstance(scale, bool) or (stored is not None and stored.dtype == np.int8):
        return math.sqrt(depth) if scale else 1.0
    return float(scale)


def sinusoidal_encodings(length: int, depth: int) -> np.ndarray:
    """CTranslate2's SinusoidalPositionEncoder: sin in the first half, cos in the second."""
    half = depth // 2
    timescale = math.log(10000.0) / max(half - 1, 1)
    inv = np.exp(np.arange(half, dtype=np.float32) * -timescale)
    positions = np.arange(length, dtype=np.float32)[:, None] * inv[None, :]
    return np.concatenate([np.sin(positions), np.cos(positions)], axis=1).astype(np.float32)


def position_encodings(model: CT2ModelFile, scope: str, depth: int) -> np.ndarray:
    """The stored position table of `scope`, or 1024 sinusoidal positions."""
    name = f"{scope}/position_encodings/encodings"
    if model.has(name):
        return np.ascontiguousarray(model.dequantized(name))
    return sinusoidal_encodings(1024, depth)


class SourceIds:
    """Source tokens to model ids, with the BOS/EOS that the model's config asks for."""

    def __init__(self, model: CT2ModelFile) -> None:
        config = model.config
        self.source_index = {t: i for i, t in enumerate(model.source_vocabulary)}
        self.unk_id = self.source_index.get(config.get("unk_token", "<unk>"), 0)
        self.add_source_bos = bool(config.get("add_source_bos", False))
        self.add_source_eos = bool(config.get("add_source_eos", False))
        self.bos = config.get("bos_token", "<s>")
        self.eos = config.get("eos_token", "</s>")

    def source_ids(self, tokens: Sequence[str]) -> list[int]:
        ids = [self.source_index.get(t, self.unk_id) for t in tokens]
        if self.add_source_bos:
            ids.insert(0, self.source_index.get(self.bos, self.unk_id))
        if self.add_source_eos:
            ids.append(self.source_index.get(self.eos, self.unk_id))
        return ids


def start_token(model: CT2ModelFile) -> str:
    """The token the decoder starts from (CTranslate2: decoder_start_token, else BOS)."""
    config = model.config
    return str(config.get("decoder_start_token") or config.get("bos_token", "<s>"))
