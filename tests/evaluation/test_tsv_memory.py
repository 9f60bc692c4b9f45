"""`tm-guide eval --tm FILE.tsv --db URL`: the TM is imported and aligned into that store once,
one memory per file content, and reused by the next run."""

from __future__ import annotations

from pathlib import Path

from tm_guide.evaluation.runner import open_tm


def _write(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def test_each_tsv_gets_its_own_kept_memory(tiny_bundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    help_tm = _write(
        tmp_path / "help" / "tm.tsv",
        [("Open the file menu.", "Öffnen Sie das Menü Datei."), ("Save it.", "Speichern.")],
    )
    docs_tm = _write(tmp_path / "docs" / "tm.tsv", [("Close the window.", "Fenster schließen.")])
    db = f"sqlite:///{tmp_path / 'eval.sqlite'}"
    with open_tm(str(help_tm), db, tiny_bundle, progress=False) as (_, first):
        assert first.segment_count == 2
    with open_tm(str(docs_tm), db, tiny_bundle, progress=False) as (_, other):
        assert other.segment_count == 1 and other.name != first.name  # same file name, not content
    with open_tm(str(help_tm), db, tiny_bundle, progress=False) as (store, again):
        assert (again.name, again.revision) == (first.name, first.revision)  # reused, aligned
        assert all(s.alignment is not None for s in store.iter_segments(again))
    _write(help_tm, [("Open the file menu.", "Öffnen Sie das Menü Datei.")])
    with open_tm(str(help_tm), db, tiny_bundle, progress=False) as (_, changed):
        assert changed.name != first.name and changed.segment_count == 1
