"""Token batching and the tensors the Marian model is trained on."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from tm_guide.train.batches import Example, collate, make_batches  # noqa: E402
from tm_guide.train.loop import learning_rate  # noqa: E402
from tm_guide.train.options import TrainOptions  # noqa: E402
from tm_guide.train.vocab import EOS_ID  # noqa: E402

PAD = 99


def examples(count: int) -> list[Example]:
    return [
        Example(source=[5] * (1 + i % 17) + [EOS_ID], target=[6] * (1 + i % 11) + [EOS_ID])
        for i in range(count)
    ]


def test_batches_cover_every_example_once_within_the_token_budget() -> None:
    data = examples(500)
    batches = make_batches(data, batch_tokens=200, seed=1)
    flat = sorted(i for batch in batches for i in batch)
    assert flat == list(range(500))
    for batch in batches:
        longest = max(max(len(data[i].source), len(data[i].target)) for i in batch)
        assert longest * len(batch) <= 200
    assert make_batches(data, 200, seed=1) == batches
    assert make_batches(data, 200, seed=2) != batches


def test_collate_shifts_the_target_behind_the_start_token() -> None:
    batch = collate(
        [Example([7, 8, EOS_ID], [3, 4, EOS_ID]), Example([9, EOS_ID], [5, EOS_ID])], PAD
    )
    assert batch["input_ids"].tolist() == [[7, 8, EOS_ID], [9, EOS_ID, PAD]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["decoder_input_ids"].tolist() == [[PAD, 3, 4], [PAD, 5, PAD]]
    assert batch["labels"].tolist() == [[3, 4, EOS_ID], [5, EOS_ID, -100]]


def test_learning_rate_warms_up_then_decays() -> None:
    from datetime import UTC, datetime
    from pathlib import Path

    options = TrainOptions(
        Path("t"), Path("d"), Path("x"), Path("r"), Path("b"), datetime.now(UTC),
        peak_lr=1e-3, warmup_steps=100,
    )  # fmt: skip
    assert learning_rate(options, 50) == pytest.approx(5e-4)
    assert learning_rate(options, 100) == pytest.approx(1e-3)
    assert learning_rate(options, 400) == pytest.approx(5e-4)
