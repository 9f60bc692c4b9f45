"""Training data is read by the one TSV rule of tm_guide.formats."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tm_guide.errors import ImportFormatError
from tm_guide.train.loop import read_pairs
from tm_guide.train.options import TrainOptions


def test_training_pairs_follow_the_tsv_rule_of_the_importers(tmp_path: Path) -> None:
    path = tmp_path / "train.tsv"
    path.write_text("en\tde\nOpen the file.\tÖffnen Sie die Datei.\n\nSave\t \nClose\tSchließen\n")
    options = TrainOptions(
        train_tsv=path,
        dev_tsv=path,
        test_tsv=path,
        run_dir=tmp_path / "run",
        bundle_dir=tmp_path / "bundle",
        deadline=datetime.now(UTC),
    )
    assert read_pairs(path, options) == [
        ("Open the file.", "Öffnen Sie die Datei."),
        ("Close", "Schließen"),
    ]
    path.write_text("a\tb\nc\td\te\n")
    with pytest.raises(ImportFormatError, match="train.tsv:2"):
        read_pairs(path, options)
