"""LibreOffice help pairing by paragraph id, the page split, and eq. 9 match statistics."""

from __future__ import annotations

from pathlib import Path

from build import SplitOptions, split_pages
from help_pairs import PagePair, pair_pages, paragraphs
from similarity import best_match_similarities, shares, similarity, words

PAGE = """<!DOCTYPE html><html><body><div id="DisplayArea">
<h1 id="hd_id1" dir="auto">{title}</h1>
<p id="par_id2" class="paragraph">Choose <span class="switchinline">
<span hidden="true" class="MAC">{mac}</span><span class="default">{menu}</span></span>.</p>
<p id="par_id3">{extra}</p>
<table><tr><td><p id="par_id4">  {cell}
  text </p></td></tr></table>
</div></body></html>"""


def write_page(root: Path, relative: str, **texts: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PAGE.format(**texts), encoding="utf-8")


def test_paragraphs_drop_hidden_variants_and_normalise_space(tmp_path: Path) -> None:
    write_page(
        tmp_path, "text/a.html", title="Title", mac="Mac menu", menu="Tools", extra="", cell="Cell"
    )
    found = paragraphs(tmp_path / "text/a.html")
    assert found == {"hd_id1": "Title", "par_id2": "Choose Tools.", "par_id4": "Cell text"}


def test_pages_pair_through_shared_ids(tmp_path: Path) -> None:
    en, de = tmp_path / "en-US", tmp_path / "de"
    write_page(en, "text/a.html", title="Title", mac="M", menu="Tools", extra="Only en", cell="C")
    write_page(de, "text/a.html", title="Titel", mac="M", menu="Extras", extra="", cell="Z")
    write_page(en, "text/only_en.html", title="T", mac="M", menu="X", extra="", cell="C")
    pages = pair_pages(en, de)
    assert [p.page for p in pages] == ["text/a.html"]
    assert pages[0].pairs == [
        ("Title", "Titel"),
        ("Choose Tools.", "Choose Extras."),
        ("C text", "Z text"),
    ]


def make_pages(count: int) -> list[PagePair]:
    return [
        PagePair(
            f"text/{i}.html",
            [(f"Shared sentence {i % 3}", f"Gemeinsamer Satz {i % 3}"), (f"Own {i}", f"Eigen {i}")],
        )
        for i in range(count)
    ]


def test_split_is_by_page_seeded_and_keeps_test_and_dev_apart() -> None:
    pages = make_pages(200)
    split = split_pages(pages, SplitOptions(seed=5))
    assert split == split_pages(pages, SplitOptions(seed=5))
    assert split.pages == {"test": 10, "dev": 5, "tm": 185}
    test_sources = [s for s, _ in split.test]
    assert len(test_sources) == len(set(test_sources))
    assert not {s for s, _ in split.dev} & set(test_sources)
    own_test = {s for s in test_sources if s.startswith("Own")}
    own_tm = {s for s, _ in split.tm if s.startswith("Own")}
    assert len(own_test) == 10 and not own_test & own_tm  # whole pages, never split
    assert split_pages(pages, SplitOptions(seed=6)).test != split.test


def test_eq9_similarity_on_words() -> None:
    assert similarity(words("Click the OK button."), words("Click the OK button.")) == 1.0
    assert similarity(["a", "b", "c", "d"], ["a", "x", "c", "d"]) == 0.75
    assert similarity(["a", "b"], ["a", "b", "c", "d"]) == 0.5


def test_best_match_and_shares() -> None:
    memory = ["Click the OK button.", "Select a cell range in the sheet.", "Print the document."]
    best = best_match_similarities(
        ["Click the OK button.", "Select a cell range in the table.", "Unrelated words here"],
        memory,
    )
    assert best[0] == 1.0
    assert best[1] == 1 - 1 / 8
    assert best[2] < 0.5
    assert shares(best) == {">=0.5": 2 / 3, ">=0.7": 2 / 3, ">=0.9": 1 / 3}
