"""Debian manuals paired block by block (bench/corpus/doc_pairs.py)."""

from __future__ import annotations

from pathlib import Path

from doc_pairs import Manual, blocks, pair_manual

PAGE = """<html><body><div class="navheader">Prev Next</div>
<div class="toc"><p>Table of contents</p></div>
<h2>{title}</h2><p>{first}</p><pre>apt-get install foo</pre>
<table><tr><td>{cell}</td><td>42</td></tr></table>
<h3>{sub}</h3><p>{second}</p><p>{same}</p></body></html>"""

# each block of the page: its field in PAGE, the English text and its German translation
BLOCKS = [
    ("title", "Package management", "Paketverwaltung"),
    ("first", "Use apt to install packages.", "Verwenden Sie apt, um Pakete zu installieren."),
    ("cell", "Description of the tool", "Beschreibung des Werkzeugs"),
    ("sub", "Upgrades", "Aktualisierungen"),
    ("second", "Upgrade the system regularly.", "Aktualisieren Sie das System regelmäßig."),
    ("same", "aptitude", "aptitude"),
]
EN = {field: en for field, en, _ in BLOCKS}
DE = {field: de for field, _, de in BLOCKS}
MANUAL = Manual("manual", ("en-pkg", "de-pkg"), "doc/*.en.html", "doc/{stem}.de.html")


def write(root: Path, name: str, texts: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(PAGE.format(**texts), encoding="utf-8")


def test_blocks_leave_out_code_navigation_and_contents(tmp_path: Path) -> None:
    write(tmp_path, "a.en.html", EN)
    found = blocks(tmp_path / "a.en.html")
    assert found[0] == (True, "Package management")
    texts = [text for _, text in found]
    assert "apt-get install foo" not in " ".join(texts)
    assert "Prev Next" not in texts and "Table of contents" not in texts
    assert "42" in texts  # kept as a block, dropped later as a pair without letters


def test_pages_pair_by_position_into_sections_and_shifted_pages_are_skipped(
    tmp_path: Path,
) -> None:
    roots = {"en-pkg": tmp_path / "en", "de-pkg": tmp_path / "de"}
    write(roots["en-pkg"] / "doc", "ch1.en.html", EN)
    write(roots["de-pkg"] / "doc", "ch1.de.html", DE)
    write(roots["en-pkg"] / "doc", "ch2.en.html", EN)
    write(roots["de-pkg"] / "doc", "ch2.de.html", DE | {"cell": ""})  # one block fewer
    sections, skipped = pair_manual(MANUAL, roots)
    assert skipped == ["manual/ch2.en.html"]
    assert [s.page for s in sections] == ["manual/ch1.en.html#0", "manual/ch1.en.html#1"]
    assert sections[0].pairs == [
        ("Package management", "Paketverwaltung"),
        ("Use apt to install packages.", "Verwenden Sie apt, um Pakete zu installieren."),
        ("Description of the tool", "Beschreibung des Werkzeugs"),
    ]  # "42" has no letters, "aptitude" is not translated: neither is a pair
    assert sections[1].pairs == [
        ("Upgrades", "Aktualisierungen"),
        ("Upgrade the system regularly.", "Aktualisieren Sie das System regelmäßig."),
    ]
