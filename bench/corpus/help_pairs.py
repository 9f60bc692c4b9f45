"""Pair LibreOffice help paragraphs across languages through their shared paragraph ids.

Each help page exists once per language under the same relative path, and every paragraph or
heading carries an id (`par_id...`, `hd_id...`) that the translation keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import lxml.html

PARAGRAPH_ID = re.compile(r"^(par|hd)_id")
SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class PagePair:
    page: str  # relative path of the help page, e.g. text/shared/optionen/01010400.html
    pairs: list[tuple[str, str]]


def paragraphs(path: Path) -> dict[str, str]:
    """Paragraph id -> visible text of one help page (hidden platform variants dropped)."""
    tree = lxml.html.parse(str(path))
    for hidden in tree.xpath("//*[@hidden]"):
        hidden.drop_tree()
    result: dict[str, str] = {}
    seen: dict[str, int] = {}
    for element in tree.xpath("//*[@id]"):
        ident = element.get("id", "")
        if not PARAGRAPH_ID.match(ident):
            continue
        if any(PARAGRAPH_ID.match(a.get("id", "")) for a in element.iterancestors()):
            continue
        count = seen.get(ident, 0)
        seen[ident] = count + 1
        key = ident if count == 0 else f"{ident}#{count}"
        text = SPACES.sub(" ", element.text_content()).strip()
        if text:
            result[key] = text
    return result


def pair_pages(source_root: Path, target_root: Path) -> list[PagePair]:
    """All pages present in both languages, with their paragraphs paired by id (page order kept)."""
    pages = []
    for source_page in sorted(source_root.rglob("*.html")):
        relative = source_page.relative_to(source_root).as_posix()
        target_page = target_root / relative
        if not relative.startswith("text/") or not target_page.exists():
            continue
        source = paragraphs(source_page)
        target = paragraphs(target_page)
        pairs = [(text, target[key]) for key, text in source.items() if key in target]
        if pairs:
            pages.append(PagePair(relative, pairs))
    return pages
