"""Which candidate a sentence with a close TM match serves, chosen by the model's own scores.

A close match gives up to four candidates: its target as it is (`match`), its target repaired
under a template (`repaired`), the guided translation (`guided`) and the model's own translation
(`unguided`). Each is scored by the model: the log-probability of the candidate given the
source, divided by its length (the search's model score; the match's is forced decoding of its
target). The model alone prefers its own outputs, which a beam search maximises, so each kind
carries a bias tuned on dev sets: a TM candidate is served unless the model finds it worse than
the others by more than the bias. The rule is a small table, not a learnt model, so that the
answer can say why a candidate was served (the scores and the biases).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tm_guide.errors import InvalidInput

# the order of the kinds is the order of preference on equal biased scores
CANDIDATE_KINDS = ("match", "repaired", "guided", "unguided")


@dataclass(frozen=True)
class ChoiceOptions:
    """threshold: compare the candidates of a sentence whose best match reaches this eq. 9
    similarity (None: never; the search's output is served); match, repaired, guided: the bias
    added to each kind's score (the unguided translation's is 0)."""

    threshold: float | None = None
    match: float = 0.0
    repaired: float = 0.0
    guided: float = 0.0

    def __post_init__(self) -> None:
        if self.threshold is not None and not 0.0 < self.threshold <= 1.0:
            raise InvalidInput(
                f"the choice threshold must be in (0, 1], not {self.threshold}", field="choice"
            )
        for kind in CANDIDATE_KINDS[:3]:
            bias = getattr(self, kind)
            if bias != bias or abs(bias) == float("inf"):
                raise InvalidInput(f"the {kind} bias must be a finite number", field="choice")

    def applies(self, similarity: float | None) -> bool:
        if self.threshold is None or similarity is None:
            return False
        return similarity >= self.threshold

    def bias(self, kind: str) -> float:
        return 0.0 if kind == "unguided" else float(getattr(self, kind))

    @classmethod
    def parse(cls, spec: str) -> ChoiceOptions:
        """`off` or `T:MATCH:REPAIRED:GUIDED` (the form a model card, a request and the CLI
        use): the threshold and the three biases."""
        text = spec.strip()
        if text == "off":
            return cls()
        parts = text.split(":")
        if len(parts) == 4:
            try:
                return cls(float(parts[0]), *(float(p) for p in parts[1:]))
            except ValueError:
                pass
        raise InvalidInput(
            f"choice {spec!r} is not off or T:MATCH:REPAIRED:GUIDED (T a similarity in (0, 1],"
            " then three biases)",
            field="choice",
        )

    @property
    def spec(self) -> str:
        if self.threshold is None:
            return "off"
        return f"{self.threshold:g}:{self.match:g}:{self.repaired:g}:{self.guided:g}"


@dataclass(frozen=True)
class Candidate:
    """One candidate: its kind, its text and the model's length-normalised log-probability."""

    kind: str
    text: str
    score: float


@dataclass(frozen=True)
class Choice:
    """The served candidate among all that were scored, and the biases that chose it."""

    chosen: Candidate
    candidates: tuple[Candidate, ...]
    options: ChoiceOptions

    def to_dict(self) -> dict[str, object]:
        """What an answer says about it: the kind served, each candidate's score and bias."""
        return {
            "kind": self.chosen.kind,
            "scores": {c.kind: round(c.score, 4) for c in self.candidates},
            "biases": {c.kind: self.options.bias(c.kind) for c in self.candidates},
        }


def choose(candidates: Sequence[Candidate], options: ChoiceOptions) -> Choice:
    """The candidate with the best score plus its kind's bias; equal ones in the order of
    CANDIDATE_KINDS (a TM candidate before a translation)."""
    if not candidates:
        raise InvalidInput("there is no candidate to choose from", field="choice")
    best = max(
        candidates,
        key=lambda c: (c.score + options.bias(c.kind), -CANDIDATE_KINDS.index(c.kind)),
    )
    return Choice(best, tuple(candidates), options)
