"""A short real training run ends at its deadline with a loadable, scored bundle."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from tm_guide.model import Bundle  # noqa: E402
from tm_guide.train.loop import run  # noqa: E402
from tm_guide.train.options import ModelShape, TrainOptions  # noqa: E402

WORDS = {
    "open": "öffnen", "the": "die", "file": "Datei", "save": "speichern", "table": "Tabelle",
    "close": "schließen", "window": "Fenster", "select": "auswählen", "text": "Text",
    "insert": "einfügen", "page": "Seite", "print": "drucken",
}  # fmt: skip


def write_pairs(path: Path, count: int, seed: int) -> None:
    rng = random.Random(seed)
    english = list(WORDS)
    lines = []
    for _ in range(count):
        sentence = rng.choices(english, k=rng.randint(2, 6))
        lines.append(" ".join(sentence) + "\t" + " ".join(WORDS[w] for w in sentence))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_run_stops_at_deadline_and_writes_bundle(tmp_path: Path) -> None:
    for name, count in (("train", 600), ("dev", 30), ("test", 30)):
        write_pairs(tmp_path / f"{name}.tsv", count, seed=len(name))
    (tmp_path / "stats.json").write_text('{"description": "numbers and words, made up"}')
    options = TrainOptions(
        train_tsv=tmp_path / "train.tsv",
        dev_tsv=tmp_path / "dev.tsv",
        test_tsv=tmp_path / "test.tsv",
        run_dir=tmp_path / "run",
        bundle_dir=tmp_path / "models" / "tiny-en-de",
        deadline=datetime.now(UTC) + timedelta(seconds=40),
        shape=ModelShape(layers=1, d_model=32, heads=2, ffn=64),
        vocab_size=60,
        batch_tokens=300,
        warmup_steps=20,
        threads=1,
        checkpoint_minutes=0.1,
        export_minutes=0,
        name="tiny-en-de",
    )
    result = run(options)
    assert result["steps"] > 0
    assert list((options.run_dir / "checkpoints").glob("step-*.pt"))
    bundle = Bundle.load(options.bundle_dir)
    assert bundle.card.add_source_eos is True
    assert bundle.card.metrics.bleu is not None and bundle.card.metrics.test_set
    assert bundle.card.training_data["steps"] == result["steps"]
    assert bundle.card.training_data["corpus"] == "numbers and words, made up"  # stats.json
    assert "warm_start" not in bundle.card.training_data
    assert set(bundle.card.files) >= {"model.bin", "source.spm", "target.spm"}
