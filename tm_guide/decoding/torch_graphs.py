"""The torch engine's decoder step with every shape fixed, replayed as a CUDA graph.

A step of a 6-layer decoder is ~150 small kernels. Launched one by one from Python (or
TorchScript) each costs more on the host than on the GPU, so a batch of one sentence runs at
the speed of the launches. Recorded once as a CUDA graph, the whole step is one launch. A graph
replays fixed shapes and fixed memory, so here:

- the rows are fixed: every sentence of the batch keeps `beam` rows, finished or not (the rows
  of a finished sentence are computed and not read), and each live row of the search has its
  physical row (slot of its sentence x beam + its place);
- the key/value cache has a fixed capacity (doubled, and the graphs recorded again, when a
  search runs past it), row-major, and the attention runs over all of it with the later steps
  masked;
- the rows are reordered inside the step, from one buffer set into the other (two graphs, one
  per direction, replayed in turn);
- the step number and the </s> mask are tensors written before each replay.

The same fixed step runs without a graph on the CPU, which is how the tests hold it to the
dynamic step (torch_step.decoder_step_fixed against decoder_step).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tm_guide.decoding.torch_step import decoder_step_fixed, scripted_fixed_step

log = logging.getLogger(__name__)

FIRST_CAPACITY = 64  # decoding steps the cache holds before it doubles
TIME_BUCKET = 8  # source lengths are padded to a multiple of this, so graphs are reused


def padded_time(length: int) -> int:
    return -(-length // TIME_BUCKET) * TIME_BUCKET


class FixedDecoding:
    """Static buffers (and, on CUDA, the two recorded graphs) for one batch shape: sentences,
    rows per sentence, padded source length, capacity, dtype."""

    def __init__(
        self,
        model: Any,
        sentences: int,
        rows_per_sentence: int,
        time: int,
        capacity: int,
        dtype: torch.dtype,
        device: torch.device,
        end_id: int,
    ) -> None:
        self.model, self.end_id = model, end_id
        self.sentences, self.rows_per_sentence = sentences, rows_per_sentence
        self.time, self.capacity, self.dtype, self.device = time, capacity, dtype, device
        rows = sentences * rows_per_sentence
        layers, heads, head_dim = len(model.decoder_layers), model.heads, model.head_dim
        self.rows = rows
        self.ids = torch.zeros(rows, dtype=torch.long, device=device)
        self.parents = torch.arange(rows, dtype=torch.long, device=device)
        self.step = torch.zeros(1, dtype=torch.long, device=device)
        self.first = torch.zeros(1, dtype=torch.bool, device=device)
        self.mask_end = torch.zeros(1, dtype=torch.bool, device=device)
        shape = (rows, heads, capacity, head_dim)  # row-major (torch_step.decoder_step_fixed)
        # two buffer sets, keys then values per layer: a step reads one and writes the other
        self.sets = [
            [torch.zeros(shape, dtype=dtype, device=device) for _ in range(2 * layers)]
            for _ in range(2)
        ]
        cross = (sentences, heads, time, head_dim)
        self.cross_keys = [torch.zeros(cross, dtype=dtype, device=device) for _ in range(layers)]
        self.cross_values = [torch.zeros(cross, dtype=dtype, device=device) for _ in range(layers)]
        self.cross_keep = torch.zeros((sentences, 1, 1, time), dtype=torch.bool, device=device)
        # per buffer set read: the step's log-probabilities (a graph's output stays where it
        # was recorded, and each replay writes it again)
        self.outs: list[torch.Tensor | None] = [None, None]
        self.current = 0  # the set holding the cache so far
        self.graphs: list[Any] = [None, None]
        self.capture = device.type == "cuda"
        self.user: Any = None  # a weak reference to the search state using it
        self._fn: Callable[..., torch.Tensor] = (
            decoder_step_fixed if self.capture else scripted_fixed_step()
        )

    def load_cross(
        self, keys: list[torch.Tensor], values: list[torch.Tensor], keep: torch.Tensor
    ) -> None:
        """This batch's encoder keys/values [sentences, heads, time, head_dim] and key mask,
        padded to the fixed source length."""
        time = keys[0].shape[2]
        for static, new in zip(self.cross_keys, keys, strict=True):
            static.zero_()
            static[:, :, :time].copy_(new)
        for static, new in zip(self.cross_values, values, strict=True):
            static.zero_()
            static[:, :, :time].copy_(new)
        self.cross_keep.zero_()
        self.cross_keep[..., :time].copy_(keep)

    def start(self, keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
        """The cache after the first step: its one row per sentence (time 0 of `keys` and
        `values`, [capacity, sentences, heads, head_dim]) in each sentence's first row."""
        first_rows = torch.arange(self.sentences, device=self.device) * self.rows_per_sentence
        for buffer, source in zip(self.sets[self.current], keys + values, strict=True):
            buffer.zero_()
            buffer[:, :, 0].index_copy_(0, first_rows, source[0])

    def grow(self) -> None:
        """Double the capacity: the cache so far moves, the graphs are recorded again."""
        old = self.sets[self.current]
        self.capacity *= 2
        shape = (self.rows, self.model.heads, self.capacity, self.model.head_dim)
        self.sets = [
            [torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in old]
            for _ in range(2)
        ]
        for new, buffer in zip(self.sets[self.current], old, strict=True):
            new[:, :, : buffer.shape[2]].copy_(buffer)
        self.graphs = [None, None]
        self.outs = [None, None]

    def run(
        self, ids: torch.Tensor, parents: torch.Tensor, step: int, mask_end: bool
    ) -> torch.Tensor:
        """One step for every physical row: row r continues row parents[r] with ids[r];
        returns the log-probabilities [rows, vocab] (a static buffer: read before the next
        step)."""
        if step >= self.capacity:
            self.grow()
        self.ids.copy_(ids)
        self.parents.copy_(parents)
        self.step.fill_(step)
        self.mask_end.fill_(mask_end)
        source = self.current
        if self.capture and self.graphs[source] is None:
            try:
                self.graphs[source] = self._record(source)
            except RuntimeError as exc:  # a driver or build that cannot record this step
                log.warning("CUDA graph not recorded (%s); running the steps one by one", exc)
                self.capture = False
        if self.capture:
            self.graphs[source].replay()
        else:
            self.outs[source] = self._call(source)
        self.current = 1 - source
        out = self.outs[source]
        assert out is not None
        return out

    def _call(self, source: int) -> torch.Tensor:
        layers = len(self.model.decoder_layers)
        read, write = self.sets[source], self.sets[1 - source]
        out: torch.Tensor = self._fn(
            self.ids,
            self.step,
            self.first,
            self.mask_end,
            self.parents,
            self.model.decoder_weights,
            read[:layers],
            read[layers:],
            write[:layers],
            write[layers:],
            self.cross_keys,
            self.cross_values,
            self.cross_keep,
            self.rows_per_sentence,
            self.end_id,
        )
        return out

    def _record(self, source: int) -> Any:
        """The step from buffer set `source` recorded as a CUDA graph. The warm-up run before
        it computes this very step (the step rewrites everything it writes), so the state is
        as if the step ran once."""
        stream = torch.cuda.Stream(self.device)  # type: ignore[no-untyped-call]
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            self._call(source)
        torch.cuda.current_stream(self.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        # thread-local: another decoding thread's work on the GPU does not spoil the recording
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            self.outs[source] = self._call(source)
        return graph


def physical_rows(sentences: np.ndarray, slot_of: np.ndarray, rows_per_sentence: int) -> np.ndarray:
    """The physical row of each live row: its sentence's slot x rows per sentence + its place
    among its sentence's rows (rows of a sentence are contiguous)."""
    place = np.arange(len(sentences)) % rows_per_sentence
    rows: np.ndarray = slot_of[sentences] * rows_per_sentence + place
    return rows
