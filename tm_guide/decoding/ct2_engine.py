"""Exact step decoder on CTranslate2 alone: one translate_batch call per step.

CTranslate2's Python API has no per-step hook, so each step forces the hypothesis so far as a
target prefix and asks for one more token with its logits. This re-encodes the source and re-runs
the prefix at every step (cost grows with T^2), so it is slow; it needs nothing but CTranslate2
and is the reference the fast engine is tested against.

The calls are shaped by what CTranslate2 does (see the project notes on guided decoding):
max_decoding_length counts the prefix, so it is prefix length + 1; return_logits_vocab only works
with beam_size=1 and returns raw logits; min_decoding_length=0 and end_token=[] keep </s> unmasked
(the search applies its own minimum length).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tm_guide.decoding.search import log_softmax
from tm_guide.decoding.step import StepRows
from tm_guide.decoding.vocabulary import TargetVocabulary


@dataclass
class _CT2State:
    sources: list[list[str]]
    prefixes: list[list[str]]


class CT2StepDecoder(TargetVocabulary):
    """StepDecoder over a ctranslate2.Translator."""

    def __init__(
        self,
        translator: object,
        target_vocabulary: Sequence[str],
        end_token: str = "</s>",
        start_token: str | None = None,
        max_batch_size: int = 0,
    ) -> None:
        super().__init__(target_vocabulary, end_token, start_token)
        self.translator = translator
        self.max_batch_size = max_batch_size

    def start(self, sources: Sequence[Sequence[str]]) -> _CT2State:
        return _CT2State(sources=[list(s) for s in sources], prefixes=[[] for _ in sources])

    def step(self, state: object, rows: StepRows) -> np.ndarray:
        assert isinstance(state, _CT2State)
        parents, sentences, last_ids = rows.parents, rows.sentences, rows.last_ids
        if parents is None:
            prefixes: list[list[str]] = [[] for _ in sentences]
        else:
            prefixes = [
                state.prefixes[int(p)] + [self.target_vocabulary[int(t)]]
                for p, t in zip(parents, last_ids, strict=True)
            ]
        state.prefixes = prefixes
        length = len(prefixes[0]) if prefixes else 0
        results = self.translator.translate_batch(  # type: ignore[attr-defined]
            [state.sources[int(s)] for s in sentences],
            target_prefix=prefixes,
            max_batch_size=self.max_batch_size,
            beam_size=1,
            max_decoding_length=length + 1,
            min_decoding_length=0,
            end_token=[],
            return_logits_vocab=True,
        )
        logits = np.stack([np.asarray(r.logits[0][-1], dtype=np.float32) for r in results])
        return log_softmax(logits, self._end_id if rows.mask_end else None)
