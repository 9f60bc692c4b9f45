"""Unguided translation of many lines (library and `tm-guide translate` / `tm-guide model`)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tm_guide.cli import main
from tm_guide.errors import InvalidInput
from tm_guide.model import Bundle
from tm_guide.model.unguided import (
    UnguidedOptions,
    _batches,
    translate_lines,
    translate_stream,
)

LINES = [
    "Choose Format - Cells and select the font.",
    "",
    "Click OK.",
    "Open the print dialog to print the selected sheet range.",
    "Insert a new row.",
]
OPTIONS = UnguidedOptions(beam_size=2, batch_size=1, max_length=10)


def test_translations_come_back_in_input_order(tiny_bundle: Bundle) -> None:
    """Lines are batched by length internally; each output still belongs to its input line."""
    together = translate_lines(tiny_bundle, LINES, OPTIONS)
    one_by_one = [translate_lines(tiny_bundle, [line], OPTIONS)[0] for line in LINES]
    assert together == one_by_one
    assert together[1] == ""
    assert all(together[i] for i in (0, 2, 3, 4))


def test_windowed_reading_gives_the_same_translations(tiny_bundle: Bundle) -> None:
    windowed = UnguidedOptions(beam_size=2, batch_size=1, max_length=10, sort_window=2)
    assert list(translate_stream(tiny_bundle, iter(LINES), windowed)) == translate_lines(
        tiny_bundle, LINES, OPTIONS
    )


def test_token_batches_give_the_same_translations(tiny_bundle: Bundle) -> None:
    by_tokens = UnguidedOptions(beam_size=2, batch_size=1, batch_type="tokens", max_length=10)
    assert translate_lines(tiny_bundle, LINES, by_tokens) == translate_lines(
        tiny_bundle, LINES, OPTIONS
    )


def test_token_batches_stay_within_the_budget() -> None:
    inputs = [["x"] * n for n in (3, 9, 4, 4, 12, 1, 40)]
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    options = UnguidedOptions(batch_size=16, batch_type="tokens")
    batches = list(_batches(order, inputs, options))
    assert [i for batch in batches for i in batch] == order
    for batch in batches:
        padded = max(len(inputs[i]) for i in batch) * len(batch)
        assert padded <= 16 or len(batch) == 1


def test_batching_keeps_every_line(tiny_bundle: Bundle) -> None:
    lines = [f"Select {n} cells in row {n}." for n in range(1, 12)]
    outputs = translate_lines(tiny_bundle, lines, UnguidedOptions(beam_size=1, batch_size=4))
    assert len(outputs) == len(lines)
    assert all(isinstance(o, str) and o for o in outputs)


def test_options_are_checked() -> None:
    with pytest.raises(InvalidInput, match="beam_size must be at least 1"):
        UnguidedOptions(beam_size=0)
    with pytest.raises(InvalidInput, match="batch_type must be one of examples, tokens"):
        UnguidedOptions(batch_type="sentences")


def test_translate_command_reads_a_file(
    tiny_bundle: Bundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    args = ["translate", str(source), "--model", str(tiny_bundle.path), "--beam-size", "2"]
    args += ["--batch-size", "1", "--max-length", "10"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == translate_lines(tiny_bundle, LINES, OPTIONS)
    output = tmp_path / "out.txt"
    assert main([*args, "--no-progress", "-o", str(output)]) == 0
    assert output.read_text(encoding="utf-8") == captured.out
    assert "translating" in captured.err  # progress bar on stderr


def test_translate_command_reads_stdin(
    tiny_bundle: Bundle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TM_GUIDE_MODEL", str(tiny_bundle.path))
    monkeypatch.setattr("sys.stdin", io.StringIO("Click OK.\nInsert a new row.\n"))
    assert main(["translate", "--no-progress", "--beam-size", "2", "--max-length", "10"]) == 0
    captured = capsys.readouterr()
    expected = translate_lines(tiny_bundle, ["Click OK.", "Insert a new row."], OPTIONS)
    assert captured.out.splitlines() == expected
    assert captured.err == ""


def test_translate_command_reports_a_broken_model(
    bundle_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (bundle_copy / "model.bin").write_bytes(b"broken")
    source = tmp_path / "in.txt"
    source.write_text("Click OK.\n", encoding="utf-8")
    assert main(["translate", str(source), "--model", str(bundle_copy)]) == 2
    assert "model.bin: checksum mismatch" in capsys.readouterr().err


def test_translate_command_reports_unreadable_input(
    tiny_bundle: Bundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Größe\n".encode("latin-1"))
    assert main(["translate", str(latin1), "--model", str(tiny_bundle.path)]) == 1
    assert f"{latin1}: not UTF-8 text" in capsys.readouterr().err
    assert main(["translate", str(tmp_path / "none.txt"), "--model", str(tiny_bundle.path)]) == 1
    assert "none.txt: cannot read" in capsys.readouterr().err


def test_model_info_prints_the_card(
    tiny_bundle: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["model", "info", "--model", str(tiny_bundle.path)]) == 0
    out = capsys.readouterr().out
    assert "en -> de" in out and "tiny-en-de" in out and tiny_bundle.tokenizer_id in out
    engine_line = next(line for line in out.splitlines() if line.startswith("guided engine"))
    assert "(float32)" in engine_line  # a float32 model runs in float32 (engine registry)
    assert "guidance       not tuned (lambda 1, eq. 10)" in out  # the fixture's card has none
    assert main(["model", "info"]) == 0  # the demo bundle: its tuned guidance
    guidance = next(line for line in capsys.readouterr().out.splitlines() if "guidance" in line)
    assert "clipped" in guidance and "power:2" in guidance
    assert main(["model", "info", "--model", str(tiny_bundle.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == tiny_bundle.card.files


def test_model_export_command_prints_the_checksum(
    tiny_bundle: Bundle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "tiny.zip"
    assert main(["model", "export", str(archive), "--model", str(tiny_bundle.path)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [(tmp_path / "tiny.zip.sha256").read_text().split()[0], str(archive)]


@pytest.mark.filterwarnings("ignore:Recommended. pip install sacremoses")
def test_model_convert_command(
    tiny_marian_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "converted"
    args = ["model", "convert", str(tiny_marian_checkpoint), str(output)]
    args += ["--source-lang", "en", "--target-lang", "de", "--quantization", "int8_float32"]
    assert main(args) == 0
    assert capsys.readouterr().out.strip() == str(output)
    assert Bundle.load(output).card.quantization == "int8_float32"
    assert main(args) == 1  # exists already: refused without --force
    assert "already exists" in capsys.readouterr().err


def test_a_multilingual_model_translates_into_the_language_asked(tmp_path) -> None:
    """`tm-guide translate --target-lang fr` with an M2M100 bundle converted for en->de: the French
    token is forced (as translate_batch's target_prefix) and never printed."""
    pytest.importorskip("transformers")
    from model_families import build_checkpoint, convert

    from tm_guide.model import Bundle
    from tm_guide.model.unguided import UnguidedOptions, translate_lines

    bundle = Bundle.load(
        convert(build_checkpoint("m2m100", tmp_path / "hf"), tmp_path / "b", "int8")
    )
    lines = ["Print the sheet and close it.", "Open the file."]
    french = translate_lines(bundle, lines, UnguidedOptions(languages=("en", "fr"), max_length=20))
    german = translate_lines(bundle, lines, UnguidedOptions(max_length=20))
    for line, text in zip(lines, french, strict=True):
        source = bundle.source_input(bundle.encode_source(line))
        assert source[0] == "__en__"
        native = bundle.translator.translate_batch(
            [source], beam_size=5, max_decoding_length=21, target_prefix=[["__fr__"]]
        )[0]
        # the text as a translator gets it (Bundle.set_right) of the native search's tokens
        assert text == bundle.set_right(line, bundle.decode_target(native.hypotheses[0]))[-1].text
        assert "__fr__" not in text
    assert french != german


def test_model_priors_writes_the_bundles_alignment_priors(
    tiny_bundle_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tm-guide model priors` counts word-alignment priors on training pairs into a bundle: the
    card vouches for the file, and the bundle still loads and now offers them."""
    import shutil

    bundle_dir = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, bundle_dir)
    corpus = tmp_path / "train.tsv"
    pairs = [
        ("Open the file.", "Öffnen Sie die Datei."),
        ("Close the file.", "Schließen Sie die Datei."),
    ]
    corpus.write_text("".join(f"{s}\t{t}\n" for s, t in pairs * 20), encoding="utf-8")
    args = ["model", "priors", str(corpus), "--model", str(bundle_dir), "--pairs", "30"]
    assert main([*args, "--min-count", "1"]) == 0
    assert "priors of 30 pairs" in capsys.readouterr().out
    bundle = Bundle.load(bundle_dir, intra_threads=1)
    assert bundle.alignment_priors_path == bundle_dir / "alignment_priors.txt"
    assert "alignment_priors.txt" in bundle.card.files
    assert bundle.alignment_priors_path.read_text(encoding="utf-8").startswith("#PAIRS\t30\n")


def test_a_line_with_no_letter_or_digit_comes_back_as_it_is(tiny_bundle: Bundle) -> None:
    """A lone pilcrow or check mark has nothing to translate (the server's layout keeps such a
    line too); the lines around it are translated as ever."""
    lines = ["¶", "Select 3 cells.", " ✓ ", "", "-- ** --"]
    outputs = translate_lines(tiny_bundle, lines, OPTIONS)
    assert outputs[0] == "¶" and outputs[2:] == [" ✓ ", "", "-- ** --"]
    assert outputs[1] == translate_lines(tiny_bundle, ["Select 3 cells."], OPTIONS)[0]
