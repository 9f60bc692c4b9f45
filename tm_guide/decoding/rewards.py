"""The translation-piece reward of the paper (eq. 10, Algorithm 2), over target-vocabulary ids.

For a candidate next token u after history y_1..y_{t-1}, the reward is
    sum_{n=1..max_n} D_X(y_{t-n+1}, ..., y_{t-1}, u)
where D_X maps each collected n-gram to its score (eq. 8; 1.0 with the binary reward) and is 0
for n-grams that were not collected. It is added, times lambda, to log P(u | y, X).

Algorithm 2 stops at the first n whose (n)-gram is missing; the n-grams of Algorithm 1 are closed
under taking suffixes (every sub-span of a collected span is collected from the same retrieved
pair), so on them the sum of eq. 10 and Algorithm 2 agree. This module implements the sum.

Only tokens of L_X (the unigrams) can ever get a reward, so the work per step is a lookup of the
last 1..max_n-1 history tokens in a dict of contexts, not a pass over the vocabulary.

Eq. 10 rewards a piece every time it is produced, so with a large lambda a hypothesis can loop on
pieces until the length cap. With `repeats=False` each piece is rewarded at most `limit(piece)`
times per hypothesis: by default once for a piece of two or more tokens and without limit for a
single token (pieces once); with limits from the pieces (PieceOptions.clipped), as often as the
piece occurs in the TM target it came from, single tokens included, as BLEU clips its counts.
`used` is then how often each limited piece was produced so far (a mapping that is never
changed in place). That is state the paper's method does not have (its Algorithm 2 needs none);
it is an option, off by default.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

# what a target template holds, for the reward of a row decoding under it: the template's
# n-grams, and its next token (-1 when none is left), which they still reward
Held = tuple[frozenset[tuple[int, ...]], int]


class PieceReward:
    """D_X of one sentence, indexed by context for fast per-step lookups."""

    def __init__(
        self,
        ngrams: Mapping[tuple[int, ...], float],
        max_n: int = 4,
        limits: Mapping[tuple[int, ...], int] | None = None,
    ) -> None:
        self.max_n = max_n
        self.ngrams: dict[tuple[int, ...], float] = {
            ids: float(score) for ids, score in ngrams.items() if 0 < len(ids) <= max_n and score
        }
        # times a piece is rewarded when repeats are off; 0: no limit (see limit())
        self.limits: dict[tuple[int, ...], int] = {
            ids: (limits or {}).get(ids, 1 if len(ids) > 1 else 0) for ids in self.ngrams
        }
        if any(n < 0 for n in self.limits.values()):
            raise ValueError("a piece's limit must be >= 0 (0: no limit)")
        grouped: dict[tuple[int, ...], dict[int, float]] = defaultdict(dict)
        for ids, score in self.ngrams.items():
            grouped[ids[:-1]][ids[-1]] = score
        self._by_context: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {
            context: (
                np.fromiter(entries.keys(), dtype=np.int64, count=len(entries)),
                np.fromiter(entries.values(), dtype=np.float64, count=len(entries)),
            )
            for context, entries in grouped.items()
        }
        # Every token that can be rewarded, and per context its rewards over those tokens as a
        # dense vector: a step's rewards for a row are then a sum of at most max_n vectors.
        self.rewarded_ids = np.array(sorted({ids[-1] for ids in self.ngrams}), dtype=np.int64)
        position = {int(token): i for i, token in enumerate(self.rewarded_ids)}
        self._dense_by_context: dict[tuple[int, ...], np.ndarray] = {}
        for context, (tokens, values) in self._by_context.items():
            dense = np.zeros(len(self.rewarded_ids), dtype=np.float64)
            dense[[position[int(t)] for t in tokens]] = values
            self._dense_by_context[context] = dense

    @classmethod
    def from_tokens(
        cls,
        ngrams: Mapping[tuple[str, ...], float],
        token_to_id: Mapping[str, int],
        max_n: int = 4,
        limits: Mapping[tuple[str, ...], int] | None = None,
    ) -> PieceReward:
        """Map token n-grams to vocabulary ids; n-grams with a token outside the vocabulary can
        never be produced by the model, so they are dropped. `limits`: how often each may be
        rewarded when repeats are off (TranslationPieces.limits; absent: the pieces-once rule)."""
        by_ids: dict[tuple[int, ...], float] = {}
        limit_ids: dict[tuple[int, ...], int] = {}
        for tokens, score in ngrams.items():
            ids = tuple(token_to_id.get(token, -1) for token in tokens)
            if -1 not in ids:
                by_ids[ids] = max(score, by_ids.get(ids, 0.0))
                if limits and tokens in limits:
                    limit_ids[ids] = max(limits[tokens], limit_ids.get(ids, 0))
        return cls(by_ids, max_n=max_n, limits=limit_ids if limits else None)

    def limit(self, gram: tuple[int, ...]) -> int:
        """How often `gram` is rewarded per hypothesis when repeats are off; 0: every time."""
        return self.limits.get(gram, 0)

    def spent(self, gram: tuple[int, ...], used: Mapping[tuple[int, ...], int]) -> bool:
        limit = self.limit(gram)
        return limit > 0 and used.get(gram, 0) >= limit

    def __bool__(self) -> bool:
        return bool(self.ngrams)

    def step_bonus(
        self, histories: Sequence[Sequence[int]]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rewards for every row: (row indices, token ids, reward) triples, one per rewarded pair.

        `histories[r]` holds the generated tokens of row r (at least its last max_n-1)."""
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        by_context = self._by_context
        for row, history in enumerate(histories):
            tail = tuple(history[max(0, len(history) - (self.max_n - 1)) :])
            for n in range(len(tail) + 1):
                entry = by_context.get(tail[len(tail) - n :] if n else ())
                if entry is not None:
                    rows.append(np.full(entry[0].shape[0], row, dtype=np.int64))
                    cols.append(entry[0])
                    vals.append(entry[1])
        if not rows:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=np.float64)
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)

    def step_dense(
        self,
        histories: Sequence[Sequence[int]],
        used: Sequence[Mapping[tuple[int, ...], int]] | None = None,
        held: Sequence[Held | None] | None = None,
    ) -> np.ndarray:
        """Rewards [rows, len(rewarded_ids)] (float64) of every row for each rewarded token.

        `histories[r]` holds the generated tokens of row r (at least its last max_n-1). With
        `used` (one mapping per row), pieces that row produced as often as their limit get
        nothing. With `held` (one or None per row: the n-grams a target template holds and its
        next token), a piece the template holds rewards no token but that next one."""
        out = np.zeros((len(histories), len(self.rewarded_ids)), dtype=np.float64)
        by_context = self._dense_by_context
        width = self.max_n - 1
        for row, history in enumerate(histories):
            tail = tuple(history[max(0, len(history) - width) :])
            spent = used[row] if used is not None else None
            holds = held[row] if held is not None else None
            for n in range(len(tail) + 1):
                context = tail[len(tail) - n :] if n else ()
                dense = by_context.get(context)
                if dense is None:
                    continue
                if spent:
                    dense = self._without_used(context, dense, spent)
                if holds is not None:
                    dense = self._without_held(context, dense, holds)
                out[row] += dense
        return out

    def _without_held(self, context: tuple[int, ...], dense: np.ndarray, held: Held) -> np.ndarray:
        """`dense` with the pieces a template holds set to 0, but for the template's next
        token."""
        grams, exempt = held
        return self._zeroed(context, dense, lambda gram: gram[-1] != exempt and gram in grams)

    def _without_used(
        self, context: tuple[int, ...], dense: np.ndarray, used: Mapping[tuple[int, ...], int]
    ) -> np.ndarray:
        """`dense` (the rewards after `context`) with the pieces `used` has spent set to 0."""
        return self._zeroed(context, dense, lambda gram: self.spent(gram, used))

    def _zeroed(
        self,
        context: tuple[int, ...],
        dense: np.ndarray,
        gone: Callable[[tuple[int, ...]], bool],
    ) -> np.ndarray:
        """`dense` (the rewards after `context`) with the pieces `gone` picks set to 0; the
        same array when it picks none."""
        tokens = self._by_context[context][0]
        picked = [i for i, token in enumerate(tokens.tolist()) if gone(context + (token,))]
        if not picked:
            return dense
        dense = dense.copy()
        dense[np.searchsorted(self.rewarded_ids, tokens[picked])] = 0.0
        return dense

    def produced(
        self, used: Mapping[tuple[int, ...], int], history: Sequence[int]
    ) -> Mapping[tuple[int, ...], int]:
        """`used` counting the limited pieces that end `history` (its last token just produced);
        the same mapping when there are none."""
        new = [
            gram
            for n in range(1, min(self.max_n, len(history)) + 1)
            if self.limits.get(gram := tuple(history[len(history) - n :]), 0) > 0
        ]
        if not new:
            return used
        counted = dict(used)
        for gram in new:
            counted[gram] = counted.get(gram, 0) + 1
        return counted

    def token_reward(
        self,
        history: Sequence[int],
        token: int,
        used: Mapping[tuple[int, ...], int] | None = None,
    ) -> float:
        """Reward of producing `token` after `history` (unweighted by lambda); pieces `used`
        has spent get nothing."""
        total = 0.0
        for n in range(1, self.max_n + 1):
            if n - 1 > len(history):
                break
            context = tuple(history[len(history) - (n - 1) :]) if n > 1 else ()
            gram = context + (token,)
            if used and self.spent(gram, used):
                continue
            total += self.ngrams.get(gram, 0.0)
        return total

    def sequence_reward(self, ids: Sequence[int], repeats: bool = True) -> float:
        """Reward collected along a whole output, as the search would add it step by step
        (`repeats=False`: each piece at most its limit times)."""
        total = 0.0
        used: Mapping[tuple[int, ...], int] = {}
        for t in range(len(ids)):
            total += self.token_reward(ids[:t], ids[t], used)
            if not repeats:
                used = self.produced(used, ids[: t + 1])
        return total
