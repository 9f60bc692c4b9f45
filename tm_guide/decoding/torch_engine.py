"""Fast exact step decoder: the bundle's CTranslate2 Transformer re-run in PyTorch with a K/V cache.

CTranslate2's Python API cannot add a reward inside its own search, and forcing prefixes through
translate_batch costs a full re-decode per step. This engine reads the very weights of the bundle's
model.bin (one model format), encodes each batch once, computes the cross-attention keys/values
once, and per step runs only the newest token of every live hypothesis with cached self-attention
keys/values. Int8 weights are dequantized (weight / per-row scale) to float32 on load, or, with
quantize=True (GuidedTranslator's default for an int8 bundle on CPU), kept as int8 for fbgemm's
dynamic int8 linear. The computation itself is in torch_step (TorchScript); this module loads
the weights and keeps the cache.

Supported: CTranslate2's TransformerSpec as produced for Marian / OPUS-MT and similar
encoder-decoder Transformers (pre- or post-norm, sinusoidal or stored position encodings,
embedding scale, optional layernorm_embedding, ReLU/GELU/Swish/... activation, shared embeddings,
output bias, start_from_zero_embedding). Anything else is refused with a ModelError naming it.

Needs the optional [torch] extra.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tm_guide.decoding.candidates import CandidateRequest, Candidates
from tm_guide.decoding.model_file import CT2ModelFile, read_model_file
from tm_guide.decoding.step import StepRows
from tm_guide.decoding.torch_candidates import DeviceTables, select, upload
from tm_guide.decoding.torch_graphs import (
    FIRST_CAPACITY,
    FixedDecoding,
    padded_time,
    physical_rows,
)
from tm_guide.decoding.torch_step import (
    ACTIVATIONS,
    StackWeights,
    scripted_decoder_step,
    scripted_encoder_pass,
)
from tm_guide.decoding.transformer_spec import (
    SourceIds,
    check_supported,
    count_layers,
    embedding_scale,
    embeddings_key,
    layer_norm_epsilon,
    position_encodings,
    start_token,
)
from tm_guide.decoding.vocabulary import TargetVocabulary
from tm_guide.errors import ModelError

try:
    import torch
    from torch import nn
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ModelError(
        "the torch engine needs PyTorch: install the [torch] extra (pip install 'tm-guide[torch]')"
    ) from exc


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
        raw = self.model.get(self.name(f"{key}/weight"))
        if raw.dtype == np.int8:
            # Kept for quantize=True: CTranslate2's own int8 weights and per-row scales.
            scale_name = self.model.aliases.get(
                self.name(f"{key}/weight"), self.name(f"{key}/weight")
            )
            layer.ct2_int8 = (raw, self.model.get(scale_name + "_scale"))  # type: ignore[assignment]
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


class _FeedForward(nn.Module):
    def __init__(self, w: _Weights, epsilon: float) -> None:
        super().__init__()
        self.inner = w.linear("linear_0")
        self.outer = w.linear("linear_1")
        self.norm = w.layer_norm("layer_norm", epsilon)


class _Stack(nn.Module):
    """What encoder and decoder share: embeddings, positions, norms."""

    def __init__(self, model: CT2ModelFile, scope: str, epsilon: float) -> None:
        super().__init__()
        w = _Weights(model, scope)
        table = embeddings_key(model, scope)
        self.embeddings = nn.Parameter(
            torch.from_numpy(np.ascontiguousarray(model.dequantized(f"{table}/weight"))),
            requires_grad=False,
        )
        depth = self.embeddings.shape[1]
        self.embedding_scale = embedding_scale(model, scope, depth)
        self.positions = nn.Parameter(
            torch.from_numpy(position_encodings(model, scope, depth)), requires_grad=False
        )
        self.pre_norm = bool(w.scalar("pre_norm", 1))
        self.final_norm = w.layer_norm("layer_norm", epsilon) if w.has("layer_norm/gamma") else None
        self.embedding_norm = (
            w.layer_norm("layernorm_embedding", epsilon)
            if w.has("layernorm_embedding/gamma")
            else None
        )
        self.num_heads = int(w.scalar("num_heads"))
        self.activation = int(w.scalar("activation", 0))
        if self.activation not in ACTIVATIONS:
            raise ModelError(
                f"activation code {self.activation} is not supported by the torch engine"
            )
        self.weights = w

    def check_length(self, length: int) -> None:
        """A ModelError naming the limit when a sequence needs more position encodings than
        the model has."""
        if length > self.positions.shape[0]:
            raise ModelError(
                f"sequence of {length} positions exceeds the model's "
                f"{self.positions.shape[0]} position encodings"
            )


class _EncoderLayer(nn.Module):
    def __init__(self, model: CT2ModelFile, scope: str, stack: _Stack, epsilon: float) -> None:
        super().__init__()
        self.self_attention = _Attention(
            _Weights(model, f"{scope}/self_attention"), stack.num_heads, True, epsilon
        )
        self.ffn = _FeedForward(_Weights(model, f"{scope}/ffn"), epsilon)

    def linears(self) -> list[nn.Module]:
        """In torch_step.encoder_pass's order."""
        attention, ffn = self.self_attention, self.ffn
        return [attention.qkv, attention.out, ffn.inner, ffn.outer]

    def norms(self) -> list[nn.Module]:
        return [self.self_attention.norm, self.ffn.norm]


class _DecoderLayer(nn.Module):
    def __init__(self, model: CT2ModelFile, scope: str, stack: _Stack, epsilon: float) -> None:
        super().__init__()
        self.self_attention = _Attention(
            _Weights(model, f"{scope}/self_attention"), stack.num_heads, True, epsilon
        )
        self.attention = _Attention(
            _Weights(model, f"{scope}/attention"), stack.num_heads, False, epsilon
        )
        self.ffn = _FeedForward(_Weights(model, f"{scope}/ffn"), epsilon)

    def linears(self) -> list[nn.Module]:
        """In torch_step.decoder_step's order."""
        own, cross, ffn = self.self_attention, self.attention, self.ffn
        return [own.qkv, own.out, cross.q, cross.out, ffn.inner, ffn.outer]

    def norms(self) -> list[nn.Module]:
        return [self.self_attention.norm, self.attention.norm, self.ffn.norm]


class SelfAttentionCache:
    """Keys and values of the hypotheses so far, time-major [capacity, rows, heads, head_dim].

    Time-major so that reordering the beams is one index_select into a second buffer (the live
    time steps of a time-major buffer are one contiguous block), and the attention reads the
    buffer through strided views without copying it.
    """

    def __init__(
        self,
        layers: int,
        heads: int,
        head_dim: int,
        device: torch.device,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self.layers, self.heads, self.head_dim, self.device = layers, heads, head_dim, device
        self.dtype = dtype
        self.length = 0
        self.rows = 0
        # per layer, keys then values: [capacity, rows, heads, head_dim]
        self.buffers: list[torch.Tensor] = []
        # the second buffer set of the same shape, written by the next reorder (no allocation
        # per step: fresh memory costs page faults on every step)
        self.spare: list[torch.Tensor] = []

    def _allocate(self, capacity: int, rows: int) -> list[torch.Tensor]:
        shape = (capacity, rows, self.heads, self.head_dim)
        return [
            torch.empty(shape, device=self.device, dtype=self.dtype) for _ in range(2 * self.layers)
        ]

    def reorder(self, parents: torch.Tensor | None, rows: int) -> None:
        """Row i continues row parents[i] (None: row i continues row i); makes room for one
        more step."""
        capacity = self.buffers[0].shape[0] if self.buffers else 0
        need = self.length + 1
        if parents is None and rows == self.rows and need <= capacity:
            return
        if need > capacity or not self.spare or self.spare[0].shape[1] != rows:
            new_capacity = max(capacity, 64)
            while new_capacity < need:
                new_capacity *= 2
            self.spare = self._allocate(new_capacity, rows)
        fresh = self.spare
        t = self.length
        if t:
            for old, new in zip(self.buffers, fresh, strict=True):
                if parents is None:
                    new[:t].copy_(old[:t])
                else:
                    torch.index_select(old[:t], 1, parents, out=new[:t])
        if self.buffers and self.buffers[0].shape == fresh[0].shape:
            self.spare = self.buffers
        else:
            self.spare = []
        self.buffers = fresh
        self.rows = rows

    @property
    def keys(self) -> list[torch.Tensor]:
        """Per layer, the key buffer [capacity, rows, heads, head_dim]."""
        return self.buffers[0::2]

    @property
    def values(self) -> list[torch.Tensor]:
        return self.buffers[1::2]


class TransformerModel(nn.Module):
    """A CTranslate2 TransformerSpec model, for encoding and stepwise decoding."""

    def __init__(self, model: CT2ModelFile) -> None:
        super().__init__()
        check_supported(model)
        epsilon = layer_norm_epsilon(model)
        self.epsilon = epsilon
        self.encoder = _Stack(model, "encoder", epsilon)
        self.decoder = _Stack(model, "decoder", epsilon)
        self.encoder_layers = nn.ModuleList(
            _EncoderLayer(model, f"encoder/layer_{i}", self.encoder, epsilon)
            for i in range(count_layers(model, "encoder"))
        )
        self.decoder_layers = nn.ModuleList(
            _DecoderLayer(model, f"decoder/layer_{i}", self.decoder, epsilon)
            for i in range(count_layers(model, "decoder"))
        )
        if not len(self.encoder_layers) or not len(self.decoder_layers):
            raise ModelError("model.bin has no encoder or decoder layers")
        self.projection = _Weights(model, "decoder").linear("projection")
        self.start_from_zero = bool(
            model.has("decoder/start_from_zero_embedding")
            and model.scalar("decoder/start_from_zero_embedding")
        )
        first: _DecoderLayer = self.decoder_layers[0]  # type: ignore[assignment]
        self.heads = first.self_attention.num_heads
        self.head_dim = first.self_attention.head_dim

    def encode(
        self, ids: torch.Tensor, lengths: torch.Tensor
    ) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
        """Per decoder layer the cross-attention keys, and values, [batch, heads, time, head_dim]
        of the padded source `ids` [batch, time]; and the key mask [batch, 1, 1, time]."""
        if not hasattr(self, "_encode"):
            self.prepare()
        self.encoder.check_length(ids.shape[1])
        encoded: tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor] = self._encode(
            ids, lengths, self._encoder_weights, len(self.encoder_layers)
        )
        return encoded

    def prepare(self, pad_outputs_to: int = 1) -> None:
        """Collect the weights as torch_step's StackWeights, for the scripted functions; the
        output projection's rows padded with zeros to a multiple of `pad_outputs_to` (a float
        model: half-precision products on a GPU need aligned sizes to run at speed, and an
        odd vocabulary such as 57,999 made the projection 4x slower on an H100).

        Call after quantization and moving to the device (TorchStepDecoder does)."""
        decoder_layers: list[_DecoderLayer] = list(self.decoder_layers)  # type: ignore[arg-type]
        encoder_layers: list[_EncoderLayer] = list(self.encoder_layers)  # type: ignore[arg-type]
        self._decoder_weights = _stack_weights(
            self.decoder,
            [m for layer in decoder_layers for m in layer.linears()] + [self.projection],
            [n for layer in decoder_layers for n in layer.norms()],
            self.epsilon,
            pad_outputs_to,
        )
        # the decoder's cross-attention keys/values are computed once, with the encoder pass
        self._encoder_weights = _stack_weights(
            self.encoder,
            [m for layer in encoder_layers for m in layer.linears()]
            + [layer.attention.kv for layer in decoder_layers],
            [n for layer in encoder_layers for n in layer.norms()],
            self.epsilon,
        )
        self._step = scripted_decoder_step()
        self._encode = scripted_encoder_pass()

    @property
    def decoder_weights(self) -> StackWeights:
        """The decoder's weights as torch_step's functions take them (after prepare())."""
        if not hasattr(self, "_decoder_weights"):
            self.prepare()
        return self._decoder_weights

    def decode_step(
        self,
        ids: torch.Tensor,
        step: int,
        cache: SelfAttentionCache,
        cross_keys: list[torch.Tensor],
        cross_values: list[torch.Tensor],
        cross_keep: torch.Tensor,
        rows_per_sentence: int,
        end_id: int = -1,
        mask_end: bool = False,
    ) -> torch.Tensor:
        """Log-probabilities [rows, vocab] of one new token per row; `cache` is extended by
        this step (see torch_step.decoder_step)."""
        if not hasattr(self, "_step"):
            self.prepare()
        self.decoder.check_length(step + 1)
        log_probs = self._step(
            ids,
            step,
            self.start_from_zero,
            self._decoder_weights,
            cache.keys,
            cache.values,
            cross_keys,
            cross_values,
            cross_keep,
            rows_per_sentence,
            end_id,
            mask_end,
        )
        cache.length += 1
        return log_probs


def _stack_weights(
    stack: _Stack,
    linears: list[nn.Module],
    norms: list[nn.Module],
    epsilon: float,
    pad_outputs_to: int = 1,
) -> StackWeights:
    """One stack's weights for torch_step (fbgemm's packed int8 linears when quantized), the
    last linear's rows padded to a multiple of `pad_outputs_to` (float weights only)."""
    quantized = not isinstance(linears[-1], nn.Linear)
    weights: list[torch.Tensor] = [] if quantized else [m.weight for m in linears]  # type: ignore[misc]
    biases: list[torch.Tensor | None] = [] if quantized else [m.bias for m in linears]  # type: ignore[misc]
    outputs = 0
    if not quantized and pad_outputs_to > 1 and weights[-1].shape[0] % pad_outputs_to:
        outputs = int(weights[-1].shape[0])
        padded = -(-outputs // pad_outputs_to) * pad_outputs_to
        weight = weights[-1].new_zeros((padded, int(weights[-1].shape[1])))
        weight[:outputs] = weights[-1]
        weights[-1] = weight
        bias = biases[-1]
        if bias is not None:
            grown = bias.new_zeros(padded)
            grown[:outputs] = bias
            biases[-1] = grown
    return StackWeights(
        embeddings=stack.embeddings,
        embedding_scale=float(stack.embedding_scale),
        positions=stack.positions,
        embedding_norm=_norm_pair(stack.embedding_norm),
        packed=(
            [m._packed_params._packed_params for m in linears]  # type: ignore[union-attr]
            if quantized
            else []
        ),
        weights=weights,
        biases=biases,
        norms=[t for norm in norms for t in _norm_pair(norm)],
        final_norm=_norm_pair(stack.final_norm),
        eps=epsilon,
        pre_norm=stack.pre_norm,
        activation=stack.activation,
        heads=stack.num_heads,
        outputs=outputs,
    )


def _norm_pair(norm: nn.Module | None) -> list[torch.Tensor]:
    """[gamma, beta] of a LayerNorm, [] for none."""
    if norm is None:
        return []
    assert isinstance(norm, nn.LayerNorm)
    return [norm.weight, norm.bias]


def _quantize_linear_layers(module: nn.Module) -> None:
    """Swap every Linear for a dynamically quantized int8 one (fbgemm), in place.

    Weights that were int8 in model.bin are used as they are, with CTranslate2's per-row scales,
    so the int8 weights are exactly CTranslate2's; float weights are quantized per row. The
    activations are quantized per call (per tensor), where CTranslate2 quantizes per row: the
    log-probabilities are close to CTranslate2's int8 ones, not equal.
    """
    import warnings

    from torch.ao.nn.quantized import dynamic as qdynamic

    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            with warnings.catch_warnings():  # quantized tensor factories warn of a future removal
                warnings.simplefilter("ignore", UserWarning)
                quantized = qdynamic.Linear(  # type: ignore[no-untyped-call]
                    child.in_features,
                    child.out_features,
                    bias_=child.bias is not None,
                    dtype=torch.qint8,
                )
            source = getattr(child, "ct2_int8", None)
            if source is not None:
                values = torch.from_numpy(np.array(source[0], dtype=np.int8))
                scales = torch.from_numpy(1.0 / source[1].astype(np.float64))
            else:
                weight = child.weight.detach().double()
                amax = weight.abs().amax(dim=1).clamp_min(1e-12)
                scales = amax / 127.0
                values = torch.round(weight / scales[:, None]).clamp(-127, 127).to(torch.int8)
            zero_points = torch.zeros(child.out_features, dtype=torch.long)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                weight_q = torch._make_per_channel_quantized_tensor(values, scales, zero_points, 0)
                bias = child.bias.detach() if child.bias is not None else None
                quantized.set_weight_bias(weight_q, bias)
            setattr(module, name, quantized)
        else:
            _quantize_linear_layers(child)


OUTPUT_ALIGNMENT = 8  # the projection's rows on a GPU: half-precision products want 16 bytes
KEPT_SHAPES = 4  # batch shapes whose fixed buffers (and CUDA graphs) are kept

# what the torch engine computes in: float32 anywhere, half precision on CUDA (as CTranslate2's
# compute_type); "auto" is float16 on CUDA and float32 on the CPU
COMPUTE_TYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def resolve_compute_type(compute_type: str, device_type: str) -> str:
    """`compute_type` made concrete for the device; a ModelError for one it cannot run."""
    if compute_type == "auto":
        return "float16" if device_type == "cuda" else "float32"
    if compute_type not in COMPUTE_TYPES:
        raise ModelError(
            f"compute type must be auto, {', '.join(COMPUTE_TYPES)}, not {compute_type!r}"
        )
    if compute_type != "float32" and device_type != "cuda":
        raise ModelError(f"the torch engine computes in {compute_type} on CUDA only")
    return compute_type


@dataclass
class _TorchState:
    cross_keys: list[torch.Tensor]  # per decoder layer [sentences, heads, time, head_dim]
    cross_values: list[torch.Tensor]
    cross_keep: torch.Tensor
    cross_sentences: np.ndarray  # batch index of each sentence held in the three above
    cache: SelfAttentionCache
    step: int
    # with fixed steps (torch_graphs), from the second step on: the static buffers, each
    # sentence's slot in them, and the physical row of each row of the last step
    fixed: FixedDecoding | None = None
    slot_of: np.ndarray | None = None
    physical: np.ndarray | None = None


class TorchStepDecoder(TargetVocabulary):
    """StepDecoder running TransformerModel; same weights as the bundle's CTranslate2 model."""

    def __init__(
        self,
        model_dir: Path | str,
        device: str = "cpu",
        num_threads: int | None = None,
        quantize: bool = False,
        compute_type: str = "auto",
        fixed_steps: bool | None = None,
        rank_on_device: bool | None = None,
    ) -> None:
        """`fixed_steps`: run the decoder step with fixed shapes, as a CUDA graph on CUDA
        (torch_graphs; None: on CUDA). `rank_on_device`: the search ranks here and gets the
        candidates back (tm_guide.decoding.candidates; None: off the CPU)."""
        model_file = read_model_file(Path(model_dir))
        self.sources = SourceIds(model_file)
        super().__init__(
            model_file.target_vocabulary,
            model_file.config.get("eos_token", "</s>"),
            start_token(model_file),
        )
        if num_threads:
            torch.set_num_threads(num_threads)
        self.device = torch.device(device)
        self.compute_type = resolve_compute_type(compute_type, self.device.type)
        model = TransformerModel(model_file).eval()
        if quantize:
            if self.device.type != "cpu":
                raise ModelError("dynamic int8 quantization of the torch engine is CPU only")
            _quantize_linear_layers(model)
        # int8 weights were dequantized once, on load; the step computes in compute_type and
        # takes its softmax in float32
        self.model = model.to(self.device)
        if self.compute_type != "float32":
            self.model = self.model.to(dtype=COMPUTE_TYPES[self.compute_type])
        self.model.prepare(pad_outputs_to=OUTPUT_ALIGNMENT if self.device.type == "cuda" else 1)
        self._tables = DeviceTables(self.device)
        self.fixed_steps = self.device.type == "cuda" if fixed_steps is None else fixed_steps
        self._rank_on_device = (
            self.device.type != "cpu" if rank_on_device is None else rank_on_device
        )
        if self.fixed_steps and quantize:
            raise ModelError("fixed steps run the float linear layers, not int8 ones")
        self._fixed: OrderedDict[tuple[int, int, int], FixedDecoding] = OrderedDict()
        self._fixed_lock = threading.Lock()  # decoding threads share the kept shapes

    @torch.inference_mode()
    def start(self, sources: Sequence[Sequence[str]]) -> _TorchState:
        ids = [self.sources.source_ids(tokens) for tokens in sources]
        longest = max(1, max(len(i) for i in ids))
        padded = torch.zeros((len(ids), longest), dtype=torch.long)
        for row, seq in enumerate(ids):
            padded[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        lengths = torch.tensor([len(i) for i in ids], dtype=torch.long)
        keys, values, keep = self.model.encode(padded.to(self.device), lengths.to(self.device))
        return _TorchState(
            cross_keys=keys,
            cross_values=values,
            cross_keep=keep,
            cross_sentences=np.arange(len(ids)),
            cache=SelfAttentionCache(
                len(self.model.decoder_layers),
                self.model.heads,
                self.model.head_dim,
                self.device,
                COMPUTE_TYPES[self.compute_type],
            ),
            step=0,
        )

    @property
    def recorded_graphs(self) -> int:
        """CUDA graphs recorded for the batch shapes kept (0 off CUDA, or where recording
        failed and the fixed steps run one by one)."""
        return sum(g is not None for f in self._fixed.values() for g in f.graphs)

    @property
    def ranks_on_device(self) -> bool:
        """On a GPU the search ranks here (tm_guide.decoding.candidates); on the CPU handing
        over every score costs nothing and the compiled search runs on them."""
        return self._rank_on_device

    @torch.inference_mode()
    def step(self, state: object, rows: StepRows) -> np.ndarray:
        log_probs: np.ndarray = self._step_tensor(state, rows).cpu().numpy()
        return log_probs

    @torch.inference_mode()
    def step_candidates(
        self, state: object, rows: StepRows, request: CandidateRequest
    ) -> Candidates:
        rules = upload(request, self._tables, self.vocab_size)  # before the step is queued
        log_probs = self._step_tensor(state, rows)
        return select(log_probs, rules)

    def _step_tensor(self, state: object, rows: StepRows) -> torch.Tensor:
        assert isinstance(state, _TorchState)
        parents, sentences, last_ids = rows.parents, rows.sentences, rows.last_ids
        if parents is not None and self.fixed_steps:
            return self._fixed_step(state, parents, rows)
        # rows of a sentence are contiguous and every live sentence has as many
        rows_per_sentence = int(np.count_nonzero(sentences == sentences[0]))
        live = np.asarray(sentences[::rows_per_sentence])
        if not np.array_equal(live, state.cross_sentences):
            keep = torch.from_numpy(np.searchsorted(state.cross_sentences, live)).to(self.device)
            state.cross_keys = [k.index_select(0, keep) for k in state.cross_keys]
            state.cross_values = [v.index_select(0, keep) for v in state.cross_values]
            state.cross_keep = state.cross_keep.index_select(0, keep)
            state.cross_sentences = live
        index = None
        if parents is not None:
            index = torch.from_numpy(np.asarray(parents, dtype=np.int64)).to(self.device)
        state.cache.reorder(index, len(sentences))
        ids = torch.from_numpy(np.asarray(last_ids, dtype=np.int64)).to(self.device)
        log_probs = self.model.decode_step(
            ids,
            state.step,
            state.cache,
            state.cross_keys,
            state.cross_values,
            state.cross_keep,
            rows_per_sentence,
            end_id=self._end_id,
            mask_end=rows.mask_end,
        )
        state.step += 1
        return log_probs

    def _fixed_step(self, state: _TorchState, parents: np.ndarray, rows: StepRows) -> torch.Tensor:
        """A step after the first on the fixed buffers (torch_graphs): the live rows are
        placed on their physical rows, and their log-probabilities taken back out."""
        sentences = rows.sentences
        rows_per_sentence = int(np.count_nonzero(sentences == sentences[0]))
        if state.fixed is None:
            self._enter_fixed(state, rows_per_sentence)
        fixed, slot_of, before = state.fixed, state.slot_of, state.physical
        assert fixed is not None and slot_of is not None and before is not None
        physical = physical_rows(sentences, slot_of, rows_per_sentence)
        parents_of = np.arange(fixed.rows, dtype=np.int64)
        parents_of[physical] = before[np.asarray(parents, dtype=np.int64)]
        ids = np.zeros(fixed.rows, dtype=np.int64)
        ids[physical] = rows.last_ids
        self.model.decoder.check_length(state.step + 1)
        out = fixed.run(
            torch.from_numpy(ids), torch.from_numpy(parents_of), state.step, rows.mask_end
        )
        state.physical = physical
        state.step += 1
        if len(physical) == fixed.rows:
            return out
        return out.index_select(0, torch.from_numpy(physical).to(self.device))

    def _enter_fixed(self, state: _TorchState, rows_per_sentence: int) -> None:
        """The fixed buffers for this batch, holding the first step's cache (one row per
        sentence) and the encoder's keys/values."""
        sentences = len(state.cross_sentences)
        time = padded_time(state.cross_keys[0].shape[2])
        fixed = self._fixed_decoding(sentences, rows_per_sentence, time, state)
        fixed.load_cross(state.cross_keys, state.cross_values, state.cross_keep)
        fixed.start(state.cache.keys, state.cache.values)
        slot_of = np.full(int(state.cross_sentences.max()) + 1, -1, dtype=np.int64)
        slot_of[state.cross_sentences] = np.arange(sentences)
        state.fixed, state.slot_of = fixed, slot_of
        state.physical = slot_of[state.cross_sentences] * rows_per_sentence

    def _fixed_decoding(
        self, sentences: int, rows_per_sentence: int, time: int, state: _TorchState
    ) -> FixedDecoding:
        """A FixedDecoding of this shape that no live search holds, now held by `state`'s;
        kept for the next batch of the same shape (its graphs are recorded once); a few shapes
        are kept, the oldest dropped."""
        key = (sentences, rows_per_sentence, time)
        with self._fixed_lock:
            known = self._fixed.get(key)
            if known is not None and (known.user is None or known.user() is None):
                self._fixed.move_to_end(key)
                known.user = weakref.ref(state)
                return known
        made = FixedDecoding(
            self.model,
            sentences,
            rows_per_sentence,
            time,
            FIRST_CAPACITY,
            COMPUTE_TYPES[self.compute_type],
            self.device,
            self._end_id,
        )
        made.user = weakref.ref(state)
        with self._fixed_lock:
            if key not in self._fixed:
                self._fixed[key] = made
                while len(self._fixed) > KEPT_SHAPES:
                    self._fixed.popitem(last=False)
        return made
