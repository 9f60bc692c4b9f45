"""Decoding fixtures: the shared tiny bundle, plus a variant whose outputs end at varied lengths.

The shared tiny model has near-uniform random weights, so its beams rarely choose </s>. The
"peaked" variant perturbs the same checkpoint (fixed seed) and favours </s>, so that hypotheses
close at different steps and the end-of-sentence logic of the search is exercised.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from model_families import convert
from tiny_corpus import train_spm


def _peaked_checkpoint(source: Path, out: Path) -> Path:
    import shutil

    import torch
    import transformers

    shutil.copytree(source, out)
    model = transformers.MarianMTModel.from_pretrained(source).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" in name:
                continue
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.3)
        model.final_logits_bias.normal_(0.0, 1.0, generator=generator)
        model.final_logits_bias[0, model.config.eos_token_id] = 6.0
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def peaked_checkpoint(
    tiny_marian_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return _peaked_checkpoint(tiny_marian_checkpoint, tmp_path_factory.mktemp("peaked") / "hf")


@pytest.fixture(scope="session")
def peaked_bundle(peaked_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory):
    from tm_guide.model import Bundle

    path = convert(peaked_checkpoint, tmp_path_factory.mktemp("peaked-f32") / "peaked", "float32")
    return Bundle.load(path, device="cpu", intra_threads=1)


@pytest.fixture(scope="session")
def peaked_int8_bundle(peaked_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory):
    from tm_guide.model import Bundle

    path = convert(peaked_checkpoint, tmp_path_factory.mktemp("peaked-i8") / "peaked", "int8")
    return Bundle.load(path, device="cpu", intra_threads=1)


SENTENCES = [
    "Click the menu.",
    "Open the file and save the document.",
    "Select a table cell, insert text and choose the font.",
    "Help",
    "Print the page.",
    "Export the spreadsheet chart style to a new sheet range value.",
]


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    return list(SENTENCES)


@pytest.fixture(scope="session")
def tiny_t5_bundle(tmp_path_factory: pytest.TempPathFactory):
    """A T5 (relative attention: neither exact re-implementation has it), 2+2 layers, d_model
    64, random weights, converted to int8 by `convert` as a user's T5 checkpoint would be."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    import sentencepiece as spm

    from tm_guide.model import Bundle
    from tm_guide.model.convert import ConvertOptions, convert_checkpoint

    out = tmp_path_factory.mktemp("tiny-t5")
    spm_bytes = train_spm(SENTENCES * 4, pad_id=0, eos_id=1, unk_id=2)
    for name in ("spiece.model", "source.spm", "target.spm"):
        (out / name).write_bytes(spm_bytes)
    pieces = spm.SentencePieceProcessor(model_proto=spm_bytes)
    vocab = [(pieces.id_to_piece(i), pieces.get_score(i)) for i in range(pieces.get_piece_size())]
    tokenizer = transformers.T5Tokenizer(vocab=vocab, extra_ids=0)
    tokenizer.save_pretrained(out)
    config = transformers.T5Config(
        vocab_size=len(tokenizer),
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        transformers.T5ForConditionalGeneration(config).eval().save_pretrained(out)
    path = convert_checkpoint(
        ConvertOptions(
            source_format="transformers",
            checkpoint=out,
            output_dir=tmp_path_factory.mktemp("tiny-t5-bundle") / "t5",
            source_lang="en",
            target_lang="de",
            quantization="int8",
            name="tiny-t5",
            training_data="random weights (test fixture)",
        )
    )
    return Bundle.load(path, device="cpu", intra_threads=1)


@pytest.fixture(scope="session")
def demo():  # type: ignore[no-untyped-def]
    """The bundled demo model, loaded once for the tests that translate with it."""
    from tm_guide.config import BUNDLED_MODEL
    from tm_guide.model import Bundle

    return Bundle.load(BUNDLED_MODEL, intra_threads=1)
