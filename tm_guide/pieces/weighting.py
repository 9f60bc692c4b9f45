"""How much a piece is trusted, from the similarity of the TM match it came from.

Eq. 8 scores a piece by the best similarity s it came from, and eq. 10 multiplies that by one
lambda. A rule here maps s to the weight the search rewards instead: `linear` is the paper's
(weight = s); `power:p` (weight = s**p) keeps the reward of close matches and shrinks that of
loose ones, whose pieces break grammar at mid similarity; `step:t:h` multiplies the weight of
pieces from matches at or above similarity t by h. Every engine reads the weights alone, so a rule
changes no decoding code and lambda 0 stays native beam search.
"""

from __future__ import annotations

from dataclasses import dataclass

from tm_guide.errors import InvalidInput

RULES = ("linear", "power", "step")


@dataclass(frozen=True)
class PieceWeighting:
    rule: str = "linear"
    power: float = 1.0  # power: weight = s ** power
    threshold: float = 1.0  # step: pieces from matches at or above it ...
    gain: float = 1.0  # ... weigh `gain` times as much

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise InvalidInput(
                f"piece weighting must be one of {', '.join(RULES)}, not {self.rule!r}",
                field="weighting",
            )
        if self.power <= 0 or self.gain <= 0 or not 0.0 <= self.threshold <= 1.0:
            raise InvalidInput(
                "piece weighting needs power > 0, gain > 0 and 0 <= threshold <= 1",
                field="weighting",
            )

    @classmethod
    def parse(cls, spec: str) -> PieceWeighting:
        """`linear`, `power:P` or `step:T:H` (the form a model card and the CLI use)."""
        name, *values = spec.strip().split(":")
        try:
            numbers = [float(v) for v in values]
            if name == "linear" and not numbers:
                return cls()
            if name == "power" and len(numbers) == 1:
                return cls("power", power=numbers[0])
            if name == "step" and len(numbers) == 2:
                return cls("step", threshold=numbers[0], gain=numbers[1])
        except ValueError:
            pass
        raise InvalidInput(
            f"piece weighting {spec!r} is not linear, power:P or step:T:H", field="weighting"
        )

    def weight(self, similarity: float) -> float:
        if self.rule == "power":
            return float(similarity**self.power)
        if self.rule == "step" and similarity >= self.threshold:
            return similarity * self.gain
        return similarity
