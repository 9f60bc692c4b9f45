"""The store commands end to end, as a shell user runs them (through `tm_guide.cli.main`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tm_guide.cli import main
from tm_guide.formats import read_tmx

TSV = (
    "Open the file\tDatei öffnen\nClose the file\tDatei schließen\nPrint the page\tSeite drucken\n"
)


@pytest.fixture
def cli(db_url: str, index_dir: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TM_GUIDE_INDEX_DIR", str(index_dir))

    def run(*args: str) -> int:
        return main(["--db", db_url, *args])

    return run


def test_create_import_search_export_round_trip(cli, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tsv = tmp_path / "ui.tsv"
    tsv.write_text(TSV, encoding="utf-8")
    assert cli("memory", "create", "ui", "en", "de") == 0
    assert cli("import", "ui", str(tsv), "--quiet") == 0
    out = capsys.readouterr().out
    assert "3 added, 0 merged" in out

    assert cli("memory", "list") == 0
    assert "ui" in capsys.readouterr().out

    assert cli("search", "-m", "ui", "Open the file") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["100%", "Open", "the", "file"]
    assert out[1].strip() == "Datei öffnen"
    # "Close the file": 1 edit in 3 words, floored as /v1/suggest and every CAT tool show it
    assert out[2].split()[0] == "66%"

    exported = tmp_path / "ui.tmx"
    assert cli("export", "ui", str(exported)) == 0
    records = list(read_tmx(exported, "en", "de"))
    assert sorted((r.source, r.target) for r in records) == sorted(
        tuple(line.split("\t")) for line in TSV.splitlines()
    )
    assert cli("memory", "create", "copy", "en", "de") == 0
    assert cli("import", "copy", str(exported), "-q") == 0
    assert cli("stats", "copy") == 0
    assert "copy" in capsys.readouterr().out


def test_reimport_merges_and_stats_count_usage(cli, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tsv = tmp_path / "ui.tsv"
    tsv.write_text(TSV, encoding="utf-8")
    assert cli("import", "ui", str(tsv), "-q", "--create", "en", "de") == 0
    assert cli("import", "ui", str(tsv), "-q") == 0
    assert "0 added, 3 merged" in capsys.readouterr().out
    assert cli("stats") == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("ui")][0]
    assert line.split()[4:6] == ["3", "0"]  # 3 segments, 0 analysed


def test_malformed_file_fails_with_location_and_stores_nothing(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, capsys
) -> None:
    bad = tmp_path / "bad.tmx"
    bad.write_text(
        '<?xml version="1.0"?>\n<tmx version="1.4"><header srclang="en"/><body>\n'
        '<tu><tuv xml:lang="en"><seg>Hello</seg></tuv>'
        '<tuv xml:lang="de"><seg>Hallo</seg></tuv></tu>\n'
        "<tu><tuv xml:lang='en'><seg>Broken</tuv></tu>\n</body></tmx>\n",
        encoding="utf-8",
    )
    assert cli("memory", "create", "ui", "en", "de") == 0
    assert cli("import", "ui", str(bad), "-q") == 1
    err = capsys.readouterr().err
    assert "bad.tmx:4" in err and err.startswith("tm-guide: error:")
    assert cli("memory", "show", "ui") == 0
    assert "segments:    0" in capsys.readouterr().out


def test_errors_a_shell_user_sees(cli, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert cli("import", "nope", str(tmp_path / "x.tsv")) == 1
    assert "no memory named 'nope'" in capsys.readouterr().err
    assert cli("memory", "create", "ui", "en", "de") == 0
    assert cli("memory", "create", "ui", "en", "de") == 1
    assert "already exists" in capsys.readouterr().err
    assert cli("import", "ui", str(tmp_path / "file.xlsx")) == 1
    assert "unknown file type" in capsys.readouterr().err
    assert cli("search", "-m", "ui", "anything") == 1  # nothing found
    assert cli("memory", "delete", "ui") == 0
    assert cli("memory", "delete", "ui") == 1


def test_index_check_and_rebuild(cli, tmp_path: Path, index_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import shutil

    tsv = tmp_path / "ui.tsv"
    tsv.write_text(TSV, encoding="utf-8")
    assert cli("import", "ui", str(tsv), "-q", "--create", "en", "de") == 0
    assert cli("index", "check") == 0
    shutil.rmtree(index_dir)
    assert cli("index", "check") == 1
    assert "missing: STALE" in capsys.readouterr().out
    assert cli("index", "rebuild", "-q") == 0
    assert cli("index", "check") == 0
    assert cli("search", "-m", "ui", "Print the page") == 0


def test_a_catalogue_through_the_tm_and_tmx_comes_back_as_a_po_msgfmt_accepts(
    cli, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """PO into a memory, TMX out and into another memory (the plural entry's props ride along as
    <prop>s), PO out of that: the six Arabic forms are whole and `msgfmt -c` accepts it."""
    import shutil
    import subprocess

    import polib

    catalogue = Path(__file__).parents[1] / "formats" / "data" / "ar.po"
    assert cli("memory", "create", "ar", "en", "ar") == 0
    assert cli("import", "ar", str(catalogue), "--quiet") == 0
    assert cli("export", "ar", str(tmp_path / "ar.tmx")) == 0
    assert cli("memory", "create", "ar2", "en", "ar") == 0
    assert cli("import", "ar2", str(tmp_path / "ar.tmx"), "--quiet") == 0
    assert cli("export", "ar2", str(tmp_path / "ar.po")) == 0
    assert "exported 5 entries" in capsys.readouterr().out
    [plural] = [e for e in polib.pofile(str(tmp_path / "ar.po")) if e.msgid_plural]
    assert len(plural.msgstr_plural) == 6 and plural.msgstr_plural[5] == "%d بايت"
    if shutil.which("msgfmt"):
        done = subprocess.run(
            ["msgfmt", "-c", "-o", str(tmp_path / "ar.mo"), str(tmp_path / "ar.po")],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr


def test_a_key_scoped_to_a_missing_memory_is_created_with_a_warning(cli, capsys) -> None:  # type: ignore[no-untyped-def]
    assert cli("memory", "create", "help", "en", "de") == 0
    capsys.readouterr()
    assert cli("keys", "create", "weblate", "--scope", "help:read", "--scope", "*:read") == 0
    assert "warning" not in capsys.readouterr().err
    assert cli("keys", "create", "typo", "--scope", "hepl:read") == 0
    captured = capsys.readouterr()
    assert captured.out.strip().startswith("tmg_")  # the key is made: the memory may come later
    assert "no memory named 'hepl'" in captured.err
