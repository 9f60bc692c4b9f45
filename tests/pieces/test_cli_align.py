"""`tm-guide align MEMORY --model BUNDLE` on a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.cli import main
from tm_guide.config import default_index_dir
from tm_guide.pieces.align import ALIGNER_ID
from tm_guide.pieces.tokenizer import SentencePieceTokenizer
from tm_guide.records import SegmentRecord
from tm_guide.store import Store


def test_align_command_aligns_a_memory_with_the_bundle_tokenizer(  # type: ignore[no-untyped-def]
    tmp_path: Path, tiny_bundle_dir: Path, gold_pairs, capsys
) -> None:
    url = f"sqlite:///{tmp_path / 'tm.sqlite'}"
    store = Store.open(url, default_index_dir(url))
    memory = store.create_memory("ui", "en", "de")
    records = [SegmentRecord(" ".join(p.source), " ".join(p.target)) for p in gold_pairs[:40]]
    store.import_records(memory, records)
    store.close()

    assert main(["--db", url, "align", "ui", "--model", str(tiny_bundle_dir), "--quiet"]) == 0
    assert "aligned 40 segments (full)" in capsys.readouterr().out

    # The bundle's tokenizer id is the one the bare SentencePiece models give: alignments made
    # with either stay valid under the other.
    expected = SentencePieceTokenizer(
        tiny_bundle_dir / "source.spm", tiny_bundle_dir / "target.spm"
    ).tokenizer_id
    store = Store.open(url, default_index_dir(url))
    try:
        segments = list(store.iter_segments(store.get_memory("ui")))
    finally:
        store.close()
    assert {(s.tokenizer_id, s.aligner_id) for s in segments} == {(expected, ALIGNER_ID)}

    assert main(["--db", url, "align", "ui", "--model", str(tiny_bundle_dir), "--quiet"]) == 0
    assert "already aligned" in capsys.readouterr().out


def test_align_command_names_a_missing_memory(
    tmp_path: Path, tiny_bundle_dir: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'tm.sqlite'}"
    assert main(["--db", url, "align", "nope", "--model", str(tiny_bundle_dir)]) == 1
    assert "nope" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _index_beside_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TM_GUIDE_INDEX_DIR", raising=False)
