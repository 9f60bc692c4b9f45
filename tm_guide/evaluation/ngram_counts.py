"""Correctly translated n-grams bucketed by how often they occur in the TM (section 4.4, Table 7).

Definitions, exactly as the paper:
    uniq(Y)       the set of distinct n-grams (n = 1..4) of the token sequence Y
    Occur(u)      |{Y : <X, Y> in TM and u in uniq(Y)}|  (TM target sentences that contain u)
    psi(g, Z, Y)  {u : u in uniq(Z) & uniq(Y) and Occur(u) = g}
    Count_g       sum over the test set of |psi(g, Z^k, Y^k)|

Occur(u) = g is an exact equality, so Count_1 counts n-grams seen in exactly one TM target.
Tokens are the words BLEU counts (sacrebleu's 13a tokenizer by default), so that Table 7 speaks
of the same n-grams as the BLEU score next to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from tqdm import tqdm

NGram = tuple[str, ...]
Tokenizer = Callable[[str], list[str]]

PAPER_GAMMAS: tuple[int, ...] = (0, 1, 2, 5, 10, 20, 50, 100)
MAX_N = 4


def bleu_tokenizer(name: str = "13a") -> Tokenizer:
    """The tokenizer sacrebleu's BLEU uses, as a str -> tokens function."""
    from sacrebleu.metrics.bleu import BLEU

    tokenize = BLEU(tokenize=name).tokenizer
    return lambda text: tokenize(text.strip()).split()


def uniq_ngrams(tokens: Sequence[str], max_n: int = MAX_N) -> set[NGram]:
    """uniq(Y): the distinct n-grams of length 1..max_n."""
    grams: set[NGram] = set()
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            grams.add(tuple(tokens[i : i + n]))
    return grams


def correct_ngrams(
    hypotheses: Sequence[str], references: Sequence[str], tokenize: Tokenizer, max_n: int = MAX_N
) -> list[set[NGram]]:
    """uniq(Z^k) & uniq(Y^k) for each test sentence k."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    return [
        uniq_ngrams(tokenize(z), max_n) & uniq_ngrams(tokenize(y), max_n)
        for z, y in zip(hypotheses, references, strict=True)
    ]


def occurrences(
    tm_targets: Iterable[str],
    wanted: set[NGram],
    tokenize: Tokenizer,
    max_n: int = MAX_N,
    progress: bool = False,
) -> Counter[NGram]:
    """Occur(u) for every u in `wanted` (n-grams absent from the TM are simply missing: count 0).

    Only the n-grams some system got right matter, so the TM is streamed once and only those are
    counted; this keeps memory small on a large TM.
    """
    counts: Counter[NGram] = Counter()
    if not wanted:
        return counts
    for target in tqdm(
        tm_targets, desc="Occur(u) over TM targets", unit="seg", disable=not progress
    ):
        present = uniq_ngrams(tokenize(target), max_n) & wanted
        counts.update(present)
    return counts


def count_gamma(
    correct: Sequence[set[NGram]], occur: Counter[NGram], gammas: Sequence[int] = PAPER_GAMMAS
) -> dict[int, int]:
    """Count_gamma per gamma: correct n-grams that occur exactly gamma times in the TM."""
    per_count: Counter[int] = Counter()
    for grams in correct:
        for gram in grams:
            per_count[occur.get(gram, 0)] += 1
    return {gamma: per_count.get(gamma, 0) for gamma in gammas}
