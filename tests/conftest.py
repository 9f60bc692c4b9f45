"""Root fixtures. Area fixtures live in each tests/<area>/conftest.py."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

# CTranslate2 is the oracle of the compiled engines' int8 arithmetic. On a CPU that is not
# Intel's it multiplies int8 with oneDNN's u8s8 kernel, and on an AMD EPYC with AVX2 and no
# VNNI that gives other sums: "Click the menu." comes out as "Zum Menü klicken." (-0.61)
# where the fused engine, and CTranslate2 with Intel MKL (its choice on Intel CPUs), give
# "Klicken Sie auf das Menü." (-0.17). CTranslate2 reads this when it is first imported, so it
# is set before any test module imports it.
os.environ.setdefault("CT2_USE_MKL", "1")

import pytest
from model_families import TINY_SIZES
from tiny_corpus import tiny_corpus, train_spm


@pytest.fixture(scope="session")
def tiny_marian_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A transformers MarianMTModel directory like an OPUS-MT download.

    2+2 layers, d_model 64, random weights (seed 0), source.spm = target.spm (one joint
    SentencePiece model) and vocab.json.
    """
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import sentencepiece as spm

    out = tmp_path_factory.mktemp("tiny-marian")
    spm_bytes = train_spm(tiny_corpus())
    (out / "source.spm").write_bytes(spm_bytes)
    (out / "target.spm").write_bytes(spm_bytes)
    processor = spm.SentencePieceProcessor(model_proto=spm_bytes)
    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    vocab["<pad>"] = len(vocab)  # Marian keeps <pad> last; CTranslate2 drops it
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    with warnings.catch_warnings():  # it recommends sacremoses, which Marian does not need
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        tokenizer = transformers.MarianTokenizer(
            str(out / "source.spm"),
            str(out / "target.spm"),
            str(out / "vocab.json"),
            source_lang="en",
            target_lang="de",
        )
    tokenizer.save_pretrained(out)
    config = transformers.MarianConfig(
        vocab_size=len(vocab),
        **{**TINY_SIZES, "max_position_embeddings": 256},
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["</s>"],
        decoder_start_token_id=vocab["<pad>"],
        forced_eos_token_id=vocab["</s>"],
    )
    with torch.random.fork_rng():  # leave the session's global RNG alone
        torch.manual_seed(0)
        model = transformers.MarianMTModel(config).eval()
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_bundle_dir(tiny_marian_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny checkpoint converted (float32) into an en->de bundle directory by `convert`."""
    from tm_guide.model.convert import ConvertOptions, convert_checkpoint

    out = tmp_path_factory.mktemp("tiny-bundle") / "tiny-en-de"
    with warnings.catch_warnings():  # the converter loads the tokenizer (see above)
        warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
        return convert_checkpoint(
            ConvertOptions(
                source_format="transformers",
                checkpoint=tiny_marian_checkpoint,
                output_dir=out,
                source_lang="en",
                target_lang="de",
                quantization="float32",
                name="tiny-en-de",
                training_data="random weights (test fixture)",
            )
        )


@pytest.fixture(scope="session")
def tiny_bundle(tiny_bundle_dir: Path):  # -> tm_guide.model.Bundle
    """A loaded tiny bundle (CPU, one thread); shared by the whole session, so do not modify it."""
    from tm_guide.model import Bundle

    return Bundle.load(tiny_bundle_dir, device="cpu", intra_threads=1)
