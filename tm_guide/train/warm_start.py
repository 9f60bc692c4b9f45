"""Start training from a finished bundle's weights instead of from random ones.

Why: a bundle is the one artefact that outlives a training run's scratch checkpoints, so a
later session can keep improving the shipped model from it. The int8 weights are dequantized
(per-row scales); the rounding error is small next to what further training changes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tm_guide.decoding.model_file import CT2ModelFile, read_model_file
from tm_guide.errors import ModelError


def _linear(model: CT2ModelFile, scope: str) -> tuple[np.ndarray, np.ndarray]:
    return model.dequantized(f"{scope}/weight"), model.get(f"{scope}/bias").astype(np.float32)


def _norm(model: CT2ModelFile, scope: str, target: str) -> dict[str, np.ndarray]:
    return {
        f"{target}.weight": model.get(f"{scope}/gamma").astype(np.float32),
        f"{target}.bias": model.get(f"{scope}/beta").astype(np.float32),
    }


def _split_linear(model: CT2ModelFile, scope: str, targets: list[str]) -> dict[str, np.ndarray]:
    """Undo CTranslate2's fusion of q/k/v (or k/v) projections into one linear layer."""
    weight, bias = _linear(model, scope)
    parts = len(targets)
    if weight.shape[0] % parts:
        raise ModelError(f"{scope}: {weight.shape[0]} rows do not split into {parts} projections")
    out: dict[str, np.ndarray] = {}
    for target, w, b in zip(targets, np.split(weight, parts), np.split(bias, parts), strict=True):
        out[f"{target}.weight"] = w
        out[f"{target}.bias"] = b
    return out


def _single(model: CT2ModelFile, scope: str, target: str) -> dict[str, np.ndarray]:
    weight, bias = _linear(model, scope)
    return {f"{target}.weight": weight, f"{target}.bias": bias}


def _attention(
    model: CT2ModelFile, scope: str, target: str, fused_qkv: bool
) -> dict[str, np.ndarray]:
    out = _norm(model, f"{scope}/layer_norm", f"{target}_layer_norm")
    if fused_qkv:
        out |= _split_linear(
            model, f"{scope}/linear_0", [f"{target}.{p}_proj" for p in ("q", "k", "v")]
        )
        out |= _single(model, f"{scope}/linear_1", f"{target}.out_proj")
    else:
        out |= _single(model, f"{scope}/linear_0", f"{target}.q_proj")
        out |= _split_linear(model, f"{scope}/linear_1", [f"{target}.{p}_proj" for p in ("k", "v")])
        out |= _single(model, f"{scope}/linear_2", f"{target}.out_proj")
    return out


def _feed_forward(model: CT2ModelFile, scope: str, target: str) -> dict[str, np.ndarray]:
    out = _norm(model, f"{scope}/layer_norm", f"{target}.final_layer_norm")
    out |= _single(model, f"{scope}/linear_0", f"{target}.fc1")
    out |= _single(model, f"{scope}/linear_1", f"{target}.fc2")
    return out


def marian_weights_from_bundle(
    bundle_dir: Path, layers: int, vocab_size: int | None = None
) -> dict[str, torch.Tensor]:
    """transformers MarianMTModel weights (tied embeddings, <pad> row last) from model.bin.

    `vocab_size` larger than the bundle's (+1 for <pad>): the vocabulary was extended at its
    end (byte fallback's pieces); their rows start at the mean embedding, with small noise."""
    model = read_model_file(bundle_dir)
    if model.spec_name != "TransformerSpec":
        raise ModelError(
            f"{bundle_dir}: warm start needs a Transformer bundle, not {model.spec_name}"
        )
    for stack in ("encoder", "decoder"):
        if model.has(f"{stack}/layer_{layers}/ffn/linear_0/weight") or not model.has(
            f"{stack}/layer_{layers - 1}/ffn/linear_0/weight"
        ):
            raise ModelError(f"{bundle_dir}: the {stack} does not have {layers} layers")
    embeddings = model.dequantized("decoder/embeddings/weight")
    added = (vocab_size or len(embeddings) + 1) - len(embeddings) - 1
    if added < 0:
        raise ModelError(f"{bundle_dir}: the model's vocabulary is smaller than the bundle's")
    noise = np.random.default_rng(0).normal(
        0.0, embeddings.std() * 0.1, (added, embeddings.shape[1])
    )
    new_rows = (embeddings.mean(axis=0) + noise).astype(np.float32)
    with_pad = np.concatenate(
        [embeddings, new_rows, np.zeros((1, embeddings.shape[1]), np.float32)]
    )
    weights: dict[str, np.ndarray] = {
        "model.shared.weight": with_pad,
        "model.encoder.embed_tokens.weight": with_pad,
        "model.decoder.embed_tokens.weight": with_pad,
        "lm_head.weight": with_pad,
    }
    if model.has(
        "decoder/projection/bias"
    ):  # final_logits_bias (<unk>'s, in a byte-fallback model)
        bias = model.get("decoder/projection/bias").astype(np.float32)
        weights["final_logits_bias"] = np.concatenate([bias, np.zeros(added + 1, np.float32)])[
            None, :
        ]
    for i in range(layers):
        enc = f"encoder/layer_{i}"
        target = f"model.encoder.layers.{i}"
        weights |= _attention(model, f"{enc}/self_attention", f"{target}.self_attn", True)
        weights |= _feed_forward(model, f"{enc}/ffn", target)
        dec = f"decoder/layer_{i}"
        target = f"model.decoder.layers.{i}"
        weights |= _attention(model, f"{dec}/self_attention", f"{target}.self_attn", True)
        weights |= _attention(model, f"{dec}/attention", f"{target}.encoder_attn", False)
        weights |= _feed_forward(model, f"{dec}/ffn", target)
    return {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in weights.items()}


def load_bundle_weights(model: torch.nn.Module, bundle_dir: Path, layers: int) -> None:
    """Copy the bundle's weights into a freshly built MarianMTModel of the same shape."""
    state = model.state_dict()
    weights = marian_weights_from_bundle(
        bundle_dir, layers, int(state["model.shared.weight"].shape[0])
    )
    for name, tensor in weights.items():
        if name not in state:
            raise ModelError(f"warm start: the model has no parameter {name!r}")
        if tuple(state[name].shape) != tuple(tensor.shape):
            raise ModelError(
                f"warm start: {name} is {tuple(tensor.shape)} in the bundle, "
                f"{tuple(state[name].shape)} in the model (different shape options?)"
            )
    missing = [
        name
        for name in state
        if name not in weights
        and not name.endswith("embed_positions.weight")
        and name != "final_logits_bias"
    ]
    if missing:
        raise ModelError(f"warm start: the bundle gives no value for {missing[:5]}")
    model.load_state_dict(weights, strict=False)
