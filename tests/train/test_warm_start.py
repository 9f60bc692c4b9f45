"""A run can start from a shipped bundle: its int8 weights become the same model again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import ctranslate2  # noqa: E402
import sentencepiece as spm  # noqa: E402

from tm_guide.config import BUNDLED_MODEL  # noqa: E402
from tm_guide.errors import ModelError  # noqa: E402
from tm_guide.train.loop import build_model  # noqa: E402
from tm_guide.train.options import ModelShape, TrainOptions  # noqa: E402
from tm_guide.train.warm_start import load_bundle_weights  # noqa: E402

PAIRS = [
    ("Click the Format button to open the dialog.",
     "Klicken Sie auf die Schaltfläche Format, um den Dialog zu öffnen."),
    ("Select the table.", "Wählen Sie die Tabelle aus."),
]  # fmt: skip


def options(shape: ModelShape) -> TrainOptions:
    unused = Path("unused")
    return TrainOptions(
        train_tsv=unused, dev_tsv=unused, test_tsv=unused, run_dir=unused, bundle_dir=unused,
        deadline=None, shape=shape,  # type: ignore[arg-type]
    )  # fmt: skip


def test_warm_started_model_scores_like_the_bundle() -> None:
    vocabulary = json.loads((BUNDLED_MODEL / "shared_vocabulary.json").read_text())
    ids = {piece: i for i, piece in enumerate(vocabulary)}
    pad = len(vocabulary)
    model = build_model(options(ModelShape()), pad + 1, pad)
    load_bundle_weights(model, BUNDLED_MODEL, layers=3)
    model.eval()
    processor = spm.SentencePieceProcessor(model_file=str(BUNDLED_MODEL / "source.spm"))
    translator = ctranslate2.Translator(str(BUNDLED_MODEL), compute_type="float32")
    for source, target in PAIRS:
        source_pieces = processor.encode(source, out_type=str) + ["</s>"]
        target_pieces = processor.encode(target, out_type=str)
        expected = translator.score_batch([source_pieces], [target_pieces])[0].log_probs
        labels = [ids[p] for p in target_pieces] + [ids["</s>"]]
        with torch.no_grad():
            logits = model(
                input_ids=torch.tensor([[ids[p] for p in source_pieces]]),
                decoder_input_ids=torch.tensor([[pad] + labels[:-1]]),
            ).logits
        log_probs = logits.log_softmax(-1)[0, torch.arange(len(labels)), torch.tensor(labels)]
        assert log_probs.tolist() == pytest.approx(list(expected), abs=2e-3)


def test_shape_mismatch_is_a_clear_error() -> None:
    vocabulary_size = len(json.loads((BUNDLED_MODEL / "shared_vocabulary.json").read_text()))
    model = build_model(options(ModelShape(layers=2)), vocabulary_size + 1, vocabulary_size)
    with pytest.raises(ModelError, match="does not have 2 layers"):
        load_bundle_weights(model, BUNDLED_MODEL, layers=2)


def test_byte_fallback_appends_byte_pieces_and_keeps_every_id(tmp_path) -> None:
    """The model's pieces keep their ids, 256 byte pieces follow, "→" (no piece of its own)
    becomes its bytes and comes back."""
    from tiny_corpus import tiny_corpus, train_spm

    from tm_guide.train.vocab import BYTE_PIECES, add_byte_fallback, vocabulary

    model_file = tmp_path / "spm.model"
    model_file.write_bytes(train_spm(tiny_corpus()))
    old = spm.SentencePieceProcessor(model_file=str(model_file))
    assert add_byte_fallback(model_file) and not add_byte_fallback(model_file)
    new = spm.SentencePieceProcessor(model_file=str(model_file))
    pieces = vocabulary(new)
    assert pieces[: old.get_piece_size()] == vocabulary(old)[:-1]
    assert pieces[old.get_piece_size() : -1] == BYTE_PIECES and pieces[-1] == "<pad>"
    assert old.unk_id() in old.encode("Filters → Blur")
    encoded = new.encode("Filters → Blur", out_type=str)
    assert [p for p in encoded if p.startswith("<0x")] == ["<0xE2>", "<0x86>", "<0x92>"]
    assert new.decode(new.encode("Filters → Blur")) == "Filters → Blur"


def test_a_warm_start_into_a_larger_vocabulary_keeps_the_bundles_rows() -> None:
    """Pieces appended to the bundle's vocabulary (byte fallback's) get ordinary embedding rows,
    the bundle's own rows stay as they were, and <pad> stays last and zero."""
    size = len(json.loads((BUNDLED_MODEL / "shared_vocabulary.json").read_text()))
    model = build_model(options(ModelShape()), size + 256 + 1, size + 256)
    load_bundle_weights(model, BUNDLED_MODEL, layers=3)
    plain = build_model(options(ModelShape()), size + 1, size)
    load_bundle_weights(plain, BUNDLED_MODEL, layers=3)
    table = model.model.shared.weight.detach()
    assert torch.equal(table[:size], plain.model.shared.weight[:-1].detach())
    assert table[size : size + 256].norm(dim=1).min() > 0
    assert table[-1].abs().sum() == 0
    assert torch.equal(model.final_logits_bias[0, :size], plain.final_logits_bias[0, :size])
