"""Evaluation options: what the signature records, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.evaluation.options import EvalOptions
from tm_guide.pieces.repair import RepairOptions


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

    assert options().to_dict()["reward_repeats"] is None  # left to the model card
    once = options(reward_repeats=False)
    assert once.to_dict()["reward_repeats"] is False
    runner = Runner(once, translator=None, memory_id=1)
    assert runner.base.search.reward_repeats is False


def test_what_the_options_leave_open_comes_from_the_model_card() -> None:
    """What is served is what is measured: the card's lambda and piece rules."""
    from tm_guide.evaluation.runner import Runner
    from tm_guide.model.card import ModelCard

    card = ModelCard(
        name="m",
        source_lang="en",
        target_lang="de",
        guided_lambda=8.0,
        guided_reward_repeats=False,
        guided_clipped=True,
        guided_weighting="power:2",
        guided_repair="0.7:1:1",
    )
    served = options().for_model(card)
    assert (served.lambdas, served.reward_repeats, served.clipped, served.weighting) == (
        (8.0,),
        False,
        True,
        "power:2",
    )
    assert "clipped" in served.reward_rule() and "power:2" in served.reward_rule()
    assert "repaired from similarity 0.7" in served.reward_rule()
    assert served.reward_rule().startswith("pieces cut at whole words")
    runner = Runner(served, translator=None, memory_id=1)
    assert runner.base.pieces.clipped and runner.base.pieces.weighting.power == 2
    assert runner.base.pieces.repair == RepairOptions(0.7, 1, 1)
    assert options(repair="off").for_model(card).repair == "off"
    asked = options(lambdas=(1.0, 2.0), reward_repeats=True).for_model(card)
    assert asked.lambdas == (1.0, 2.0) and asked.reward_repeats is True
    assert "eq. 10" in asked.reward_rule()
    untuned = ModelCard(name="m", source_lang="en", target_lang="de")
    assert options().for_model(untuned).lambdas == (0.5, 1.0, 1.5, 2.0)


def test_a_bad_repair_is_refused() -> None:
    with pytest.raises(InvalidInput, match="repair '0.7:x' is not"):
        options(repair="0.7:x")


def test_a_bad_weighting_is_refused() -> None:
    with pytest.raises(InvalidInput, match="piece weighting 'cubic'"):
        options(weighting="cubic")
