"""Pieces fixtures: the hand-aligned gold set and a SentencePiece model trained on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.pieces.quality import GoldPair, read_gold
from tm_guide.pieces.tokenizer import SentencePieceTokenizer

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def gold_pairs() -> list[GoldPair]:
    path = DATA / "gold_en_de.tsv"
    with open(path, encoding="utf-8") as lines:
        return read_gold(lines, str(path))


@pytest.fixture(scope="session")
def gold_tokenizer(tmp_path_factory: pytest.TempPathFactory, gold_pairs) -> SentencePieceTokenizer:
    """A small joint SentencePiece model: most words of the gold set split into several pieces."""
    import sentencepiece as spm

    work = tmp_path_factory.mktemp("spm")
    text = work / "text.txt"
    text.write_text(
        "".join(f"{' '.join(p.source)}\n{' '.join(p.target)}\n" for p in gold_pairs),
        encoding="utf-8",
    )
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(work / "joint"), vocab_size=400, minloglevel=2
    )
    return SentencePieceTokenizer(work / "joint.model")
