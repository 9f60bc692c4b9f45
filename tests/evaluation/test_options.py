"""Evaluation options: what the signature records, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.evaluation.options import EvalOptions


def options(**changes: object) -> EvalOptions:
    base: dict[str, object] = {
        "test": Path("test.tsv"),
        "tm": "tm.tsv",
        "model": Path("model"),
        "output_dir": Path("out"),
    }
    return EvalOptions(**(base | changes))  # type: ignore[arg-type]


def test_engine_threads_default_to_one_and_are_recorded() -> None:
    assert options().to_dict()["threads"] == 1
    assert options(threads=0).to_dict()["threads"] == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("threads", -1), ("limit", 0), ("m", 0), ("lambdas", ())],
)
def test_bad_options_are_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as raised:
        options(**{field: value})
    assert field in raised.value.message or raised.value.field == field


def test_rewarding_pieces_once_reaches_the_decoder_and_the_signature() -> None:
    from tm_guide.evaluation.runner import Runner

    assert options().to_dict()["reward_repeats"] is True
    once = options(reward_repeats=False)
    assert once.to_dict()["reward_repeats"] is False
    runner = Runner(once, translator=None, memory_id=1)
    assert runner.base.search.reward_repeats is False
