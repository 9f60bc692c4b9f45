"""What a beam search takes: its options, and the step decoder it drives.

The Python search (search.py), the compiled one (compiled.py) and every engine share these, so
they live apart from both searches and import nothing of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from tm_guide.errors import InvalidInput

if TYPE_CHECKING:
    from tm_guide.decoding.rewards import PieceReward
    from tm_guide.decoding.template import TargetTemplate


class SearchVocabulary(Protocol):
    """The ids every search needs of a model besides its scores (a StepDecoder is one)."""

    @property
    def vocab_size(self) -> int: ...
    @property
    def start_id(self) -> int: ...
    @property
    def end_id(self) -> int: ...


class StepDecoder(SearchVocabulary, Protocol):
    """An incremental decoder: encode once, then one call per step for all live hypotheses."""

    def start(self, sources: Sequence[Sequence[str]]) -> object:
        """Encode the source token lists (exactly as the model gets them) and return a state."""
        ...

    def step(self, state: object, rows: StepRows) -> np.ndarray:
        """Log-probabilities [rows, vocab] (float32) of the next token for each row.

        Rows of a sentence that does not appear in `rows` any more can be dropped from the
        state.
        """
        ...


@dataclass(frozen=True)
class StepRows:
    """The rows one decoder step extends.

    Row i extends the previous step's row `parents[i]` (None on the first step, where row i is
    the start of sentence i) by the token `last_ids[i]` (the start token on the first step).
    `sentences[i]` is the index, in the batch given to start(), of the sentence of row i; rows
    of one sentence are contiguous and every live sentence has as many rows. With `mask_end`,
    </s> is masked before the softmax (the engine's minimum length rule).
    """

    parents: np.ndarray | None
    sentences: np.ndarray
    last_ids: np.ndarray
    mask_end: bool


@dataclass(frozen=True)
class SearchBatch:
    """One checked batch for a search, a value per sentence in each field: its source tokens
    (as the model gets them), reward table (None: unguided), output cap, forced target prefix
    and repair template (None: free). Every search and every engine that runs a whole search
    takes it, so that the per-sentence inputs travel together and are checked once."""

    sources: Sequence[Sequence[str]]
    rewards: Sequence[PieceReward | None]
    caps: np.ndarray
    prefixes: Sequence[Sequence[int]]
    templates: Sequence[TargetTemplate | None]

    def __len__(self) -> int:
        return len(self.sources)


@dataclass(frozen=True)
class SearchOptions:
    """What the search does; the defaults are CTranslate2's translate_batch defaults."""

    beam_size: int = 5
    patience: float = 1.0
    length_penalty: float = 1.0
    min_length: int = 1
    max_length: int = 256
    num_hypotheses: int = 1
    lam: float = 1.0
    # eq. 10 rewards a piece each time it is produced; False: each piece at most its limit times
    # per hypothesis (pieces of 2+ tokens once, or as the pieces clip them: see
    # tm_guide.decoding.rewards)
    reward_repeats: bool = True

    def validate(self, vocab_size: int) -> None:
        if self.beam_size < 1:
            raise InvalidInput("beam_size must be >= 1", field="beam_size")
        if self.patience <= 0:
            raise InvalidInput("patience must be > 0", field="patience")
        if self.max_length < 1:
            raise InvalidInput("max_length must be >= 1", field="max_length")
        if self.min_length < 0 or self.min_length > self.max_length:
            raise InvalidInput("min_length must be between 0 and max_length", field="min_length")
        if not 1 <= self.num_hypotheses <= round(self.beam_size * self.patience):
            raise InvalidInput(
                "num_hypotheses must be between 1 and beam_size * patience", field="num_hypotheses"
            )
        if 2 * self.beam_size > vocab_size:
            raise InvalidInput(
                f"beam_size {self.beam_size} is too large for a vocabulary of {vocab_size}",
                field="beam_size",
            )
        if not math.isfinite(self.lam):
            raise InvalidInput("lambda must be a finite number", field="lam")
