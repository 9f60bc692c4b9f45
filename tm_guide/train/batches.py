"""Token-based batching: sentences of similar length together, about N tokens per batch."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from tm_guide.train.vocab import EOS_ID


@dataclass(frozen=True)
class Example:
    source: list[int]  # ends with </s>
    target: list[int]  # ends with </s>


def encode_pairs(processor, pairs: list[tuple[str, str]], max_length: int) -> list[Example]:
    """SentencePiece ids with </s> appended, truncated to max_length."""
    sources = processor.encode([s for s, _ in pairs])
    targets = processor.encode([t for _, t in pairs])
    keep = max_length - 1
    return [
        Example(s[:keep] + [EOS_ID], t[:keep] + [EOS_ID])
        for s, t in zip(sources, targets, strict=True)
        if s and t
    ]


def make_batches(examples: list[Example], batch_tokens: int, seed: int) -> list[list[int]]:
    """Index batches of about batch_tokens (padded size), shuffled with the seed."""
    order = sorted(
        range(len(examples)), key=lambda i: (len(examples[i].target), len(examples[i].source))
    )
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        example = examples[index]
        size = max(len(example.source), len(example.target))
        if current and max(longest, size) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(index)
        longest = max(longest, size)
    if current:
        batches.append(current)
    random.Random(seed).shuffle(batches)
    return batches


def collate(examples: list[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Tensors for MarianMTModel: decoder input = pad (start) + target without its last token."""
    batch = len(examples)
    source_len = max(len(e.source) for e in examples)
    target_len = max(len(e.target) for e in examples)
    input_ids = torch.full((batch, source_len), pad_id, dtype=torch.long)
    decoder_input_ids = torch.full((batch, target_len), pad_id, dtype=torch.long)
    labels = torch.full((batch, target_len), -100, dtype=torch.long)
    for row, example in enumerate(examples):
        input_ids[row, : len(example.source)] = torch.tensor(example.source)
        decoder_input_ids[row, 1 : len(example.target)] = torch.tensor(example.target[:-1])
        labels[row, : len(example.target)] = torch.tensor(example.target)
    return {
        "input_ids": input_ids,
        "attention_mask": (input_ids != pad_id).long(),
        "decoder_input_ids": decoder_input_ids,
        "labels": labels,
    }


def iterate(
    examples: list[Example], batches: list[list[int]], start: int, pad_id: int
) -> Iterator[tuple[int, dict[str, torch.Tensor]]]:
    for position in range(start, len(batches)):
        yield position, collate([examples[i] for i in batches[position]], pad_id)
