"""Pair the English and German DocBook handbooks of KDE applications, block by block.

KDE's handbooks are translated through gettext catalogues and written back into the English
DocBook tree, so a handbook and its German twin hold the same sections (same `id`s) with the same
text blocks in the same order. Pairing goes by section id, then by position inside a section; a
section whose block count or block kinds differ is skipped whole (the German credits chapter adds
the translators, for example). This is help text in the style a CAT tool's users write (menu
paths, dialog descriptions, step-by-step instructions), which the UI catalogues lack; it is
training data only, never an evaluation set.

Entities (`&kappname;`, `&dolphin;`, `&Ctrl;`) are expanded from each document's own DTD subset,
then kdoctools' language and general entity files, then HTML's named characters; a block that
still holds an unknown entity is dropped.
"""

from __future__ import annotations

import html.entities
import re
from collections.abc import Iterable, Iterator

from doc_pairs import keep as keep_block
from lxml import etree

DOCBOOK = re.compile(r"^\./usr/share/doc/HTML/(en|de)/(\S+\.docbook)$")
ENTITY_FILES = {
    "general": "./usr/share/kf5/kdoctools/customization/entities/general.entities",
    "en": "./usr/share/kf5/kdoctools/customization/en/user.entities",
    "de": "./usr/share/kf5/kdoctools/customization/de/user.entities",
}
KDOCTOOLS_PACKAGE = "kdoctools5"
# Debian bookworm packages holding an English or German handbook whose twin exists (found in the
# archive's Contents-all/Contents-amd64 index under usr/share/doc/HTML/{en,de}/)
PACKAGES = sorted(
    [
        "akonadi-import-wizard", "akregator", "ark", "artikulate", "blinken", "bomber", "bovo",
        "cantor", "cervisia", "choqok", "dolphin", "dragonplayer", "elisa", "filelight",
        "granatier", "gwenview", "juk", "k3b-data", "k3b-i18n", "kaddressbook", "kajongg", "kalarm",
        "kalgebra-common", "kalzium-data", "kamera", "kamoso", "kanagram", "kapman", "kapptemplate",
        "kate5-data", "katomic", "kbackup", "kbibtex-data", "kblackbox", "kblocks", "kbounce",
        "kbreakout", "kbruch", "kcachegrind", "kcalc", "kcharselect", "kde-cli-tools-data",
        "kde-config-cddb", "kde-config-cron", "kde-spectacle", "kdeconnect", "kdenlive-data",
        "kdepim-runtime", "kdepim-themeeditors", "kdesvn", "kdf", "kdiamond", "kdiff3-doc",
        "keditbookmarks", "kexi-data", "kfind", "kfloppy", "kfourinline", "kgamma5",
        "kgeography-data", "kget", "kgoldrunner", "kgpg", "khangman", "khelpcenter",
        "khotkeys-data", "kid3", "kig", "kigo", "kile-doc", "killbots", "kimagemapeditor",
        "kinfocenter", "kio", "kio-audiocd", "kio-extras-data", "kio-gdrive", "kio-gopher",
        "kiriki", "kiten", "kjumpingcube", "kleopatra", "klettres-data", "klickety", "klines",
        "kmag", "kmahjongg", "kmail", "kmenuedit", "kmines", "kmix", "kmousetool", "kmouth",
        "kmplot", "kmymoney-common", "knavalbattle", "knetwalk", "knights", "knotes", "kolf",
        "kollision", "kolourpaint", "kompare", "konqueror", "konquest", "konsole",
        "konsolekalendar", "kontact", "konversation-data", "korganizer", "kpat", "kphotoalbum",
        "krdc", "kreversi", "krfb", "kronometer", "kruler", "krusader", "kshisen", "ksirk",
        "ksnakeduel", "kspaceduel", "ksquares", "ksudoku", "ksystemlog", "kteatime", "ktimer",
        "ktimetracker", "ktorrent-data", "ktouch-data", "ktuberling-data", "kturtle", "kubrick",
        "kwalletmanager", "kwave", "kwin-data", "kwordquiz", "kwrite", "libkf5kdelibs4support-data",
        "lokalize", "lskat-data", "marble-data", "minuet-data", "okteta", "okular", "palapeli-data",
        "parley-data", "partitionmanager", "picmi", "pim-data-exporter", "pim-sieve-editor",
        "plasma-desktop-data", "plasma-pa", "plasma-workspace-data", "powerdevil-data", "rocs",
        "rsibreak", "skanlite", "skrooge-common", "step", "sweeper", "systemsettings",
        "tellico-doc", "umbrello-data",
    ]
)  # fmt: skip
DECLARATION = re.compile(r"<!ENTITY\s+([\w.-]+)\s+(?:\"([^\"]*)\"|'([^']*)')\s*>", re.S)
REFERENCE = re.compile(r"&([A-Za-z][\w.-]*);")
DOCTYPE = re.compile(r"<!DOCTYPE[^\[>]*(\[.*?\]\s*)?>", re.S)
XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}
# elements whose text is one block; their nested blocks are blocks of their own
BLOCKS = {"para", "simpara", "title", "term", "entry", "member", "glossterm", "question"}
# elements whose text is never a block (code, screens, addresses, metadata)
SKIPPED = {
    "screen", "programlisting", "literallayout", "synopsis", "cmdsynopsis", "address", "email",
    "bookinfo", "articleinfo", "info", "authorgroup", "legalnotice", "indexterm", "remark",
    "screenshot", "mediaobject", "inlinemediaobject", "keywordset", "releaseinfo", "date",
}  # fmt: skip
JOINED = {"menuchoice": " → ", "keycombo": "+"}
SECTIONS = {"chapter", "appendix", "preface", "sect1", "sect2", "section", "article"}
UNKNOWN = "\ue000"  # marks an entity nothing declares (XML text cannot hold a NUL)
PARSER = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, huge_tree=True)


def declarations(text: str) -> dict[str, str]:
    """The general entities a DTD text declares (parameter entities and SYSTEM ones are not)."""
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in
            DECLARATION.finditer(text)}  # fmt: skip


def expand(text: str, entities: dict[str, str], depth: int = 0) -> str:
    """Replace every entity reference it knows, recursively; unknown ones are left in place."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in XML_ENTITIES:
            return match.group(0)
        if name in entities and depth < 8:
            return expand(entities[name], entities, depth + 1)
        character = html.entities.html5.get(name + ";")
        return character if character is not None else match.group(0)

    return REFERENCE.sub(one, text)


def block_text(element: etree._Element) -> str:
    """An element's visible text without the text of nested blocks or skipped elements.

    Menu paths and key combinations read as KDE renders them ("File → Open...", "Ctrl+O"), the
    way a translator sees them in the help.
    """
    if element.tag in JOINED:
        items = [" ".join((element.text or "").split())]
        items += [block_text(c) for c in element if isinstance(c.tag, str) and c.tag != "shortcut"]
        text = JOINED[element.tag].join(item for item in items if item)
        shortcut = element.find("shortcut")
        return f"{text} ({block_text(shortcut)})" if shortcut is not None else text
    parts = [element.text or ""]
    for child in element:
        if isinstance(child.tag, str) and child.tag not in BLOCKS and child.tag not in SKIPPED:
            parts.append(block_text(child))
        parts.append(child.tail or "")
    return " ".join("".join(parts).split())


def section_blocks(root: etree._Element) -> dict[str, list[tuple[str, str]]]:
    """(tag, text) of the blocks of each section, keyed by the nearest section id above them."""
    found: dict[str, list[tuple[str, str]]] = {}
    for element in root.iter():
        if not isinstance(element.tag, str) or element.tag not in BLOCKS:
            continue
        if any(a.tag in SKIPPED for a in element.iterancestors() if isinstance(a.tag, str)):
            continue
        section = next(
            (a.get("id", "") for a in element.iterancestors() if a.tag in SECTIONS and a.get("id")),
            "",
        )
        found.setdefault(section, []).append((element.tag, block_text(element)))
    return found


def parse(data: bytes, entities: dict[str, str]) -> etree._Element | None:
    """The document with its entities expanded, or None when lxml recovers nothing."""
    text = data.decode("utf-8", errors="replace")
    match = DOCTYPE.search(text)
    local = declarations(match.group(1) or "") if match else {}
    body = text[match.end() :] if match else text
    body = re.sub(r"<\?xml[^>]*\?>", "", body)
    expanded = expand(body, {**entities, **local})
    # what is still an entity is unknown: mark it so the block holding it is dropped
    expanded = REFERENCE.sub(
        lambda m: m.group(0) if m.group(1) in XML_ENTITIES else UNKNOWN + m.group(1),
        expanded,
    )
    return etree.fromstring(expanded.encode("utf-8"), PARSER)


def keep(source: str, target: str) -> bool:
    """A pair the manuals would keep (doc_pairs.keep) that holds no unknown entity."""
    return UNKNOWN not in source + target and keep_block(source, target)


def pair_document(
    english: bytes, german: bytes, entities: dict[str, dict[str, str]]
) -> tuple[list[tuple[str, str]], int]:
    """The paired blocks of one handbook page, and how many sections were skipped."""
    en = parse(english, {**entities["general"], **entities["en"]})
    de = parse(german, {**entities["general"], **entities["de"]})
    if en is None or de is None:
        return [], 1
    en_sections, de_sections = section_blocks(en), section_blocks(de)
    pairs, skipped = [], 0
    for section, en_blocks in en_sections.items():
        de_blocks = de_sections.get(section)
        if de_blocks is None or [t for t, _ in en_blocks] != [t for t, _ in de_blocks]:
            skipped += 1
            continue
        for (_, source), (_, target) in zip(en_blocks, de_blocks, strict=True):
            if keep(source, target):
                pairs.append((source, target))
    return pairs, skipped


def member_path(name: str) -> str:
    """A .deb member's path as the patterns above spell it ("./usr/..."), whichever way the
    archive wrote it."""
    return name if name.startswith("./") else "./" + name


def collect(members: Iterable[tuple[str, bytes]]) -> dict[str, dict[str, bytes]]:
    """The docbook files of the given .deb members by language, keyed by their path below it."""
    found: dict[str, dict[str, bytes]] = {"en": {}, "de": {}}
    for name, data in members:
        match = DOCBOOK.match(member_path(name))
        if match:
            found[match.group(1)][match.group(2)] = data
    return found


def is_docbook(name: str) -> bool:
    return bool(DOCBOOK.match(member_path(name)))


def entity_tables(members: Iterable[tuple[str, bytes]]) -> dict[str, dict[str, str]]:
    """kdoctools' general and per-language entity tables from its package's members."""
    by_path = {path: key for key, path in ENTITY_FILES.items()}
    tables: dict[str, dict[str, str]] = {key: {} for key in ENTITY_FILES}
    for name, data in members:
        key = by_path.get(member_path(name))
        if key is not None:
            tables[key] = declarations(data.decode("utf-8", errors="replace"))
    return tables


def is_entity_file(name: str) -> bool:
    return member_path(name) in ENTITY_FILES.values()


def pair_all(
    docbooks: dict[str, dict[str, bytes]], entities: dict[str, dict[str, str]]
) -> Iterator[tuple[str, list[tuple[str, str]], int]]:
    """(handbook page, its pairs, sections skipped) for every page present in both languages."""
    for path in sorted(set(docbooks["en"]) & set(docbooks["de"])):
        pairs, skipped = pair_document(docbooks["en"][path], docbooks["de"][path], entities)
        yield path, pairs, skipped
