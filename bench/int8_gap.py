"""Where the fused engine's int8 log-probs differ from CTranslate2's int8, and why.

    python bench/int8_gap.py [--bundle DIR] [--sentences N]

Scores native CTranslate2's beam-5 outputs of the bench sentences, teacher-forced, four ways:
CTranslate2 int8 and float32 (`score_batch`), the fused engine (`score`), and a float64 numpy
reference of the same int8 scheme (every linear's input quantized per row to [-127, 127], ties to
even, exact integer products; everything else in float64). The reference is then run again with
one linear kind at a time left in float, and with ties rounded away from zero. It prints the
per-token gaps (mean, 99th percentile, max) between them: if the reference with every linear
quantized is closest to CTranslate2's int8, CTranslate2 quantizes the same linears the same way,
and what is left between two implementations of one int8 scheme is rounding: a float difference
of an ulp moves an activation across a rounding boundary, which moves the output by a
quantization step.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tm_guide.decoding.fused_engine import FusedDecoder, model_arrays  # noqa: E402
from tm_guide.decoding.model_file import CT2ModelFile, read_model_file  # noqa: E402
from tm_guide.decoding.torch_step import activate  # noqa: E402

DEFAULT_BUNDLE = ROOT / "tm_guide" / "models" / "demo-en-de"

# the linears of each layer, by kind: (stack, path under the layer)
KINDS = {
    "encoder self-attention qkv": ("encoder", "self_attention/linear_0"),
    "encoder self-attention out": ("encoder", "self_attention/linear_1"),
    "encoder ffn inner": ("encoder", "ffn/linear_0"),
    "encoder ffn outer": ("encoder", "ffn/linear_1"),
    "decoder self-attention qkv": ("decoder", "self_attention/linear_0"),
    "decoder self-attention out": ("decoder", "self_attention/linear_1"),
    "cross-attention query": ("decoder", "attention/linear_0"),
    "cross-attention keys/values": ("decoder", "attention/linear_1"),
    "cross-attention out": ("decoder", "attention/linear_2"),
    "decoder ffn inner": ("decoder", "ffn/linear_0"),
    "decoder ffn outer": ("decoder", "ffn/linear_1"),
    "output projection": ("decoder", "projection"),
}

# the kind of each (stack, path) a linear is read from
KIND_OF = {place: kind for kind, place in KINDS.items()}


class Reference:
    """Teacher-forced log-probs of a CTranslate2 Transformer bundle in float64, with the int8
    scheme applied to the linears of the kinds in `quantized`. It reads the model as the fused
    engine does (`model_arrays`: the same int8 rows and scales, embeddings, positions, config)."""

    def __init__(self, model: CT2ModelFile) -> None:
        self.config, weights = model_arrays(model)
        self.arrays = {name: np.asarray(a, dtype=np.float64) for name, a in weights.items()}
        self.heads = int(self.config["heads"])
        self.quantized: set[str] = set(KINDS)
        self.ties_away = False

    def linear(self, x: np.ndarray, stack: str, layer: int | None, path: str) -> np.ndarray:
        name = f"{stack}/{path}" if layer is None else f"{stack}/layer_{layer}/{path}"
        w, w_scale = self.arrays[f"{name}/weight"], self.arrays[f"{name}/weight_scale"]
        if KIND_OF[stack, path] in self.quantized:
            amax = np.abs(x).max(axis=1).astype(np.float32)
            scale = np.where(amax > 0, np.float32(127.0) / np.maximum(amax, 1e-30), 1.0)
            v = (x.astype(np.float32) * scale.astype(np.float32)[:, None]).astype(np.float64)
            q = np.sign(v) * np.floor(np.abs(v) + 0.5) if self.ties_away else np.rint(v)
            y = (np.clip(q, -127, 127) @ w.T) / scale.astype(np.float64)[:, None] / w_scale
        else:
            y = x @ (w / w_scale[:, None]).T
        bias = self.arrays.get(f"{name}/bias")
        return y if bias is None else y + bias

    def norm(self, x: np.ndarray, name: str) -> np.ndarray:
        gamma = self.arrays.get(f"{name}/gamma")
        if gamma is None:
            return x
        mu = x.mean(axis=1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.config["eps"]) * gamma + self.arrays[f"{name}/beta"]

    def activate(self, x: np.ndarray) -> np.ndarray:
        """CTranslate2's activation code of the model, as the torch engine computes it."""
        return activate(torch.from_numpy(x), self.config["activation"]).numpy()

    def attend(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
        rows, depth = q.shape
        head_dim = depth // self.heads
        out = np.zeros_like(q)
        for h in range(self.heads):
            cols = slice(h * head_dim, (h + 1) * head_dim)
            a = (q[:, cols] / math.sqrt(head_dim)) @ k[:, cols].T
            if causal:
                a = a + np.triu(np.full(a.shape, -np.inf), 1)
            a = np.exp(a - a.max(axis=1, keepdims=True))
            out[:, cols] = (a / a.sum(axis=1, keepdims=True)) @ v[:, cols]
        return out

    def sublayer(
        self, x: np.ndarray, norm: str, compute: Callable[[np.ndarray], np.ndarray]
    ) -> np.ndarray:
        if self.config["pre_norm"]:
            return x + compute(self.norm(x, norm))
        return self.norm(x + compute(x), norm)

    def embed(self, stack: str, ids: Sequence[int]) -> np.ndarray:
        x = self.arrays[f"{stack}/embeddings"][list(ids)] * self.config[f"{stack}_embedding_scale"]
        if stack == "decoder" and self.config["start_from_zero"]:
            x[0] = 0.0
        x = x + self.arrays[f"{stack}/positions"][: len(ids)]
        return self.norm(x, f"{stack}/layernorm_embedding")

    def encode(self, ids: Sequence[int]) -> np.ndarray:
        x = self.embed("encoder", ids)
        depth = x.shape[1]
        for i in range(self.config["encoder_layers"]):
            attention = self.self_attention("encoder", i, depth, causal=False)
            x = self.sublayer(x, f"encoder/layer_{i}/self_attention/layer_norm", attention)
            x = self.sublayer(x, f"encoder/layer_{i}/ffn/layer_norm", self.ffn("encoder", i))
        return self.norm(x, "encoder/layer_norm")

    def self_attention(
        self, stack: str, i: int, depth: int, causal: bool
    ) -> Callable[[np.ndarray], np.ndarray]:
        def run(h: np.ndarray) -> np.ndarray:
            qkv = self.linear(h, stack, i, "self_attention/linear_0")
            a = self.attend(qkv[:, :depth], qkv[:, depth : 2 * depth], qkv[:, 2 * depth :], causal)
            return self.linear(a, stack, i, "self_attention/linear_1")

        return run

    def ffn(self, stack: str, i: int) -> Callable[[np.ndarray], np.ndarray]:
        def run(h: np.ndarray) -> np.ndarray:
            inner = self.activate(self.linear(h, stack, i, "ffn/linear_0"))
            return self.linear(inner, stack, i, "ffn/linear_1")

        return run

    def score(
        self, source: Sequence[int], target: Sequence[int], start: int, end: int
    ) -> np.ndarray:
        """The log-probs of `target` then `end`, teacher-forced from `start`."""
        memory = self.encode(source)
        y = self.embed("decoder", [start, *target])
        depth = y.shape[1]
        for i in range(self.config["decoder_layers"]):
            self_attention = self.self_attention("decoder", i, depth, causal=True)

            def cross_attention(h: np.ndarray, i: int = i) -> np.ndarray:
                q = self.linear(h, "decoder", i, "attention/linear_0")
                kv = self.linear(memory, "decoder", i, "attention/linear_1")
                a = self.attend(q, kv[:, :depth], kv[:, depth:], False)
                return self.linear(a, "decoder", i, "attention/linear_2")

            prefix = f"decoder/layer_{i}"
            y = self.sublayer(y, f"{prefix}/self_attention/layer_norm", self_attention)
            y = self.sublayer(y, f"{prefix}/attention/layer_norm", cross_attention)
            y = self.sublayer(y, f"{prefix}/ffn/layer_norm", self.ffn("decoder", i))
        logits = self.linear(self.norm(y, "decoder/layer_norm"), "decoder", None, "projection")
        logits = logits - logits.max(axis=1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        return log_probs[np.arange(len(target) + 1), [*target, end]]


def gaps(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> str:
    d = np.concatenate([np.abs(np.asarray(x) - np.asarray(y)) for x, y in zip(a, b, strict=True)])
    return f"{d.mean():>8.4f}{np.percentile(d, 99):>8.4f}{d.max():>8.4f}"


def main(argv: Sequence[str] | None = None) -> int:
    import ctranslate2

    sys.path.insert(0, str(ROOT / "bench"))
    from decoding_bench import SAMPLE

    from tm_guide.model import Bundle

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE)
    parser.add_argument("--sentences", type=int, default=32)
    args = parser.parse_args(argv)

    bundle = Bundle.load(args.bundle, device="cpu", intra_threads=1)
    if bundle.card.quantization != "int8":
        print(f"{args.bundle} is {bundle.card.quantization}: this reference is for int8 bundles")
        return 2
    inputs = [bundle.source_input(bundle.encode_source(s)) for s in SAMPLE[: args.sentences]]
    outputs = [o.hypotheses[0] for o in bundle.translator.translate_batch(inputs, beam_size=5)]
    int8 = [np.array(r.log_probs) for r in bundle.translator.score_batch(inputs, outputs)]
    as_float = ctranslate2.Translator(str(args.bundle), compute_type="float32", intra_threads=1)
    float32 = [np.array(r.log_probs) for r in as_float.score_batch(inputs, outputs)]
    fused = FusedDecoder(args.bundle)
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    targets = [[index[t] for t in o] for o in outputs]
    sources = [fused.sources.source_ids(s) for s in inputs]
    fused_scores = [fused.score(s, t) for s, t in zip(inputs, targets, strict=True)]
    reference = Reference(read_model_file(args.bundle))

    def referenced() -> list[np.ndarray]:
        return [
            reference.score(s, t, fused.start_id, fused.end_id)
            for s, t in zip(sources, targets, strict=True)
        ]

    every = referenced()
    reference.quantized = set()
    as_floats = referenced()
    tokens = sum(len(t) + 1 for t in targets)
    print(f"bundle {args.bundle.name}, {len(inputs)} sentences, {tokens} tokens (native outputs)")
    print(f"{'per-token |log-prob gap|':<68}{'mean':>8}{'p99':>8}{'max':>8}")
    rows = [
        ("CTranslate2 int8 - CTranslate2 float32", int8, float32),
        ("reference, nothing quantized - CTranslate2 float32", as_floats, float32),
        ("fused - CTranslate2 int8", fused_scores, int8),
        ("reference, every linear quantized - fused", every, fused_scores),
        ("reference, every linear quantized - CTranslate2 int8", every, int8),
    ]
    for label, a, b in rows:
        print(f"{label:<68}{gaps(a, b)}")
    for kind in KINDS:
        reference.quantized = set(KINDS) - {kind}
        label = f"reference, {kind} in float - CTranslate2 int8"
        print(f"{label:<68}{gaps(referenced(), int8)}")
    reference.quantized = set(KINDS)
    reference.ties_away = True
    label = "reference, ties away from zero - CTranslate2 int8"
    print(f"{label:<68}{gaps(referenced(), int8)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
