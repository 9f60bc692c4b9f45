"""Write the tm-guide bundle from model weights: HF checkpoint -> CTranslate2 int8 -> bundle.

Conversion and the model card go through tm_guide.model.convert (the one bundle writer);
this adds the test-set scores and swaps the finished bundle into place in one rename.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from tm_guide.model.card import Metrics, ModelCard
from tm_guide.model.convert import ConvertOptions, convert_checkpoint
from tm_guide.train.evaluate import Scores, score_bundle
from tm_guide.train.options import TrainOptions
from tm_guide.train.vocab import save_marian_tokenizer


def save_hf_checkpoint(model, spm_file: Path, pieces: list[str], directory: Path) -> Path:
    if directory.exists():
        shutil.rmtree(directory)
    model.save_pretrained(str(directory))
    save_marian_tokenizer(spm_file, pieces, directory)
    shutil.copyfile(spm_file, directory / "source.spm")
    shutil.copyfile(spm_file, directory / "target.spm")
    return directory


def export_bundle(
    model,
    spm_file: Path,
    pieces: list[str],
    options: TrainOptions,
    test_pairs: list[tuple[str, str]],
    training_data: dict,
    label: str,
    guidance: dict | None = None,
) -> Scores:
    """Convert, score on the test pairs, write the card, and replace options.bundle_dir.

    `guidance`: card fields of the guided decoding tuned for the model a warm start began from
    (guided_lambda and the reward rule), kept until `tm-guide eval` tunes the new one."""
    hf_dir = save_hf_checkpoint(model, spm_file, pieces, options.run_dir / f"hf-{label}")
    staging = options.run_dir / f"bundle-{label}"
    convert_checkpoint(
        ConvertOptions(
            source_format="transformers",
            checkpoint=hf_dir,
            output_dir=staging,
            source_lang=options.source_lang,
            target_lang=options.target_lang,
            quantization="int8",
            name=options.name,
            training_data="",
            force=True,
        )
    )
    scores = score_bundle(staging, test_pairs, beam_size=5, threads=options.threads)
    card = ModelCard.read(staging)
    test_set = (
        f"LibreOffice help 7.4 en-de test split ({scores.sentences} sentences, "
        "beam 5, sacrebleu 13a)"
    )
    card = dataclasses.replace(
        card,
        training_data=training_data,
        metrics=Metrics(bleu=scores.bleu, chrf=scores.chrf, test_set=test_set),
        **(guidance or {}),
    )
    card.write(staging)
    target = options.bundle_dir
    target.parent.mkdir(parents=True, exist_ok=True)
    incoming = target.parent / f".{target.name}.incoming"
    if incoming.exists():
        shutil.rmtree(incoming)
    shutil.copytree(staging, incoming)
    old = target.parent / f".{target.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        target.rename(old)
    incoming.rename(target)
    if old.exists():
        shutil.rmtree(old)
    return scores
