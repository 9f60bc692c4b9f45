"""Approximate guided decoding: CTranslate2's native n-best, reranked by the guided score.

Cheap (one native call) but not the paper's method: the reward cannot steer the search, it can only
pick among the hypotheses the unguided search kept. Each hypothesis is rescored as the exact search
would score it: (log P(Y|X) + lambda * sum_t sum_n D_X(...)) / length ** length_penalty, the reward
summed along the output exactly as it would have been added step by step.
"""

from __future__ import annotations

from collections.abc import Sequence

from tm_guide.decoding.rewards import PieceReward
from tm_guide.decoding.search import Hypothesis, SearchOptions, native_beam_search


def rerank_search(
    translator: object,
    sources: Sequence[Sequence[str]],
    options: SearchOptions,
    rewards: Sequence[PieceReward | None],
    token_to_id: dict[str, int],
    width: int | None = None,
    prefixes: Sequence[Sequence[str]] | None = None,
) -> list[list[Hypothesis]]:
    """Native beam search of `width` (default: the beam size) returning `width` hypotheses each,
    reranked by the guided score; for each sentence the options.num_hypotheses best."""
    width = width or options.beam_size
    if not sources:
        return []
    outputs = native_beam_search(
        translator, sources, options, width=width, num_hypotheses=width, prefixes=prefixes
    )
    results = []
    for output, reward in zip(outputs, rewards, strict=True):
        hypotheses = []
        for tokens, score in zip(output.hypotheses, output.scores, strict=True):
            ids = tuple(token_to_id[t] for t in tokens)
            # A hypothesis cut at max_length has no </s>; otherwise </s> counts in the length.
            length = len(ids) if len(ids) >= options.max_length else len(ids) + 1
            norm = float(length) ** options.length_penalty
            log_prob = score * norm
            total_reward = (
                options.lam * reward.sequence_reward(ids, options.reward_repeats) if reward else 0.0
            )
            hypotheses.append(
                Hypothesis(
                    token_ids=ids,
                    score=(log_prob + total_reward) / norm,
                    log_prob=log_prob,
                    reward=total_reward,
                    length=length,
                    model_score=score,
                )
            )
        hypotheses.sort(key=lambda h: h.score, reverse=True)
        results.append(hypotheses[: options.num_hypotheses])
    return results
