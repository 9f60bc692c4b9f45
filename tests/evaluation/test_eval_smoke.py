"""A whole `tm-guide eval` run on the tiny random-weight bundle and a few-segment TM.

The model's output is meaningless; what is checked is what a user of the report relies on: every
file is written, the Markdown shows the JSON's numbers, the best-match baseline and similarity
behave on a sentence that is in the TM, and the signature names the model and the TM state.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tm_guide.cli import main

# Minutes on the shared 2-core machine (exact guided search with the ct2 engine, eflomal alignment).
pytestmark = pytest.mark.slow

TM_PAIRS = [
    ("Click the menu file.", "Klicken das menü datei."),
    ("Open the window dialog.", "Öffnen das fenster dialog."),
    ("Select the table cell.", "Auswählen das tabelle zelle."),
    ("Insert a new page.", "Einfügen neu seite."),
    ("Print the document.", "Drucken das dokument."),
    ("Save the spreadsheet.", "Speichern das spreadsheet."),
]
TEST_PAIRS = [
    ("Click the menu file.", "Klicken das menü datei."),  # identical to a TM source
    ("Open the table dialog.", "Öffnen das tabelle dialog."),
    ("Print the new page.", "Drucken neu seite."),
]


def _tsv(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def report(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("matplotlib")
    tmp = tmp_path_factory.mktemp("eval")
    out = tmp / "report"
    code = main(
        [
            "eval",
            "--test",
            str(_tsv(tmp / "test.tsv", TEST_PAIRS)),
            "--dev",
            str(_tsv(tmp / "dev.tsv", TEST_PAIRS[1:])),
            "--tm",
            str(_tsv(tmp / "tm.tsv", TM_PAIRS)),
            "--model",
            str(tiny_bundle_dir),
            "--output",
            str(out),
            "--lambdas",
            "0.5,1",
            "--m-values",
            "1,2",
            "--m",
            "2",
            "--engines",
            "ct2",
            "--beam-size",
            "2",
            "--timing-limit",
            "0",
            "--bootstrap-samples",
            "50",
            "--threads",
            "1",
            "--quiet",
        ]
    )
    assert code == 0
    return out


def test_report_files_are_written(report: Path):
    for name in (
        "README.md",
        "results.json",
        "fig4_pieces_time_vs_m.png",
        "fig5_decoding_time_vs_m.png",
        "fig6_bleu_vs_m.png",
        "similarity_histogram.png",
        "dev_lambda.png",
    ):
        assert (report / name).stat().st_size > 0, name


def test_markdown_shows_the_json_numbers(report: Path):
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))
    markdown = (report / "README.md").read_text(encoding="utf-8")
    for key in ("unguided", "guided", "binary_reward", "best_match"):
        assert f"{results['test'][key]['bleu']:.2f}" in markdown
    assert results["best_lambda"] in (0.5, 1.0)
    assert [row["m"] for row in results["m_sweep"]] == [1, 2]
    assert len(results["count_gamma"]["guided"]) == len(results["count_gamma"]["gammas"]) == 8
    for key in ("unguided", "guided", "best_match"):
        assert 0 <= results["test"][key]["repeated_outputs"] <= results["test"][key]["sentences"]
    assert "repeated outputs" in markdown


def test_sentence_found_in_the_tm_gets_its_target_as_best_match(report: Path):
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))
    first = results["sentences"][0]
    assert first["similarity"] == pytest.approx(1.0)
    assert first["best_match"] == TM_PAIRS[0][1]
    assert all(0.0 <= row["similarity"] <= 1.0 for row in results["sentences"])
    assert results["similarity"]["high"] >= results["similarity"]["low"]


def test_signature_names_model_tm_and_metric_settings(report: Path):
    signature = json.loads((report / "results.json").read_text(encoding="utf-8"))["signature"]
    assert signature["model"]["name"] == "tiny-en-de"
    assert len(signature["model"]["checksum"]) == 64
    assert signature["tm"]["segments"] == len(TM_PAIRS)
    assert signature["tm"]["revision"] >= 1
    assert "tok:13a" in signature["sacrebleu"]["bleu"]
    assert signature["packages"]["sacrebleu"]
    text = (report / "README.md").read_text(encoding="utf-8")
    assert "1 engine thread (CTranslate2 and PyTorch alike)" in text
