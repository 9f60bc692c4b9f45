"""Fused CPU engine: the bundle's CTranslate2 Transformer and the guided beam search, compiled.

The torch engine's decoder step is ~100 small tensor ops, each an operator dispatch, and the
search around it runs in Python: on a small model both cost more than the arithmetic. This
engine runs the encoder, an int8 decoder step and search.py's beam search (rule for rule, the
piece reward inside) in one C++ call (tm_guide/decoding/csrc/fused.cpp) that holds no GIL.

It reads the very weights of the bundle's model.bin (one model format): CTranslate2's int8 rows
and scales as they are, float weights quantized per row. Activations are quantized per row as
CTranslate2 does, so a sentence's translation does not depend on its batchmates. The int8
products and float reductions run on the fastest kernel path the CPU has (AVX-512 VNNI, AVX2,
NEON, else portable loops), and every path gives the same bits.

The extension is built at install time when a C++ compiler is there (setup.py); without it,
``compiled.available()`` is False and the translator's "auto" engine falls back to torch or ct2.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tm_guide.decoding import transformer_spec as spec
from tm_guide.decoding.compiled import (
    MAX_PIECE_LENGTH,
    closed_hypotheses,
    require_extension,
    reward_tables,
    search_config,
    supports,
    template_objects,
)
from tm_guide.decoding.hypotheses import Closed
from tm_guide.decoding.model_file import CT2ModelFile, read_model_file
from tm_guide.decoding.search import SearchBatch, SearchOptions
from tm_guide.decoding.vocabulary import TargetVocabulary
from tm_guide.errors import ModelError


class FusedDecoder(TargetVocabulary):
    """The bundle's model in the compiled engine; `run_search` does the whole guided search."""

    def __init__(self, model_dir: Path | str, threads: int = 1) -> None:
        """`threads`: how many threads one batch is decoded on (its products and attention rows
        are shared out; the result does not depend on the count)."""
        fused = require_extension()
        if threads < 1:
            raise ModelError(f"the fused engine needs at least one thread, not {threads}")
        self.threads = threads
        model_file = read_model_file(Path(model_dir))
        spec.check_supported(model_file)
        self.sources = spec.SourceIds(model_file)
        super().__init__(
            model_file.target_vocabulary,
            model_file.config.get("eos_token", "</s>"),
            spec.start_token(model_file),
        )
        config, weights = model_arrays(model_file)
        self.max_source_positions = len(weights["encoder/positions"])
        self.max_target_positions = len(weights["decoder/positions"])
        self._model = fused.Model(config, weights)

    def run_search(self, batch: SearchBatch, options: SearchOptions) -> list[list[Closed]]:
        """search.beam_search's closed hypotheses per sentence (it validates and finalizes)."""
        ids = [self.sources.source_ids(tokens) for tokens in batch.sources]
        if not supports(batch.rewards):
            raise ModelError(f"the fused engine takes pieces of at most {MAX_PIECE_LENGTH} tokens")
        try:
            closed = self._model.search(
                ids,
                [int(c) for c in batch.caps],
                search_config(self, options),
                reward_tables(batch.rewards, self.vocab_size),
                [list(prefix) for prefix in batch.prefixes],
                template_objects(batch.templates, self.vocab_size, self.end_id),
            )
        except ValueError as exc:  # the C++ checks of source and output length
            raise ModelError(str(exc)) from exc
        return closed_hypotheses(closed)

    def score(self, source: Sequence[str], target_ids: Sequence[int]) -> np.ndarray:
        """Log-probabilities of `target_ids` then </s>, teacher-forced (CTranslate2's
        score_batch computes the same)."""
        return np.asarray(
            self._model.score(
                self.sources.source_ids(source), list(target_ids), self.start_id, self.end_id
            ),
            dtype=np.float32,
        )


def model_arrays(model: CT2ModelFile) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The config and weights the compiled Model takes (see fused.cpp's Model): what the fused
    engine reads of a model, for anything that must compute what it computes."""
    for key in ("pre_norm", "activation", "num_heads"):
        enc, dec = f"encoder/{key}", f"decoder/{key}"
        if model.has(enc) and model.has(dec) and model.scalar(enc) != model.scalar(dec):
            raise ModelError(f"the fused engine needs the same {key} in encoder and decoder")
    weights: dict[str, np.ndarray] = {}
    config: dict[str, Any] = {
        "heads": int(model.scalar("decoder/num_heads")),
        "activation": int(model.scalar("decoder/activation", 0)),
        "pre_norm": bool(model.scalar("decoder/pre_norm", 1)),
        "start_from_zero": bool(
            model.has("decoder/start_from_zero_embedding")
            and model.scalar("decoder/start_from_zero_embedding")
        ),
        "eps": spec.layer_norm_epsilon(model),
        "encoder_layers": spec.count_layers(model, "encoder"),
        "decoder_layers": spec.count_layers(model, "decoder"),
    }
    if not config["encoder_layers"] or not config["decoder_layers"]:
        raise ModelError("model.bin has no encoder or decoder layers")
    if config["activation"] not in range(7):
        raise ModelError(f"activation code {config['activation']} is not supported")
    for scope in ("encoder", "decoder"):
        table = np.ascontiguousarray(
            model.dequantized(f"{spec.embeddings_key(model, scope)}/weight")
        )
        depth = table.shape[1]
        weights[f"{scope}/embeddings"] = table
        weights[f"{scope}/positions"] = spec.position_encodings(model, scope, depth)
        config[f"{scope}_embedding_scale"] = spec.embedding_scale(model, scope, depth)
        config["depth"] = depth
    for name in model.variables:
        if name.endswith(("/gamma", "/beta")):
            weights[name] = np.ascontiguousarray(model.dequantized(name))
        elif name.endswith("/weight") and "embeddings" not in name.rsplit("/", 2)[-2]:
            weights[name], weights[f"{name}_scale"] = _int8_rows(model, name)
            bias = name[: -len("weight")] + "bias"
            if model.has(bias):
                weights[bias] = np.ascontiguousarray(model.dequantized(bias))
    if config["depth"] % config["heads"]:
        raise ModelError("the model's depth is not a multiple of its heads")
    return config, weights


def _int8_rows(model: CT2ModelFile, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A linear's int8 rows and CTranslate2-style scales (float = int8 / scale): the stored
    ones, or float weights quantized per row."""
    raw = model.get(name)
    if raw.dtype == np.int8:
        scale = model.get(model.aliases.get(name, name) + "_scale").astype(np.float32)
        return np.ascontiguousarray(raw), np.ascontiguousarray(scale.reshape(-1))
    weight = model.dequantized(name).astype(np.float64)
    amax = np.abs(weight).max(axis=1)
    scale = np.where(amax > 0, 127.0 / np.maximum(amax, 1e-30), 1.0)
    values = np.clip(np.rint(weight * scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(values), scale.astype(np.float32)
