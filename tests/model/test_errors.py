"""A damaged or mixed-up bundle is refused at load time, with a message naming the file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import sentencepiece as spm

from tm_guide.errors import ModelError
from tm_guide.model import Bundle
from tm_guide.model.card import CARD_FILE, sha256_file


def _rewrite_card(bundle_dir: Path, **changes: object) -> None:
    path = bundle_dir / CARD_FILE
    card = json.loads(path.read_text(encoding="utf-8"))
    card.update(changes)
    path.write_text(json.dumps(card), encoding="utf-8")


def _refresh_checksum(bundle_dir: Path, name: str) -> None:
    card = json.loads((bundle_dir / CARD_FILE).read_text(encoding="utf-8"))
    card["files"][name] = sha256_file(bundle_dir / name)
    (bundle_dir / CARD_FILE).write_text(json.dumps(card), encoding="utf-8")


def test_corrupted_model_bin_is_named(bundle_copy: Path) -> None:
    model_bin = bundle_copy / "model.bin"
    data = bytearray(model_bin.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model_bin.write_bytes(bytes(data))
    with pytest.raises(ModelError, match=r"model\.bin: checksum mismatch") as error:
        Bundle.load(bundle_copy)
    assert str(bundle_copy) in error.value.message


def test_missing_sentencepiece_model_is_named(bundle_copy: Path) -> None:
    (bundle_copy / "target.spm").unlink()
    with pytest.raises(ModelError, match=r"target\.spm: missing"):
        Bundle.load(bundle_copy)


def test_file_listed_in_card_but_missing_is_named(bundle_copy: Path) -> None:
    vocabulary = next(bundle_copy.glob("*vocabulary*"))
    vocabulary.unlink()
    with pytest.raises(ModelError, match=f"{vocabulary.name}: missing"):
        Bundle.load(bundle_copy)


def test_sentencepiece_model_of_another_model_is_a_vocabulary_mismatch(bundle_copy: Path) -> None:
    """Even with a consistent checksum, a foreign SentencePiece model is refused."""
    other = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(
            [f"Zahl {i} ist {i * 7 % 13} mal {i % 5} quer durch Bayern." for i in range(300)]
        ),
        model_writer=other,
        vocab_size=120,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    (bundle_copy / "target.spm").write_bytes(other.getvalue())
    _refresh_checksum(bundle_copy, "target.spm")
    with pytest.raises(ModelError, match=r"target\.spm: vocabulary size mismatch") as error:
        Bundle.load(bundle_copy)
    assert "shared_vocabulary" in error.value.message


def test_garbage_sentencepiece_model_is_named(bundle_copy: Path) -> None:
    (bundle_copy / "source.spm").write_bytes(b"\x00not a model")
    _refresh_checksum(bundle_copy, "source.spm")
    with pytest.raises(ModelError, match=r"source\.spm: not a valid SentencePiece model"):
        Bundle.load(bundle_copy)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("target_lang", "", "model_card.json: field 'target_lang'"),
        ("source_lang", "English", "field 'source_lang' is 'English', not a language tag"),
        ("guided_lambda", -1, "model_card.json: guided_lambda must be >= 0"),
        ("guided_lambda", "high", "model_card.json: guided_lambda.*expected a number"),
        ("guided_reward_repeats", "once", "'guided_reward_repeats' must be true, false or null"),
        ("guided_clipped", "yes", "'guided_clipped' must be true, false or null"),
        ("guided_weighting", "cubic", "'guided_weighting': piece weighting 'cubic' is not"),
        ("guided_weighting", "power:0", "'guided_weighting': piece weighting needs power > 0"),
        ("guided_weighting", 2, "'guided_weighting': piece weighting '' is not"),
        ("guided_repair", "often", "'guided_repair': repair 'often' is not off, T, T:SCALE"),
        ("guided_repair", "1.2:1:1", "'guided_repair': the repair threshold must be in"),
        ("guided_choice", "0.5:1", "'guided_choice': choice '0.5:1' is not off or T:MATCH"),
        ("guided_choice", "0:1:1:1", "'guided_choice': the choice threshold must be in"),
    ],
)
def test_a_card_with_a_bad_field_names_it(
    bundle_copy: Path, field: str, value: object, message: str
) -> None:
    _rewrite_card(bundle_copy, **{field: value})
    with pytest.raises(ModelError, match=message):
        Bundle.load(bundle_copy)


def test_card_that_is_not_json_gives_its_line(bundle_copy: Path) -> None:
    (bundle_copy / CARD_FILE).write_text('{\n  "name": "x",\n  oops\n}\n', encoding="utf-8")
    with pytest.raises(ModelError, match=r"model_card\.json:3: invalid JSON"):
        Bundle.load(bundle_copy)


def test_missing_bundle_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model bundle not found"):
        Bundle.load(tmp_path / "nowhere")


def test_unknown_device_is_refused(tiny_bundle_dir: Path) -> None:
    with pytest.raises(ModelError, match="device must be one of"):
        Bundle.load(tiny_bundle_dir, device="tpu")
