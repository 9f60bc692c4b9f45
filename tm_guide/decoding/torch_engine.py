"""Fast exact step decoder: the bundle's CTranslate2 Transformer re-run in PyTorch with a K/V cache.

CTranslate2's Python API cannot add a reward inside its own search, and forcing prefixes through
translate_batch costs a full re-decode per step. This engine reads the very weights of the bundle's
model.bin (one model format), encodes each batch once, computes the cross-attention keys/values
once, and per step runs only the newest token of every live hypothesis with cached self-attention
keys/values. Int8 weights are dequantized (weight / per-row scale) to float32 on load.

Supported: CTranslate2's TransformerSpec as produced for Marian / OPUS-MT and similar
encoder-decoder Transformers (pre- or post-norm, sinusoidal or stored position encodings,
embedding scale, optional layernorm_embedding, ReLU/GELU/Swish/... activation, shared embeddings,
output bias, start_from_zero_embedding). Anything else is refused with a ModelError naming it.

Needs the optional [torch] extra.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tm_guide.decoding.model_file import CT2ModelFile, read_model_file
from tm_guide.errors import ModelError

try:
    import torch
    from torch import nn
    from torch.nn import functional as F
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ModelError(
        "the torch engine needs PyTorch: install the [torch] extra (pip install 'tm-guide[torch]')"
    ) from exc

# CTranslate2's LayerNorm epsilon when the config does not set one.
_DEFAULT_LAYER_NORM_EPSILON = 1e-5

# Keys whose presence means an architecture feature this engine does not implement.
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


def _activation(code: int):  # noqa: ANN202 - returns a torch function
    table = {
        0: F.relu,
        1: lambda x: F.gelu(x, approximate="tanh"),
        2: F.silu,
        3: F.gelu,
        4: lambda x: x * torch.sigmoid(1.702 * x),
        5: torch.tanh,
        6: torch.sigmoid,
    }
    if code not in table:
        raise ModelError(f"activation code {code} is not supported by the torch engine")
    return table[code]


def _sinusoidal_encodings(length: int, depth: int) -> np.ndarray:
    """CTranslate2's SinusoidalPositionEncoder: sin in the first half, cos in the second."""
    half = depth // 2
    timescale = math.log(10000.0) / max(half - 1, 1)
    inv = np.exp(np.arange(half, dtype=np.float32) * -timescale)
    positions = np.arange(length, dtype=np.float32)[:, None] * inv[None, :]
    return np.concatenate([np.sin(positions), np.cos(positions)], axis=1).astype(np.float32)


class _Weights:
    """Typed access to one scope of the model file."""

    def __init__(self, model: CT2ModelFile, scope: str) -> None:
        self.model = model
        self.scope = scope

    def name(self, key: str) -> str:
        return f"{self.scope}/{key}"

    def has(self, key: str) -> bool:
        return self.model.has(self.name(key))

    def tensor(self, key: str) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(self.model.dequantized(self.name(key))))

    def linear(self, key: str) -> nn.Linear:
        weight = self.tensor(f"{key}/weight")
        bias_key = f"{key}/bias"
        layer = nn.Linear(weight.shape[1], weight.shape[0], bias=self.has(bias_key))
        with torch.no_grad():
            layer.weight.copy_(weight)
            if self.has(bias_key):
                layer.bias.copy_(self.tensor(bias_key))
        return layer

    def layer_norm(self, key: str, epsilon: float) -> nn.LayerNorm:
        gamma = self.tensor(f"{key}/gamma")
        norm = nn.LayerNorm(gamma.shape[0], eps=epsilon)
        with torch.no_grad():
            norm.weight.copy_(gamma)
            norm.bias.copy_(self.tensor(f"{key}/beta"))
        return norm

    def scalar(self, key: str, default: float | int | None = None) -> float | int:
        return self.model.scalar(self.name(key), default)


class _Attention(nn.Module):
    def __init__(self, w: _Weights, num_heads: int, self_attention: bool, epsilon: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.self_attention = self_attention
        if self_attention:
            self.qkv = w.linear("linear_0")
            self.out = w.linear("linear_1")
            depth = self.out.out_features
        else:
            self.q = w.linear("linear_0")
            self.kv = w.linear("linear_1")
            self.out = w.linear("linear_2")
            depth = self.q.out_features
        self.head_dim = depth // num_heads
        self.norm = w.layer_norm("layer_norm", epsilon)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, time, _ = x.shape
        return x.view(batch, time, self.num_heads, self.head_dim).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, _, time, _ = x.shape
        return x.transpose(1, 2).reshape(batch, time, self.num_heads * self.head_dim)


class _FeedForward(nn.Module):
    def __init__(self, w: _Weights, activation, epsilon: float) -> None:  # noqa: ANN001
        super().__init__()
        self.inner = w.linear("linear_0")
        self.outer = w.linear("linear_1")
        self.norm = w.layer_norm("layer_norm", epsilon)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.activation(self.inner(x)))


def _check_supported(model: CT2ModelFile) -> None:
    if model.spec_name != "TransformerSpec":
        raise ModelError(f"the torch engine supports TransformerSpec models, not {model.spec_name}")
    for name in model.variables:
        key = name.rsplit("/", 1)[-1]
        if key in _UNSUPPORTED_KEYS:
            raise ModelError(f"the torch engine does not implement {name!r}")
    for flag in ("decoder/alibi", "decoder/parallel_residual", "encoder/multi_query_attention"):
        if model.has(flag) and model.scalar(flag):
            raise ModelError(f"the torch engine does not implement {flag!r}")
    if model.has("encoder/embeddings_1/weight"):
        raise ModelError("the torch engine does not implement source factors (embeddings_1)")
    if model.config.get("multi_query_attention"):
        raise ModelError("the torch engine does not implement multi-query attention")


class _Stack(nn.Module):
    """What encoder and decoder share: embeddings, positions, norms."""

    def __init__(self, model: CT2ModelFile, scope: str, epsilon: float) -> None:
        super().__init__()
        w = _Weights(model, scope)
        embeddings_key = "embeddings_0" if w.has("embeddings_0/weight") else "embeddings"
        self.embeddings = nn.Parameter(w.tensor(f"{embeddings_key}/weight"), requires_grad=False)
        depth = self.embeddings.shape[1]
        scale = w.scalar("scale_embeddings", 1)
        if model.has(w.name(f"{embeddings_key}/multiply_by_sqrt_depth")) and w.scalar(
            f"{embeddings_key}/multiply_by_sqrt_depth"
        ):
            scale = True
        if isinstance(scale, bool) or w.model.get(w.name("scale_embeddings")).dtype == np.int8:
            self.embedding_scale = math.sqrt(depth) if scale else 1.0
        else:
            self.embedding_scale = float(scale)
        if w.has("position_encodings/encodings"):
            encodings = w.tensor("position_encodings/encodings")
        else:
            encodings = torch.from_numpy(_sinusoidal_encodings(1024, depth))
        self.positions = nn.Parameter(encodings, requires_grad=False)
        self.pre_norm = bool(w.scalar("pre_norm", 1))
        self.final_norm = w.layer_norm("layer_norm", epsilon) if w.has("layer_norm/gamma") else None
        self.embedding_norm = (
            w.layer_norm("layernorm_embedding", epsilon)
            if w.has("layernorm_embedding/gamma")
            else None
        )
        self.num_heads = int(w.scalar("num_heads"))
        self.activation = _activation(int(w.scalar("activation", 0)))
        self.weights = w

    def position(self, start: int, length: int) -> torch.Tensor:
        if start + length > self.positions.shape[0]:
            raise ModelError(
                f"sequence of {start + length} positions exceeds the model's "
                f"{self.positions.shape[0]} position encodings"
            )
        return self.positions[start : start + length]

    def sublayer(self, norm: nn.Module, x: torch.Tensor, fn) -> torch.Tensor:  # noqa: ANN001
        if self.pre_norm:
            return x + fn(norm(x))
        return norm(x + fn(x))


class TransformerModel(nn.Module):
    """A CTranslate2 TransformerSpec model, for encoding and stepwise decoding."""

    def __init__(self, model: CT2ModelFile) -> None:
        super().__init__()
        _check_supported(model)
        epsilon = model.config.get("layer_norm_epsilon") or _DEFAULT_LAYER_NORM_EPSILON
        self.encoder = _Stack(model, "encoder", epsilon)
        self.decoder = _Stack(model, "decoder", epsilon)
        enc_layers = []
        i = 0
        while model.has(f"encoder/layer_{i}/self_attention/linear_0/weight"):
            w = _Weights(model, f"encoder/layer_{i}")
            enc_layers.append(
                nn.ModuleDict(
                    {
                        "self_attention": _Attention(
                            _Weights(model, w.name("self_attention")),
                            self.encoder.num_heads,
                            True,
                            epsilon,
                        ),
                        "ffn": _FeedForward(
                            _Weights(model, w.name("ffn")), self.encoder.activation, epsilon
                        ),
                    }
                )
            )
            i += 1
        dec_layers = []
        i = 0
        while model.has(f"decoder/layer_{i}/self_attention/linear_0/weight"):
            w = _Weights(model, f"decoder/layer_{i}")
            dec_layers.append(
                nn.ModuleDict(
                    {
                        "self_attention": _Attention(
                            _Weights(model, w.name("self_attention")),
                            self.decoder.num_heads,
                            True,
                            epsilon,
                        ),
                        "attention": _Attention(
                            _Weights(model, w.name("attention")),
                            self.decoder.num_heads,
                            False,
                            epsilon,
                        ),
                        "ffn": _FeedForward(
                            _Weights(model, w.name("ffn")), self.decoder.activation, epsilon
                        ),
                    }
                )
            )
            i += 1
        if not enc_layers or not dec_layers:
            raise ModelError("model.bin has no encoder or decoder layers")
        self.encoder_layers = nn.ModuleList(enc_layers)
        self.decoder_layers = nn.ModuleList(dec_layers)
        self.projection = _Weights(model, "decoder").linear("projection")
        self.start_from_zero = bool(
            model.has("decoder/start_from_zero_embedding")
            and model.scalar("decoder/start_from_zero_embedding")
        )
        if model.has("decoder/scale_outputs"):
            raise ModelError("the torch engine does not implement decoder/scale_outputs")

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Encoder output [batch, time, depth], key mask [batch, 1, 1, time] (True = keep)."""
        enc = self.encoder
        time = ids.shape[1]
        x = F.embedding(ids, enc.embeddings) * enc.embedding_scale + enc.position(0, time)
        if enc.embedding_norm is not None:
            x = enc.embedding_norm(x)
        keep = (torch.arange(time, device=ids.device)[None, :] < lengths[:, None])[:, None, None, :]
        for layer in self.encoder_layers:
            attention: _Attention = layer["self_attention"]
            x = enc.sublayer(
                attention.norm, x, lambda h, a=attention: self._self_attend(a, h, keep)
            )
            ffn: _FeedForward = layer["ffn"]
            x = enc.sublayer(ffn.norm, x, ffn)
        if enc.final_norm is not None:
            x = enc.final_norm(x)
        return x, keep

    @staticmethod
    def _self_attend(attention: _Attention, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        q, k, v = attention.qkv(x).chunk(3, dim=-1)
        q, k, v = (attention.split_heads(t) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return attention.out(attention.merge_heads(out))

    def cross_keys_values(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per decoder layer, the encoder-side keys and values [batch, heads, time, head_dim]."""
        result = []
        for layer in self.decoder_layers:
            attention: _Attention = layer["attention"]
            k, v = attention.kv(memory).chunk(2, dim=-1)
            result.append((attention.split_heads(k), attention.split_heads(v)))
        return result

    def decode_step(
        self,
        ids: torch.Tensor,
        step: int,
        self_cache: list[tuple[torch.Tensor, torch.Tensor]] | None,
        cross: list[tuple[torch.Tensor, torch.Tensor]],
        cross_keep: torch.Tensor,
        rows_per_sentence: int,
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Logits [rows, vocab] for one new token per row, and the extended self-attention cache.

        Rows are grouped by sentence (`rows_per_sentence` each), matching `cross` [sentences, ...],
        so the cross-attention needs no copy of the encoder keys/values per hypothesis."""
        dec = self.decoder
        rows = ids.shape[0]
        sentences = rows // rows_per_sentence
        x = F.embedding(ids, dec.embeddings) * dec.embedding_scale
        if step == 0 and self.start_from_zero:
            x = torch.zeros_like(x)
        x = (x + dec.position(step, 1)[0])[:, None, :]  # [rows, 1, depth]
        if dec.embedding_norm is not None:
            x = dec.embedding_norm(x)
        new_cache = []
        for index, layer in enumerate(self.decoder_layers):
            attention: _Attention = layer["self_attention"]
            cached = self_cache[index] if self_cache is not None else None
            holder: list[tuple[torch.Tensor, torch.Tensor]] = []

            def self_attend(h: torch.Tensor, a: _Attention = attention, c=cached, out=holder):  # noqa: ANN001
                q, k, v = a.qkv(h).chunk(3, dim=-1)
                q, k, v = (a.split_heads(t) for t in (q, k, v))
                if c is not None:
                    k = torch.cat([c[0], k], dim=2)
                    v = torch.cat([c[1], v], dim=2)
                out.append((k, v))
                return a.out(a.merge_heads(F.scaled_dot_product_attention(q, k, v)))

            x = dec.sublayer(attention.norm, x, self_attend)
            new_cache.append(holder[0])
            cross_attention: _Attention = layer["attention"]
            keys, values = cross[index]

            def cross_attend(h: torch.Tensor, a: _Attention = cross_attention, k=keys, v=values):  # noqa: ANN001
                q = a.q(h)  # [rows, 1, depth]
                q = q.view(sentences, rows_per_sentence, a.num_heads, a.head_dim).transpose(1, 2)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=cross_keep)
                out = out.transpose(1, 2).reshape(rows, 1, a.num_heads * a.head_dim)
                return a.out(out)

            x = dec.sublayer(cross_attention.norm, x, cross_attend)
            ffn: _FeedForward = layer["ffn"]
            x = dec.sublayer(ffn.norm, x, ffn)
        if dec.final_norm is not None:
            x = dec.final_norm(x)
        return self.projection(x[:, 0, :]), new_cache


@dataclass
class _TorchState:
    cross: list[tuple[torch.Tensor, torch.Tensor]]
    cross_keep: torch.Tensor
    cross_sentences: np.ndarray  # batch index of each sentence held in `cross`
    self_cache: list[tuple[torch.Tensor, torch.Tensor]] | None
    step: int


class TorchStepDecoder:
    """StepDecoder running TransformerModel; same weights as the bundle's CTranslate2 model."""

    def __init__(
        self,
        model_dir: Path | str,
        device: str = "cpu",
        num_threads: int | None = None,
        quantize: bool = False,
    ) -> None:
        model_file = read_model_file(Path(model_dir))
        self.source_index = {t: i for i, t in enumerate(model_file.source_vocabulary)}
        self.target_vocabulary = model_file.target_vocabulary
        config = model_file.config
        self.unk_id = self.source_index.get(config.get("unk_token", "<unk>"), 0)
        target_index = {t: i for i, t in enumerate(self.target_vocabulary)}
        eos = config.get("eos_token", "</s>")
        if eos not in target_index:
            raise ModelError(f"end token {eos!r} is not in the target vocabulary")
        self._end_id = target_index[eos]
        start_token = config.get("decoder_start_token") or config.get("bos_token", "<s>")
        self._start_id = target_index.get(start_token, self._end_id)
        self.add_source_bos = bool(config.get("add_source_bos", False))
        self.add_source_eos = bool(config.get("add_source_eos", False))
        self.bos = config.get("bos_token", "<s>")
        self.eos = eos
        if num_threads:
            torch.set_num_threads(num_threads)
        self.device = torch.device(device)
        model = TransformerModel(model_file).eval()
        if quantize:
            if self.device.type != "cpu":
                raise ModelError("dynamic int8 quantization of the torch engine is CPU only")
            model = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
        self.model = model.to(self.device)

    @property
    def vocab_size(self) -> int:
        return len(self.target_vocabulary)

    @property
    def start_id(self) -> int:
        return self._start_id

    @property
    def end_id(self) -> int:
        return self._end_id

    def source_ids(self, tokens: Sequence[str]) -> list[int]:
        ids = [self.source_index.get(t, self.unk_id) for t in tokens]
        if self.add_source_bos:
            ids.insert(0, self.source_index.get(self.bos, self.unk_id))
        if self.add_source_eos:
            ids.append(self.source_index.get(self.eos, self.unk_id))
        return ids

    @torch.inference_mode()
    def start(self, sources: Sequence[Sequence[str]]) -> _TorchState:
        ids = [self.source_ids(tokens) for tokens in sources]
        longest = max(1, max(len(i) for i in ids))
        padded = torch.zeros((len(ids), longest), dtype=torch.long)
        for row, seq in enumerate(ids):
            padded[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        lengths = torch.tensor([len(i) for i in ids], dtype=torch.long)
        memory, keep = self.model.encode(padded.to(self.device), lengths.to(self.device))
        return _TorchState(
            cross=self.model.cross_keys_values(memory),
            cross_keep=keep,
            cross_sentences=np.arange(len(ids)),
            self_cache=None,
            step=0,
        )

    @torch.inference_mode()
    def step(
        self,
        state: object,
        parents: np.ndarray | None,
        sentences: np.ndarray,
        last_ids: np.ndarray,
        mask_end: bool,
    ) -> np.ndarray:
        assert isinstance(state, _TorchState)
        rows_per_sentence = len(sentences) // len(np.unique(sentences))
        live = np.asarray(sentences[::rows_per_sentence])
        if not np.array_equal(live, state.cross_sentences):
            keep = torch.from_numpy(np.searchsorted(state.cross_sentences, live)).to(self.device)
            state.cross = [
                (k.index_select(0, keep), v.index_select(0, keep)) for k, v in state.cross
            ]
            state.cross_keep = state.cross_keep.index_select(0, keep)
            state.cross_sentences = live
        cache = state.self_cache
        if cache is not None and parents is not None:
            index = torch.from_numpy(np.asarray(parents, dtype=np.int64)).to(self.device)
            cache = [(k.index_select(0, index), v.index_select(0, index)) for k, v in cache]
        ids = torch.from_numpy(np.asarray(last_ids, dtype=np.int64)).to(self.device)
        logits, state.self_cache = self.model.decode_step(
            ids, state.step, cache, state.cross, state.cross_keep, rows_per_sentence
        )
        state.step += 1
        logits = logits.float()
        if mask_end:
            logits[:, self._end_id] = float("-inf")
        return torch.log_softmax(logits, dim=-1).cpu().numpy()
