"""The torch engine's encoder pass and decoder step, each a single TorchScript function.

Why TorchScript: a step of a small Transformer is ~100 tensor ops on tiny tensors, and from eager
Python each op costs an interpreter round trip and a release and re-take of the GIL. Scripted,
the whole step is one call that runs in the TorchScript interpreter without the GIL: measured on
the 3+3-layer demo model (int8, one thread), a step of 5 rows 1.11 -> 0.71 ms and of 80 rows
5.7 -> 4.9 ms, with bit-identical logits; and the server's request threads no longer take the GIL
from the decoding thread between ops. The same function runs eagerly (same results) where it
cannot be scripted. The encoder (with the decoder's cross-attention keys/values) is scripted
for the same reason: one sentence's pass went from 1.36 to 0.85 ms.

No ``from __future__ import annotations`` here: TorchScript reads the annotations themselves.
"""

import logging
import math
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

import torch
from torch.nn import functional as F

log = logging.getLogger(__name__)

PackedLinear = torch.classes.quantized.LinearPackedParamsBase


class StackWeights(NamedTuple):
    """One stack's (encoder's or decoder's) weights, in the order the functions below index them.

    `packed` holds fbgemm's int8 linears when the model is quantized (then `weights` and `biases`
    are empty), else `weights`/`biases` hold the float ones. `norms` is gamma, beta per layer
    norm; `embedding_norm` and `final_norm` are [gamma, beta] or []. `outputs`: the columns of
    the last linear that are the model's (its rows may be padded to an aligned count, which
    half-precision products on a GPU need to run at speed; 0: all)."""

    embeddings: torch.Tensor
    embedding_scale: float
    positions: torch.Tensor
    embedding_norm: list[torch.Tensor]
    packed: list[PackedLinear]  # type: ignore[valid-type]
    weights: list[torch.Tensor]
    biases: list[torch.Tensor | None]
    norms: list[torch.Tensor]
    final_norm: list[torch.Tensor]
    eps: float
    pre_norm: bool
    activation: int
    heads: int
    outputs: int


def _linear(x: torch.Tensor, w: StackWeights, index: int) -> torch.Tensor:
    """fbgemm's dynamic int8 linear when the layers are quantized, else a float linear."""
    if len(w.packed) > 0:
        out: torch.Tensor = torch.ops.quantized.linear_dynamic(x, w.packed[index], True)
        return out
    return F.linear(x, w.weights[index], w.biases[index])


def _linear_count(w: StackWeights) -> int:
    return len(w.packed) if len(w.packed) > 0 else len(w.weights)


def _norm(x: torch.Tensor, w: StackWeights, index: int) -> torch.Tensor:
    return F.layer_norm(x, [x.size(-1)], w.norms[2 * index], w.norms[2 * index + 1], w.eps)


def _outer_norm(x: torch.Tensor, w: StackWeights, pair: list[torch.Tensor]) -> torch.Tensor:
    """The embedding or final layer norm, where the model has one."""
    if len(pair) == 2:
        return F.layer_norm(x, [x.size(-1)], pair[0], pair[1], w.eps)
    return x


# CTranslate2's activation codes (ops/activation.h) that `activate` implements.
ACTIVATIONS = {
    0: "relu",
    1: "gelu_tanh",
    2: "swish",
    3: "gelu",
    4: "gelu_sigmoid",
    5: "tanh",
    6: "sigmoid",
}


def activate(x: torch.Tensor, code: int) -> torch.Tensor:
    """The activation of CTranslate2's code `code` (one of ACTIVATIONS)."""
    if code == 0:
        return torch.relu(x)
    if code == 1:
        return F.gelu(x, approximate="tanh")
    if code == 2:
        return F.silu(x)
    if code == 3:
        return F.gelu(x)
    if code == 4:
        return x * torch.sigmoid(1.702 * x)
    if code == 5:
        return torch.tanh(x)
    return torch.sigmoid(x)


def decoder_step(
    ids: torch.Tensor,
    step: int,
    start_from_zero: bool,
    w: StackWeights,
    key_buffers: list[torch.Tensor],
    value_buffers: list[torch.Tensor],
    cross_keys: list[torch.Tensor],
    cross_values: list[torch.Tensor],
    cross_keep: torch.Tensor,
    rows_per_sentence: int,
    end_id: int,
    mask_end: bool,
) -> torch.Tensor:
    """Log-probabilities [rows, vocab] of the next token of every row.

    Writes this step's self-attention keys/values at time `step` of the time-major buffers
    [capacity, rows, heads, head_dim]. Rows are grouped by sentence (`rows_per_sentence` each),
    matching the cross-attention keys/values [sentences, heads, time, head_dim]. The last linear
    (index 6 * layers) is the output projection."""
    rows = ids.size(0)
    heads = w.heads
    depth = w.embeddings.size(1)
    head_dim = depth // heads
    scale = 1.0 / math.sqrt(float(head_dim))
    if step == 0 and start_from_zero:
        x = w.positions[step].expand(rows, depth)
    else:
        x = F.embedding(ids, w.embeddings) * w.embedding_scale + w.positions[step]
    x = _outer_norm(x, w, w.embedding_norm)
    length = step + 1
    for layer in range(len(key_buffers)):
        # self-attention over the cached steps (one query per row)
        h = _norm(x, w, 3 * layer) if w.pre_norm else x
        qkv = _linear(h, w, 6 * layer).view(rows, 3, heads, head_dim)
        key_buffer = key_buffers[layer]
        value_buffer = value_buffers[layer]
        key_buffer[step] = qkv[:, 1]
        value_buffer[step] = qkv[:, 2]
        keys = key_buffer[:length].view(length, rows * heads, head_dim)
        values = value_buffer[:length].view(length, rows * heads, head_dim)
        q = (qkv[:, 0] * scale).reshape(rows * heads, 1, head_dim)
        attention = torch.softmax(torch.bmm(q, keys.permute(1, 2, 0)), dim=-1)
        h = torch.bmm(attention, values.transpose(0, 1)).view(rows, depth)
        x = _rest_of_layer(x, h, w, layer, cross_keys, cross_values, cross_keep, rows_per_sentence)
    return _log_probs(x, w, len(key_buffers), end_id, mask_end)


def decoder_step_fixed(
    ids: torch.Tensor,
    step: torch.Tensor,
    first: torch.Tensor,
    mask_end: torch.Tensor,
    parents: torch.Tensor,
    w: StackWeights,
    key_sources: list[torch.Tensor],
    value_sources: list[torch.Tensor],
    key_buffers: list[torch.Tensor],
    value_buffers: list[torch.Tensor],
    cross_keys: list[torch.Tensor],
    cross_values: list[torch.Tensor],
    cross_keep: torch.Tensor,
    rows_per_sentence: int,
    end_id: int,
) -> torch.Tensor:
    """decoder_step with every shape fixed, so that a CUDA graph can replay it: the step, and
    whether it is a start-from-zero first step and masks </s>, are tensors ([1]); the rows
    are reordered here (row r continues row parents[r] of the `*_sources` buffers, written into
    `*_buffers`); the attention runs over the whole capacity with the steps after `step`
    masked. Returns the log-probabilities [rows, vocab] (float32).

    The buffers are row-major, [rows, heads, capacity, head_dim]: the reorder copies one block
    per row (on an H100 a layer's buffer of 640 rows x 64 steps took 0.028 ms so, 0.069 ms
    time-major), and a row's heads are the batches of the attention's products as they are."""
    rows = ids.size(0)
    heads = w.heads
    depth = w.embeddings.size(1)
    head_dim = depth // heads
    capacity = key_buffers[0].size(2)
    scale = 1.0 / math.sqrt(float(head_dim))
    for layer in range(len(key_buffers)):
        torch.index_select(key_sources[layer], 0, parents, out=key_buffers[layer])
        torch.index_select(value_sources[layer], 0, parents, out=value_buffers[layer])
    position = w.positions.index_select(0, step)
    embedded = F.embedding(ids, w.embeddings) * w.embedding_scale + position
    x = torch.where(first, position.expand(rows, depth), embedded)
    x = _outer_norm(x, w, w.embedding_norm)
    later = (torch.arange(capacity, device=ids.device) > step).view(1, 1, capacity)
    for layer in range(len(key_buffers)):
        h = _norm(x, w, 3 * layer) if w.pre_norm else x
        qkv = _linear(h, w, 6 * layer).view(rows, 3, heads, head_dim)
        key_buffer = key_buffers[layer]
        value_buffer = value_buffers[layer]
        key_buffer.index_copy_(2, step, qkv[:, 1].unsqueeze(2))
        value_buffer.index_copy_(2, step, qkv[:, 2].unsqueeze(2))
        keys = key_buffer.view(rows * heads, capacity, head_dim)
        values = value_buffer.view(rows * heads, capacity, head_dim)
        q = (qkv[:, 0] * scale).reshape(rows * heads, 1, head_dim)
        scores = torch.bmm(q, keys.transpose(1, 2)).masked_fill(later, -math.inf)
        attention = torch.softmax(scores, dim=-1)
        h = torch.bmm(attention, values).view(rows, depth)
        x = _rest_of_layer(x, h, w, layer, cross_keys, cross_values, cross_keep, rows_per_sentence)
    logits = _logits(x, w, len(key_buffers))
    logits[:, end_id].masked_fill_(mask_end, -math.inf)
    return torch.log_softmax(logits, dim=-1, dtype=torch.float32)


def _rest_of_layer(
    x: torch.Tensor,
    attended: torch.Tensor,
    w: StackWeights,
    layer: int,
    cross_keys: list[torch.Tensor],
    cross_values: list[torch.Tensor],
    cross_keep: torch.Tensor,
    rows_per_sentence: int,
) -> torch.Tensor:
    """A decoder layer after its self-attention (`attended`, [rows, depth]): the output
    linear and residual, the cross-attention on the sentence's encoder keys/values, the
    feed-forward. Per decoder layer 6 linears (self-attention q/k/v and output, cross-attention
    query and output, feed-forward inner and outer) and 3 layer norms (gamma, beta each)."""
    rows = x.size(0)
    heads = w.heads
    depth = x.size(1)
    head_dim = depth // heads
    sentences = rows // rows_per_sentence
    linear = 6 * layer
    norm = 3 * layer
    pre_norm = w.pre_norm
    h = _linear(attended, w, linear + 1)
    x = x + h if pre_norm else _norm(x + h, w, norm)
    # cross-attention on the sentence's encoder keys/values
    h = _norm(x, w, norm + 1) if pre_norm else x
    q = _linear(h, w, linear + 2)
    q = q.view(sentences, rows_per_sentence, heads, head_dim).transpose(1, 2)
    h = F.scaled_dot_product_attention(
        q, cross_keys[layer], cross_values[layer], attn_mask=cross_keep
    )
    h = _linear(h.transpose(1, 2).reshape(rows, depth), w, linear + 3)
    x = x + h if pre_norm else _norm(x + h, w, norm + 1)
    # feed-forward
    h = _norm(x, w, norm + 2) if pre_norm else x
    h = activate(_linear(h, w, linear + 4), w.activation)
    h = _linear(h, w, linear + 5)
    return x + h if pre_norm else _norm(x + h, w, norm + 2)


def _log_probs(
    x: torch.Tensor, w: StackWeights, layers: int, end_id: int, mask_end: bool
) -> torch.Tensor:
    """The output projection and a float32 softmax, </s> masked first with `mask_end`."""
    logits = _logits(x, w, layers)
    if mask_end:
        logits[:, end_id] = -math.inf
    return torch.log_softmax(logits, dim=-1, dtype=torch.float32)


def _logits(x: torch.Tensor, w: StackWeights, layers: int) -> torch.Tensor:
    """The output projection (the last linear, index 6 * layers), its padding cut off."""
    logits = _linear(_outer_norm(x, w, w.final_norm), w, 6 * layers)
    if w.outputs > 0 and logits.size(1) != w.outputs:
        logits = logits[:, : w.outputs]
    return logits


def encoder_pass(
    ids: torch.Tensor, lengths: torch.Tensor, w: StackWeights, layers: int
) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """Encode padded source ids [batch, time]; return per decoder layer the cross-attention
    keys and values [batch, heads, time, head_dim], and the key mask [batch, 1, 1, time]
    (True = a real token).

    Linears: per encoder layer 4 (self-attention q/k/v and output, feed-forward inner and
    outer), then one key/value linear per decoder layer. Norms: 2 per encoder layer."""
    batch = ids.size(0)
    time = ids.size(1)
    heads = w.heads
    depth = w.embeddings.size(1)
    head_dim = depth // heads
    x = F.embedding(ids, w.embeddings) * w.embedding_scale + w.positions[:time]
    x = _outer_norm(x, w, w.embedding_norm)
    pre_norm = w.pre_norm
    keep = (torch.arange(time, device=ids.device)[None, :] < lengths[:, None])[:, None, None, :]
    for layer in range(layers):
        linear = 4 * layer
        norm = 2 * layer
        h = _norm(x, w, norm) if pre_norm else x
        qkv = _linear(h, w, linear).view(batch, time, 3, heads, head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        h = _linear(h.transpose(1, 2).reshape(batch, time, depth), w, linear + 1)
        x = x + h if pre_norm else _norm(x + h, w, norm)
        h = _norm(x, w, norm + 1) if pre_norm else x
        h = activate(_linear(h, w, linear + 2), w.activation)
        h = _linear(h, w, linear + 3)
        x = x + h if pre_norm else _norm(x + h, w, norm + 1)
    x = _outer_norm(x, w, w.final_norm)
    cross_keys: list[torch.Tensor] = []
    cross_values: list[torch.Tensor] = []
    for index in range(4 * layers, _linear_count(w)):
        kv = _linear(x, w, index).view(batch, time, 2, heads, head_dim)
        k, v = kv.permute(2, 0, 3, 1, 4).unbind(0)
        cross_keys.append(k)
        cross_values.append(v)
    return cross_keys, cross_values, keep


def _scripted(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` compiled by TorchScript, or itself where scripting is not possible (sources
    not shipped, a torch without TorchScript): slower, same results."""
    try:
        with warnings.catch_warnings():
            # Deprecated in favour of torch.compile, which needs a C++ compiler where the server
            # runs and compiles per shape; the [torch] extra pins a torch that has TorchScript.
            warnings.simplefilter("ignore", DeprecationWarning)
            scripted: Callable[..., Any] = torch.jit.script(function)
            return scripted
    except Exception as exc:  # noqa: BLE001 - any scripting failure leaves the eager function
        log.warning(
            "torch engine: TorchScript unavailable for %s (%s); running it eagerly, slower",
            function.__name__,
            exc,
        )
        return function


@lru_cache(maxsize=1)
def scripted_decoder_step() -> Callable[..., torch.Tensor]:
    return _scripted(decoder_step)


@lru_cache(maxsize=1)
def scripted_encoder_pass() -> Callable[..., Any]:
    return _scripted(encoder_pass)


@lru_cache(maxsize=1)
def scripted_fixed_step() -> Callable[..., torch.Tensor]:
    return _scripted(decoder_step_fixed)
