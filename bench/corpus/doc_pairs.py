"""Pair the English and German HTML of Debian manuals translated from PO files paragraph by
paragraph: the second domain (MANUALS: Debian Reference, the Developer's Reference, the Debian
FAQ) and the third (GUIDES: the Debian Administrator's Handbook, the Installation Guide, the
Securing Debian Manual, the New Maintainers' Guide, APT's guides, the Debian history).

po4a and Publican write each translated manual from the same source tree, so a page and its
translation hold the same text blocks in the same order (paragraphs, headings, table cells,
terms); a page whose block counts differ is skipped whole rather than risk shifted pairs. Code
listings (`pre`), tables of contents and navigation are left out. Blocks are grouped into
sections, each starting at a heading, and the sections are what the benchmark split shuffles, as
the LibreOffice help split shuffles pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import lxml.html

BLOCKS = "//p|//h1|//h2|//h3|//h4|//h5|//td|//th|//dt"
# Publican (the Handbook, the Securing Debian Manual) writes paragraphs as div.para
PUBLICAN_BLOCKS = BLOCKS + "|//div[@class='para']"
DROPPED = (
    "//pre|//script|//style|//div[contains(@class,'toc')]|//div[contains(@class,'navheader')]"
    "|//div[contains(@class,'navfooter')]|//div[@role='navigation']|//div[@role='search']"
    "|//div[contains(@class,'sphinxsidebar')]|//div[contains(@class,'related')]"
    "|//div[contains(@class,'footer')]"
)
HEADING = re.compile(r"^h[1-5]$")
LETTER = re.compile(r"[^\W\d_]")
MAX_WORDS = 80
UTF8 = lxml.html.HTMLParser(encoding="utf-8")  # every manual is UTF-8, not all say so


@dataclass
class PagePair:
    page: str  # manual/page#section
    pairs: list[tuple[str, str]]


@dataclass(frozen=True)
class Manual:
    """Where one manual's English and German pages lie inside the unpacked packages."""

    name: str
    packages: tuple[str, str]  # English, German
    english: str  # glob under the English package's root
    german: str  # the German page for an English page name: "{stem}" is filled in
    block_path: str = BLOCKS  # the XPath of the text blocks paired

    def pages(self, roots: dict[str, Path]) -> list[tuple[Path, Path]]:
        found = []
        for english in sorted(roots[self.packages[0]].glob(self.english)):
            stem = english.name.removesuffix(".en.html").removesuffix(".html")
            german = roots[self.packages[1]] / self.german.format(stem=stem)
            if german.is_file():
                found.append((english, german))
        return found


MANUALS = (
    Manual(
        "debian-reference",
        ("debian-reference-en", "debian-reference-de"),
        "usr/share/debian-reference/*.en.html",
        "usr/share/debian-reference/{stem}.de.html",
    ),
    Manual(
        "developers-reference",
        ("developers-reference", "developers-reference-de"),
        "usr/share/developers-reference/*.html",
        "usr/share/developers-reference/de/{stem}.html",
    ),
    Manual(
        "debian-faq",
        ("debian-faq", "debian-faq-de"),
        "usr/share/doc/debian/FAQ/*.en.html",
        "usr/share/doc/debian/FAQ/de/{stem}.de.html",
    ),
)
PACKAGES = [package for manual in MANUALS for package in manual.packages]

_HANDBOOK = "usr/share/doc/debian-handbook/html/"
_INSTALL = "usr/share/doc/installation-guide-amd64/"
_HARDEN = "usr/share/doc/harden-doc/html/"
_APT = "usr/share/doc/apt-doc/"
GUIDES = (
    Manual(
        "debian-handbook",
        ("debian-handbook", "debian-handbook"),
        _HANDBOOK + "en-US/*.html",
        _HANDBOOK + "de-DE/{stem}.html",
        PUBLICAN_BLOCKS,
    ),
    Manual(
        "installation-guide",
        ("installation-guide-amd64", "installation-guide-amd64"),
        _INSTALL + "en/*.html",
        _INSTALL + "de/{stem}.html",
    ),
    Manual(
        "harden-doc",
        ("harden-doc", "harden-doc"),
        _HARDEN + "en-US/*.html",
        _HARDEN + "de-DE/{stem}.html",
        PUBLICAN_BLOCKS,
    ),
    Manual(
        "maint-guide",
        ("maint-guide", "maint-guide-de"),
        "usr/share/doc/maint-guide/html/*.en.html",
        "usr/share/doc/maint-guide-de/html/{stem}.de.html",
    ),
    Manual(
        "apt-guide",
        ("apt-doc", "apt-doc"),
        _APT + "guide.html/*.html",
        _APT + "guide.de.html/{stem}.html",
    ),
    Manual(
        "apt-offline",
        ("apt-doc", "apt-doc"),
        _APT + "offline.html/*.html",
        _APT + "offline.de.html/{stem}.html",
    ),
    Manual(
        "debian-history",
        ("debian-history", "debian-history"),
        "usr/share/doc/debian-history/docs/*.en.html",
        "usr/share/doc/debian-history/docs/{stem}.de.html",
    ),
)
GUIDE_PACKAGES = sorted({package for manual in GUIDES for package in manual.packages})


def blocks(path: Path, block_path: str = BLOCKS) -> list[tuple[bool, str]]:
    """(is a heading, visible text) of each text block of a page, in document order."""
    root = lxml.html.parse(str(path), parser=UTF8).getroot()
    for dropped in root.xpath(DROPPED):
        dropped.drop_tree()
    found = []
    for element in root.xpath(block_path):
        text = " ".join(element.text_content().split())
        if text:
            found.append((bool(HEADING.match(element.tag)), text))
    return found


def keep(source: str, target: str) -> bool:
    """A pair worth a TM or test entry: translated, with letters, of sentence-like length."""
    return (
        source != target
        and bool(LETTER.search(source))
        and len(source.split()) <= MAX_WORDS
        and len(target.split()) <= MAX_WORDS * 2
    )


def pair_manual(manual: Manual, roots: dict[str, Path]) -> tuple[list[PagePair], list[str]]:
    """Sections of paired blocks, and the pages skipped because their block counts differ."""
    sections: list[PagePair] = []
    skipped = []
    for english, german in manual.pages(roots):
        en, de = blocks(english, manual.block_path), blocks(german, manual.block_path)
        if len(en) != len(de) or any(a[0] != b[0] for a, b in zip(en, de, strict=True)):
            skipped.append(f"{manual.name}/{english.name}")
            continue
        number = 0
        current = PagePair(f"{manual.name}/{english.name}#0", [])
        for (heading, source), (_, target) in zip(en, de, strict=True):
            if heading and current.pairs:
                sections.append(current)
                number += 1
                current = PagePair(f"{manual.name}/{english.name}#{number}", [])
            if keep(source, target):
                current.pairs.append((source, target))
        if current.pairs:
            sections.append(current)
    return sections, skipped
