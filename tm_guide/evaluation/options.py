"""Options of one evaluation run (the `tm-guide eval` command and the bench script share them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tm_guide.decoding.engines import AUTO
from tm_guide.errors import InvalidInput

if TYPE_CHECKING:
    from tm_guide.decoding.guidance import Guidance

PAPER_LAMBDAS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0)
PAPER_M_VALUES: tuple[int, ...] = (1, 5, 10, 20, 50, 100)


@dataclass(frozen=True)
class EvalOptions:
    """Everything that decides what an evaluation measures; all of it goes into the signature.

    test, dev   TSV files of `source<TAB>reference` (dev is where lambda is tuned; without it
                the first lambda is used and the report says so)
    tm          a memory name in the store at `db_url`, or a TSV file of TM pairs, imported and
                aligned into a throwaway SQLite store
    model       the model bundle directory
    lambdas     candidate piece weights, tuned on dev (paper: 0.5, 1, 1.5, 2); None: the model
                card's guided_lambda (what the server uses), else the paper's
    reward_repeats  True: eq. 10, a piece is rewarded every time it is produced; False: each piece
                at most its limit times per hypothesis (SearchOptions.reward_repeats)
    clipped     with repeats off, each piece limited to its count in its TM target
                (PieceOptions.clipped)
    weighting   how a piece's weight follows its match's similarity (a PieceWeighting spec)
    repair      from which similarity the best match's target is repaired (a RepairOptions spec)
    choice      how a close match's candidates are chosen from (a ChoiceOptions spec)
                reward_repeats, clipped, weighting, repair and choice: None takes the card's, as
                the server does (`for_model`)
    m           retrieval size of the main run (paper section 4.5: 10 is a good setting)
    m_values    retrieval sizes of the Figure 4-6 sweep
    engines     decoding engines to time for Table 8; the first one produces the quality numbers
    limit       evaluate a seeded random sample of this many sentences of each set (None: all)
    timing_limit  sentences per extra engine for Table 8 (the main engine is timed on the whole run)
    threads     intra-op threads of CTranslate2 and PyTorch alike, so that Table 8 compares
                unguided and guided decoding on the same compute (0: each library's default).
                1 by default: one beam search step is many small ops, and a second thread on a
                2-core machine mostly waits for its sibling
    """

    test: Path
    tm: str
    model: Path
    output_dir: Path
    dev: Path | None = None
    db_url: str | None = None
    lambdas: tuple[float, ...] | None = None
    reward_repeats: bool | None = None
    clipped: bool | None = None
    weighting: str | None = None
    repair: str | None = None
    choice: str | None = None
    m: int = 10
    m_values: tuple[int, ...] = PAPER_M_VALUES
    engines: tuple[str, ...] = (AUTO,)
    device: str = "cpu"
    beam_size: int = 5
    batch_size: int = 32
    # Output cap for guided and unguided alike (see TranslateOptions.max_length_ratio); 0 = none.
    max_length_ratio: float = 2.0
    limit: int | None = None
    timing_limit: int = 50
    threads: int = 1
    seed: int = 1
    bootstrap_samples: int = 1000
    progress: bool = True

    def __post_init__(self) -> None:
        if self.lambdas is not None and (not self.lambdas or any(lam < 0 for lam in self.lambdas)):
            raise InvalidInput(
                "lambdas must be a non-empty list of non-negative weights", field="lambdas"
            )
        if self.m < 1 or any(m < 1 for m in self.m_values):
            raise InvalidInput("retrieval sizes (M) must be >= 1", field="m")
        if not self.engines:
            raise InvalidInput("at least one engine is needed", field="engines")
        if self.limit is not None and self.limit < 1:
            raise InvalidInput(f"limit must be >= 1, not {self.limit}", field="limit")
        if self.beam_size < 1 or self.batch_size < 1 or self.timing_limit < 0:
            raise InvalidInput("beam_size and batch_size must be >= 1, timing_limit >= 0")
        if self.threads < 0:
            raise InvalidInput(f"threads must be >= 0, not {self.threads}", field="threads")
        if self.weighting is not None:
            from tm_guide.pieces.weighting import PieceWeighting

            PieceWeighting.parse(self.weighting)
        if self.repair is not None:
            from tm_guide.pieces.repair import RepairOptions

            RepairOptions.parse(self.repair)
        if self.choice is not None:
            from tm_guide.pieces.choice import ChoiceOptions

            ChoiceOptions.parse(self.choice)

    def for_model(self, card: Any) -> EvalOptions:
        """These options with what they leave open taken from the model card, as the server
        takes it (tm_guide.decoding.guidance): the tuned lambda and the rules it was tuned with."""
        lambdas = self.lambdas
        if lambdas is None:
            lambdas = (card.guided_lambda,) if card.guided_lambda is not None else PAPER_LAMBDAS
        from tm_guide.decoding.guidance import RULE_SETTINGS, Guidance

        resolved = Guidance.resolve(card, **self._rules())
        return replace(
            self, lambdas=lambdas, **{name: getattr(resolved, name) for name in RULE_SETTINGS}
        )

    def guidance(self, lam: float) -> Guidance:
        """The guidance these options decode with at `lam` (after for_model, nothing is left
        open)."""
        from tm_guide.decoding.guidance import Guidance

        return Guidance.resolve(None, lam=lam, m=self.m, **self._rules())

    def _rules(self) -> dict[str, Any]:
        """The guidance rules these options ask for (None: left open)."""
        from tm_guide.decoding.guidance import RULE_SETTINGS

        return {name: getattr(self, name) for name in RULE_SETTINGS}

    def reward_rule(self) -> str:
        """The reward rule in words, for reports."""
        return self.guidance(1.0).describe()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; paths as given, so a run with relative paths records no machine paths."""
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, Path):
                data[key] = display_path(value)
            elif isinstance(value, tuple):
                data[key] = list(value)
        data.pop("progress")
        return data


def display_path(path: Path) -> str:
    """A path as a report shows it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
