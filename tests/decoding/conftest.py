"""Decoding fixtures: the shared tiny bundle, plus a variant whose outputs end at varied lengths.

The shared tiny model has near-uniform random weights, so its beams rarely choose </s>. The
"peaked" variant perturbs the same checkpoint (fixed seed) and favours </s>, so that hypotheses
close at different steps and the end-of-sentence logic of the search is exercised.
"""

from __future__ import annotations

from pathlib import Path

import pytest


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


def _convert(checkpoint: Path, out: Path, quantization: str) -> Path:
    from tm_guide.model.convert import ConvertOptions, convert_checkpoint

    return convert_checkpoint(
        ConvertOptions(
            source_format="transformers",
            checkpoint=checkpoint,
            output_dir=out,
            source_lang="en",
            target_lang="de",
            quantization=quantization,
            name=out.name,
            training_data="random weights (test fixture)",
        )
    )


@pytest.fixture(scope="session")
def peaked_checkpoint(
    tiny_marian_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return _peaked_checkpoint(tiny_marian_checkpoint, tmp_path_factory.mktemp("peaked") / "hf")


@pytest.fixture(scope="session")
def peaked_bundle(peaked_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory):
    from tm_guide.model import Bundle

    path = _convert(peaked_checkpoint, tmp_path_factory.mktemp("peaked-f32") / "peaked", "float32")
    return Bundle.load(path, device="cpu", intra_threads=1)


@pytest.fixture(scope="session")
def peaked_int8_bundle(peaked_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory):
    from tm_guide.model import Bundle

    path = _convert(peaked_checkpoint, tmp_path_factory.mktemp("peaked-i8") / "peaked", "int8")
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
