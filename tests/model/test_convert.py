"""`tm-guide model convert`: a Marian checkpoint becomes a bundle that scores like the original."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tm_guide.errors import InvalidInput, ModelError
from tm_guide.model import Bundle
from tm_guide.model.card import sha256_file
from tm_guide.model.convert import ConvertOptions, convert_checkpoint, write_bundle

# transformers' Marian tokenizer asks for an optional package the conversion does not need.
pytestmark = pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")


def _options(checkpoint: Path, output: Path, **changes: object) -> ConvertOptions:
    fields: dict[str, object] = {
        "source_format": "transformers",
        "checkpoint": checkpoint,
        "output_dir": output,
        "source_lang": "en",
        "target_lang": "de",
        "quantization": "int8",
    }
    fields.update(changes)
    return ConvertOptions(**fields)  # type: ignore[arg-type]


def test_converted_bundle_scores_like_the_transformers_model(
    tiny_marian_checkpoint: Path, tiny_bundle: Bundle
) -> None:
    """Float32 conversion keeps the model: same log-probs, so source </s> and vocab are right."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.MarianMTModel.from_pretrained(tiny_marian_checkpoint).eval()
    vocab = json.loads((tiny_marian_checkpoint / "vocab.json").read_text(encoding="utf-8"))

    source = tiny_bundle.encode_source("Select the cells and click the button.")
    target = tiny_bundle.encode_target("Wählen Sie die Zellen aus.")
    ct2 = tiny_bundle.translator.score_batch([tiny_bundle.source_input(source)], [target])[0]

    eos, pad = vocab["</s>"], vocab["<pad>"]
    src_ids = torch.tensor([[vocab[p] for p in source] + [eos]])
    tgt_ids = [vocab[p] for p in target] + [eos]
    with torch.no_grad():
        logits = model(
            input_ids=src_ids, decoder_input_ids=torch.tensor([[pad] + tgt_ids[:-1]])
        ).logits[0]
    logits[:, pad] = float("-inf")  # CTranslate2's vocabulary has no <pad> column
    expected = torch.log_softmax(logits, dim=-1)[range(len(tgt_ids)), tgt_ids].tolist()
    assert ct2.log_probs == pytest.approx(expected, abs=1e-4)


def test_int8_conversion_loads_and_translates(tiny_marian_checkpoint: Path, tmp_path: Path) -> None:
    output = convert_checkpoint(_options(tiny_marian_checkpoint, tmp_path / "int8", name="tiny8"))
    bundle = Bundle.load(output, intra_threads=1)
    assert bundle.card.quantization == "int8"
    assert bundle.card.name == "tiny8"
    assert json.loads((output / "config.json").read_text())["add_source_eos"] is False
    result = bundle.translator.translate_batch(
        [bundle.source_input(bundle.encode_source("Open the file menu."))], max_decoding_length=8
    )
    assert isinstance(bundle.decode_target(result[0].hypotheses[0]), str)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers


def test_existing_output_is_kept_without_force(
    tiny_marian_checkpoint: Path, tmp_path: Path
) -> None:
    output = tmp_path / "bundle"
    output.mkdir()
    (output / "keep.txt").write_text("mine")
    with pytest.raises(InvalidInput, match="already exists"):
        convert_checkpoint(_options(tiny_marian_checkpoint, output))
    assert (output / "keep.txt").read_text() == "mine"


def test_bad_options_are_named(tiny_marian_checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="quantization 'int4'"):
        convert_checkpoint(_options(tiny_marian_checkpoint, tmp_path / "a", quantization="int4"))
    with pytest.raises(InvalidInput, match="format 'marian-npz'"):
        convert_checkpoint(
            _options(tiny_marian_checkpoint, tmp_path / "b", source_format="marian-npz")
        )
    with pytest.raises(InvalidInput, match="target_lang 'German' is not a language tag"):
        convert_checkpoint(_options(tiny_marian_checkpoint, tmp_path / "d", target_lang="German"))
    with pytest.raises(InvalidInput, match="--source-spm"):
        convert_checkpoint(
            _options(
                tiny_marian_checkpoint / "model.safetensors",
                tmp_path / "c",
                source_format="opennmt-py",
            )
        )


def _refused(checkpoint: Path, content: bytes, source_format: str, spm: Path, message: str) -> None:
    """Converting a `source_format` checkpoint file holding `content` fails with `message` and
    leaves no output behind."""
    checkpoint.write_bytes(content)
    out = checkpoint.parent / "out"
    options = _options(checkpoint, out, source_format=source_format, source_spm=spm)
    with pytest.raises(ModelError, match=message):
        convert_checkpoint(options)
    assert not out.exists()


def test_unconvertible_checkpoint_gives_model_error(
    tiny_marian_checkpoint: Path, tmp_path: Path
) -> None:
    spm = tiny_marian_checkpoint / "source.spm"
    message = "could not convert this opennmt-py checkpoint"
    _refused(tmp_path / "model.pt", b"not a pickle", "opennmt-py", spm, message)


def _opennmt_py_checkpoint(spm_path: Path, out: Path) -> Path:
    """A random-weight OpenNMT-py (v3 layout) transformer: 1+1 layers, d_model 32.

    The target vocabulary has one token more than the source one, so they are not shared.
    """
    torch = pytest.importorskip("torch")
    import argparse

    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(spm_path))
    pieces = [
        processor.id_to_piece(i)
        for i in range(processor.get_piece_size())
        if not (processor.is_control(i) or processor.is_unknown(i))
    ]
    vocab = ["<unk>", "<blank>", "<s>", "</s>", *pieces]
    sizes = {"encoder": len(vocab), "decoder": len(vocab) + 1}
    d, ff = 32, 64
    generator = torch.Generator().manual_seed(0)

    def tensor(*shape: int) -> object:
        return torch.randn(*shape, generator=generator) * 0.1

    model: dict[str, object] = {}

    def linear(name: str, n_out: int, n_in: int) -> None:
        model[f"{name}.weight"], model[f"{name}.bias"] = tensor(n_out, n_in), tensor(n_out)

    def norm(name: str) -> None:
        model[f"{name}.weight"], model[f"{name}.bias"] = torch.ones(d), torch.zeros(d)

    def attention(name: str) -> None:
        for part in ("linear_query", "linear_keys", "linear_values", "final_linear"):
            linear(f"{name}.{part}", d, d)

    def feed_forward(name: str) -> None:
        linear(f"{name}.w_1", ff, d)
        linear(f"{name}.w_2", d, ff)
        norm(f"{name}.layer_norm")

    for side in ("encoder", "decoder"):
        model[f"{side}.embeddings.make_embedding.emb_luts.0.weight"] = tensor(sizes[side], d)
        model[f"{side}.embeddings.make_embedding.pe.pe"] = tensor(128, 1, d)
        norm(f"{side}.layer_norm")
    attention("encoder.transformer.0.self_attn")
    norm("encoder.transformer.0.layer_norm")
    feed_forward("encoder.transformer.0.feed_forward")
    attention("decoder.transformer_layers.0.self_attn")
    attention("decoder.transformer_layers.0.context_attn")
    norm("decoder.transformer_layers.0.layer_norm_1")
    norm("decoder.transformer_layers.0.layer_norm_2")
    feed_forward("decoder.transformer_layers.0.feed_forward")
    opt = argparse.Namespace(
        encoder_type="transformer",
        decoder_type="transformer",
        enc_layers=1,
        dec_layers=1,
        heads=2,
        position_encoding=True,
        max_relative_positions=0,
        pos_ffn_activation_fn="relu",
    )
    checkpoint = {
        "opt": opt,
        "vocab": {"src": vocab, "tgt": [*vocab, "▁zusätzlich"]},
        "model": model,
        "generator": {"weight": tensor(sizes["decoder"], d), "bias": tensor(sizes["decoder"])},
    }
    torch.save(checkpoint, out)
    return out


def test_opennmt_py_checkpoint_converts_with_trust(
    tiny_marian_checkpoint: Path, tmp_path: Path
) -> None:
    spm_path = tiny_marian_checkpoint / "source.spm"
    checkpoint = _opennmt_py_checkpoint(spm_path, tmp_path / "model.pt")
    options = _options(
        checkpoint,
        tmp_path / "onmt",
        source_format="opennmt-py",
        source_spm=spm_path,
        quantization="float32",
    )
    with pytest.raises(ModelError, match="--trust-checkpoint"):  # it pickles an argparse options
        convert_checkpoint(options)

    bundle = Bundle.load(convert_checkpoint(replace(options, trust_checkpoint=True)))
    assert bundle.card.architecture == "opennmt-py"
    assert bundle.card.add_source_eos is False  # OpenNMT-py sources carry no </s>
    assert bundle.vocabularies.source_file == "source_vocabulary.json"
    assert len(bundle.vocabularies.target) == len(bundle.vocabularies.source) + 1
    assert bundle.card.vocabulary["shared"] is False
    assert (bundle.path / "target.spm").read_bytes() == spm_path.read_bytes()
    source = bundle.source_input(bundle.encode_source("Save the file."))
    assert source[-1] != "</s>"
    result = bundle.translator.translate_batch([source], max_decoding_length=6)[0]
    scored = bundle.translator.score_batch([source], [result.hypotheses[0]])[0]
    assert len(scored.log_probs) == len(result.hypotheses[0]) + 1


def test_fairseq_without_fairseq_installed_says_so(
    tiny_marian_checkpoint: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("fairseq") is not None:
        pytest.skip("fairseq is installed")
    spm = tiny_marian_checkpoint / "source.spm"
    message = "converting fairseq checkpoints needs fairseq installed"
    _refused(tmp_path / "checkpoint_best.pt", b"", "fairseq", spm, message)


def test_write_bundle_moves_source_eos_from_config_to_card(
    bundle_copy: Path, tmp_path: Path
) -> None:
    """A converter that lets CTranslate2 add </s> (fairseq, native Marian) gives the same bundle."""
    ct2_dir = tmp_path / "ct2"
    ct2_dir.mkdir()
    for name in ("model.bin", "shared_vocabulary.json"):
        (ct2_dir / name).write_bytes((bundle_copy / name).read_bytes())
    config = json.loads((bundle_copy / "config.json").read_text())
    (ct2_dir / "config.json").write_text(json.dumps({**config, "add_source_eos": True}))

    fields = {"name": "eos", "source_lang": "en", "target_lang": "de", "metrics": {"bleu": 1.5}}
    path = write_bundle(ct2_dir, bundle_copy / "source.spm", bundle_copy / "target.spm", fields)
    bundle = Bundle.load(path)
    assert bundle.card.add_source_eos is True
    assert bundle.card.metrics.bleu == 1.5
    assert json.loads((path / "config.json").read_text())["add_source_eos"] is False
    assert bundle.source_input(["▁a"]) == ["▁a", "</s>"]


def test_bundle_whose_config_adds_source_eos_is_refused(bundle_copy: Path) -> None:
    config_path = bundle_copy / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "add_source_eos": True}))
    card = json.loads((bundle_copy / "model_card.json").read_text())
    card["files"]["config.json"] = sha256_file(config_path)
    (bundle_copy / "model_card.json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match=r"config\.json: add_source_eos is true"):
        Bundle.load(bundle_copy)


def test_the_cli_choices_are_the_converters() -> None:
    """The CLI offers tm_guide.model.choices without importing the converters; they must agree."""
    from tm_guide.model.choices import SOURCE_FORMATS
    from tm_guide.model.convert import SOURCES

    assert sorted(SOURCES) == sorted(SOURCE_FORMATS)
