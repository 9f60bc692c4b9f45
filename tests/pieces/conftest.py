"""Pieces fixtures: the demo bundle, the hand-aligned gold set and a SentencePiece model
trained on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tm_guide.config import BUNDLED_MODEL
from tm_guide.model import Bundle
from tm_guide.pieces.align import AlignOptions, MemoryAligner
from tm_guide.pieces.quality import GoldPair, read_gold
from tm_guide.pieces.tokenizer import SentencePieceTokenizer
from tm_guide.records import SegmentRecord
from tm_guide.store import Store

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def bundle() -> Bundle:
    """The bundled demo model, whose SentencePiece models the pairs are encoded with."""
    return Bundle.load(BUNDLED_MODEL, intra_threads=1)


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


@pytest.fixture(scope="module")
def aligned_template(tmp_path_factory, gold_pairs, gold_tokenizer):  # type: ignore[no-untyped-def]
    """A store holding the gold pairs, aligned once; each test works on a copy of its files."""
    root = tmp_path_factory.mktemp("aligned")
    store = Store.open(f"sqlite:///{root / 'tm.sqlite'}", root / "index")
    memory = store.create_memory("ui", "en", "de")
    store.import_records(
        memory, [SegmentRecord(" ".join(p.source), " ".join(p.target)) for p in gold_pairs]
    )
    aligner = MemoryAligner(store, gold_tokenizer, AlignOptions(cache_dir=root / "priors"))
    report = aligner.align_memory(store.get_memory(memory.id))
    store.close()
    return root, report


@pytest.fixture
def store(tmp_path: Path, aligned_template):  # type: ignore[no-untyped-def]
    """A copy of the aligned store, for one test."""
    shutil.copytree(aligned_template[0], tmp_path / "tm")
    store = Store.open(f"sqlite:///{tmp_path / 'tm' / 'tm.sqlite'}", tmp_path / "tm" / "index")
    yield store
    store.close()
