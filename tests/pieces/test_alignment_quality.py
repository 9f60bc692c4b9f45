"""Alignment quality against hand-made gold links (AER), bulk and incremental.

Subword alignments from eflomal are projected to words. eflomal samples at random, so the bounds
leave a margin over the measured values (bulk about 0.12-0.16, incremental about 0.19-0.25 on this
machine); a broken symmetrization, projection or priors path lands far above them.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pytest

from tm_guide.pieces.align import AlignOptions, align_token_pairs
from tm_guide.pieces.priors import AlignmentPriors
from tm_guide.pieces.quality import (
    GoldPair,
    alignment_error_rate,
    piece_words,
    project_to_words,
    read_gold,
)

BULK_AER_BOUND = 0.25
INCREMENTAL_AER_BOUND = 0.32
CORPUS_AER_BOUND = 0.15  # measured 0.065


def tokenize(tokenizer, pairs: list[GoldPair]):  # type: ignore[no-untyped-def]
    source = [tokenizer.encode_source(" ".join(p.source)) for p in pairs]
    target = [tokenizer.encode_target(" ".join(p.target)) for p in pairs]
    return source, target


def word_aer(alignments, source, target, pairs) -> float:  # type: ignore[no-untyped-def]
    predicted = [
        project_to_words(links, piece_words(src), piece_words(trg))
        for links, src, trg in zip(alignments, source, target, strict=True)
    ]
    return alignment_error_rate(predicted, pairs)


def test_pieces_map_back_to_their_words(gold_pairs, gold_tokenizer) -> None:
    source, target = tokenize(gold_tokenizer, gold_pairs)
    assert sum(len(s) for s in source) > sum(len(p.source) for p in gold_pairs)  # real subwords
    for pair, src, trg in zip(gold_pairs, source, target, strict=True):
        assert piece_words(src)[-1] == len(pair.source) - 1
        assert piece_words(trg)[-1] == len(pair.target) - 1


def test_bulk_alignment_error_rate(gold_pairs, gold_tokenizer) -> None:
    source, target = tokenize(gold_tokenizer, gold_pairs)
    alignments, _ = align_token_pairs(source, target, AlignOptions().bulk)
    aer = word_aer(alignments, source, target, gold_pairs)
    print(f"bulk AER on {len(gold_pairs)} gold pairs: {aer:.3f}")
    assert aer < BULK_AER_BOUND


def test_incremental_alignment_with_priors_error_rate(gold_pairs, gold_tokenizer) -> None:
    """Three quarters form the 'memory' (aligned in bulk, priors estimated from its stored,
    symmetrized links); each pair of the last quarter is then aligned alone against the priors."""
    options = AlignOptions()
    memory = [p for i, p in enumerate(gold_pairs) if i % 4]
    new = [p for i, p in enumerate(gold_pairs) if i % 4 == 0]
    mem_source, mem_target = tokenize(gold_tokenizer, memory)
    mem_links, _ = align_token_pairs(mem_source, mem_target, options.bulk)
    priors = AlignmentPriors.estimate(mem_source, mem_target, mem_links, mem_links)
    source, target = tokenize(gold_tokenizer, new)
    alignments = [
        align_token_pairs([src], [trg], options.incremental, priors)[0][0]
        for src, trg in zip(source, target, strict=True)
    ]
    aer = word_aer(alignments, source, target, new)
    print(f"incremental AER on {len(new)} held-out gold pairs: {aer:.3f}")
    assert aer < INCREMENTAL_AER_BOUND


def test_without_priors_a_lone_pair_is_aligned_worse(gold_pairs, gold_tokenizer) -> None:
    """The priors are what makes single-segment alignment work: without them eflomal sees one
    sentence and can only guess."""
    options = AlignOptions()
    new = [p for i, p in enumerate(gold_pairs) if i % 4 == 0]
    source, target = tokenize(gold_tokenizer, new)
    alone = [
        align_token_pairs([src], [trg], options.incremental)[0][0]
        for src, trg in zip(source, target, strict=True)
    ]
    assert word_aer(alone, source, target, new) > INCREMENTAL_AER_BOUND


def test_gold_file_errors_name_the_line() -> None:
    with pytest.raises(ValueError, match=r"gold.tsv:2: link 3-0 outside"):
        read_gold(["a b\tA B\t0-0", "a b\tA B\t3-0"], "gold.tsv")
    with pytest.raises(ValueError, match=r"gold.tsv:1: expected 3"):
        read_gold(["a b\tA B"], "gold.tsv")


def test_aer_definition() -> None:
    pair = GoldPair(["a", "b"], ["A", "B"], frozenset({(0, 0)}), frozenset({(0, 0), (1, 1)}))
    assert alignment_error_rate([{(0, 0), (1, 1)}], [pair]) == 0.0
    assert alignment_error_rate([{(0, 1)}], [pair]) == 1.0
    assert alignment_error_rate([{(0, 0), (0, 1)}], [pair]) == pytest.approx(1 - 2 / 3)


@pytest.mark.slow
def test_bulk_alignment_error_rate_beside_a_training_corpus(gold_pairs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The gold pairs aligned inside 30k pairs of the benchmark training corpus (gettext
    catalogues, built by bench/corpus), with a SentencePiece model of realistic size."""
    import sentencepiece as spm

    from tm_guide.pieces.tokenizer import SentencePieceTokenizer

    corpus = Path(__file__).parents[2] / "bench" / "corpus" / "data" / "train" / "en-de.tsv"
    if not corpus.is_file():
        pytest.skip(f"{corpus} is not built (bench/corpus)")
    with open(corpus, encoding="utf-8") as lines:
        extra = [line.rstrip("\n").split("\t")[:2] for line in islice(lines, 30000)]
    text = tmp_path / "text.txt"
    with open(text, "w", encoding="utf-8") as out:
        for source, target in extra:
            out.write(f"{source}\n{target}\n")
        for pair in gold_pairs:
            out.write(f"{' '.join(pair.source)}\n{' '.join(pair.target)}\n")
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(tmp_path / "sp"), vocab_size=8000, minloglevel=2
    )
    tokenizer = SentencePieceTokenizer(tmp_path / "sp.model")
    source, target = tokenize(tokenizer, gold_pairs)
    source += [tokenizer.encode_source(s) for s, _ in extra]
    target += [tokenizer.encode_target(t) for _, t in extra]
    alignments, _ = align_token_pairs(source, target, AlignOptions().bulk)
    n = len(gold_pairs)
    aer = word_aer(alignments[:n], source[:n], target[:n], gold_pairs)
    print(f"bulk AER beside {len(extra)} corpus pairs: {aer:.3f}")
    assert aer < CORPUS_AER_BOUND
