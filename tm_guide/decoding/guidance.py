"""Guidance: every setting of TM-guided decoding, resolved once.

What a model card records with its tuned lambda (`guided_*`), and what a request, the server's
settings or an evaluation may choose instead, is one value with one name per setting:

    lam             eq. 10's lambda, the weight of the piece reward (HTTP and the CLI spell it
                    "lambda", a Python keyword)
    reward_repeats  every occurrence of a piece rewarded (eq. 10), or each at most its limit
    clipped         with repeats off, each piece limited to its count in its TM target
    weighting       how a piece's weight follows its match's similarity (a PieceWeighting spec)
    repair          from which similarity the best match is repaired (a RepairOptions spec)
    choice          how a close match's candidates are chosen from (a ChoiceOptions spec)
    m               TM pairs retrieved per sentence (the paper's M)

`Guidance.resolve` takes each setting as asked, else as the card records it, else eq. 10's
default, and `apply` writes them into the options each stage reads (SearchOptions,
PieceOptions, ChoiceOptions), so that the server, every protocol, `tm-guide eval` and
`tm-guide translate --memory` decode with the same settings from the same card.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from tm_guide.pieces import PieceOptions
from tm_guide.pieces.choice import ChoiceOptions
from tm_guide.pieces.repair import RepairOptions
from tm_guide.pieces.weighting import PieceWeighting

if TYPE_CHECKING:
    from tm_guide.decoding.guided import TranslateOptions

# the card field each setting is recorded in
CARD_FIELDS = {
    "lam": "guided_lambda",
    "reward_repeats": "guided_reward_repeats",
    "clipped": "guided_clipped",
    "weighting": "guided_weighting",
    "repair": "guided_repair",
    "choice": "guided_choice",
}
# the settings a card records beside its lambda: the rules lambda was tuned with, which an
# evaluation keeps among its options
RULE_SETTINGS = ("reward_repeats", "clipped", "weighting", "repair", "choice")


@dataclass(frozen=True)
class Guidance:
    """Every setting of guided decoding (the module says what each one is)."""

    lam: float = 1.0
    reward_repeats: bool = True
    clipped: bool = False
    weighting: str = "linear"
    repair: str = "off"
    choice: str = "off"
    m: int = PieceOptions.m

    def __post_init__(self) -> None:
        # each spec is checked here, so that a bad one fails where it is resolved
        PieceWeighting.parse(self.weighting)
        RepairOptions.parse(self.repair)
        ChoiceOptions.parse(self.choice)
        PieceOptions(m=self.m)

    @classmethod
    def resolve(cls, card: Any = None, **asked: Any) -> Guidance:
        """Each setting as asked (a None is not asking), else as `card` records it, else the
        default."""
        unknown = set(asked) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"not a guidance setting: {', '.join(sorted(unknown))}")
        chosen = {}
        for f in fields(cls):
            value = asked.get(f.name)
            if value is None and f.name in CARD_FIELDS:
                value = getattr(card, CARD_FIELDS[f.name], None)
            if value is not None:
                chosen[f.name] = value
        return cls(**chosen)

    def apply(self, options: TranslateOptions) -> TranslateOptions:
        """`options` with every guidance setting written where its stage reads it."""
        return replace(
            options,
            search=replace(options.search, lam=self.lam, reward_repeats=self.reward_repeats),
            pieces=replace(
                options.pieces,
                m=self.m,
                clipped=self.clipped,
                weighting=PieceWeighting.parse(self.weighting),
                repair=RepairOptions.parse(self.repair),
            ),
            choice=ChoiceOptions.parse(self.choice),
        )

    def describe(self) -> str:
        """The reward rule in words, for reports and `tm-guide model info` (lambda apart)."""
        if self.reward_repeats:
            rule = "every occurrence of a piece rewarded (eq. 10)"
        elif self.clipped:
            rule = "each piece rewarded at most as often as its TM target holds it (clipped)"
        else:
            rule = "pieces of two or more tokens rewarded once per hypothesis"
        if PieceOptions.whole_words:
            rule = "pieces cut at whole words (Algorithm 1), " + rule
        if self.weighting != "linear":
            rule += f", piece weights {self.weighting} of the match similarity"
        if self.repair != "off":
            repair = RepairOptions.parse(self.repair)
            rule += (
                f"; the best match repaired from similarity {repair.threshold:g} and "
                f"{repair.words:g} over its words (gaps {repair.gap_scale} per token + "
                f"{repair.gap_margin})"
            )
        if self.choice != "off":
            choice = ChoiceOptions.parse(self.choice)
            rule += (
                f"; from similarity {choice.threshold:g} the served candidate chosen by the"
                f" model's score (biases: match {choice.match:g}, repaired {choice.repaired:g},"
                f" guided {choice.guided:g})"
            )
        return rule
