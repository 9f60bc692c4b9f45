"""A step that ranks on the engine's device: what the search sends, and the candidates it gets.

A step over a GPU makes scores for every (row, token): 640 rows x 58k tokens is 148 MB, and
copying that to the host at every step costs more than the step itself. The search needs far
less: the 2K best candidates of each sentence, and the model's log-probability of each. So the
search states its per-step rules as a few small arrays (the masks of the template and UTF-8
rules, the piece rewards as sparse (row, token, bonus) triples, the hypotheses' scores), the
engine applies them on its device and sends back k candidates per sentence: a few KB.

The rules are those of search.py, stated once (TargetTemplate.row_mask, Utf8Rule.row_rule);
the candidates are the same, in the same order (best first, the lower index first on ties), as
search.top_candidates finds on the host, which the tests hold on CPU torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from tm_guide.decoding.step import StepDecoder, StepRows
from tm_guide.decoding.template import ALL_CLASSES, RowMask
from tm_guide.decoding.utf8 import Utf8Rule

PAD = -1  # fills the rows of `deny` and `allow` past their own ids


@dataclass(frozen=True)
class StepMasks:
    """Per row, the template rule (RowMask: allowed word-mark classes, denied and allowed ids,
    over the word marks of table `marks_of_row[row]` of `marks`) and the UTF-8 rule (mode,
    lowest and highest byte: Utf8Rule.row_rule, mode 0 where it does not apply)."""

    classes: np.ndarray  # int64 [rows]
    deny: np.ndarray  # int64 [rows, D], PAD-filled
    allow: np.ndarray  # int64 [rows, A], PAD-filled
    marks: tuple[np.ndarray, ...]  # distinct word-mark tables ([vocab] codes), maybe none
    marks_of_row: np.ndarray  # int64 [rows], an index into `marks` (0 where none)
    utf8: Utf8Rule | None
    utf8_mode: np.ndarray  # int64 [rows]
    utf8_low: np.ndarray  # int64 [rows]
    utf8_high: np.ndarray  # int64 [rows]
    end: int = -1  # </s>, which the rows that hold a word open leave out (template.word_open)

    @property
    def uses_templates(self) -> bool:
        return bool((self.classes != ALL_CLASSES).any() or self.deny.size or self.allow.size)

    @classmethod
    def build(
        cls,
        template_masks: Sequence[tuple[RowMask, np.ndarray | None] | None],
        utf8: Utf8Rule | None,
        utf8_rules: Sequence[tuple[int, int, int] | None],
    ) -> StepMasks:
        """From each row's template mask with its word marks (None: no template rule) and
        UTF-8 rule (None: not applied)."""
        rows = len(template_masks)
        classes = np.full(rows, ALL_CLASSES, dtype=np.int64)
        marks: list[np.ndarray] = []
        marks_of_row = np.zeros(rows, dtype=np.int64)
        denies: list[tuple[int, ...]] = [()] * rows
        allows: list[tuple[int, ...]] = [()] * rows
        end = -1
        for row, entry in enumerate(template_masks):
            if entry is None:
                continue
            mask, table = entry
            end = max(end, mask.end)
            # without word marks a class rule allows every token or none (RowMask.apply)
            classes[row] = mask.classes if table is not None or mask.classes == 0 else ALL_CLASSES
            if table is not None and mask.classes not in (0, ALL_CLASSES):
                marks_of_row[row] = table_index(marks, table)
            denies[row], allows[row] = mask.deny, mask.allow
        modes = np.zeros(rows, dtype=np.int64)
        low = np.zeros(rows, dtype=np.int64)
        high = np.zeros(rows, dtype=np.int64)
        for row, rule in enumerate(utf8_rules):
            if rule is not None:
                modes[row], low[row], high[row] = rule
        return cls(
            classes,
            _padded(denies),
            _padded(allows),
            tuple(marks),
            marks_of_row,
            utf8,
            modes,
            low,
            high,
            end,
        )


def table_index(tables: list[np.ndarray], table: np.ndarray) -> int:
    """Where `table` is in `tables` (the same array, or an equal one), appended if new."""
    for i, known in enumerate(tables):
        if known is table or np.array_equal(known, table):
            return i
    tables.append(table)
    return len(tables) - 1


def _padded(lists: Sequence[tuple[int, ...]]) -> np.ndarray:
    width = max((len(ids) for ids in lists), default=0)
    out = np.full((len(lists), width), PAD, dtype=np.int64)
    for row, ids in enumerate(lists):
        out[row, : len(ids)] = ids
    return out


@dataclass(frozen=True)
class CandidateRequest:
    """What the engine ranks by: each row's cumulative score, the step's masks (None: none),
    the piece rewards (sorted unique row * vocab + token, and lambda * reward as float32),
    and k candidates for each of `groups` sentences (rows of a sentence contiguous)."""

    k: int
    groups: int
    cum_scores: np.ndarray  # float32 [rows]
    masks: StepMasks | None
    reward_keys: np.ndarray  # int64 [n]
    reward_values: np.ndarray  # float32 [n]


@dataclass(frozen=True)
class Candidates:
    """The k best candidates of each sentence by cumulative score + log-prob + reward, best
    first (lower index first on ties): local row * vocab + token, their totals, the model's
    log-probability of each (masks applied, reward not added); and each row's log-probability
    of token 0 (the token CTranslate2's prefix rule puts in a </s>'s place)."""

    flat: np.ndarray  # int64 [groups, k]
    totals: np.ndarray  # float32 [groups, k]
    log_probs: np.ndarray  # float32 [groups, k]
    first_column: np.ndarray  # float32 [rows]


@runtime_checkable
class CandidateStepDecoder(StepDecoder, Protocol):
    """A step decoder that can rank on its own device and send back only the candidates."""

    @property
    def ranks_on_device(self) -> bool:
        """Whether the search should ask for candidates rather than every score (an engine on
        a GPU); on the CPU the full scores cost nothing to hand over."""
        ...

    def step_candidates(
        self, state: object, rows: StepRows, request: CandidateRequest
    ) -> Candidates:
        """The step of StepDecoder.step, ranked on the device by `request`."""
        ...
