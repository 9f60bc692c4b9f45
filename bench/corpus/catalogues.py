"""Read German gettext catalogues (.mo) and clean them into English-German training pairs."""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import polib

# printf (%s, %-5.2f, %1$s, %(name)s, %lld), Qt/KDE (%1), Python/ICU braces ({0}, {name})
PLACEHOLDER = re.compile(
    r"%(?:\d+\$)?(?:\([^)\s]+\))?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
    r"(?:hh|h|ll|l|L|q|j|z|t|I64)?[diouxXeEfFgGcrsaApSn@]"
    r"|%\d+|\{[\w.]*\}"
)
POSITION = re.compile(r"^%\d+\$")
ACCELERATOR = re.compile(r"(?<![\w&])[_&](?=\w)")
TAG = re.compile(r"<[^<>]{1,200}>")
SPACES = re.compile(r"\s+")
LETTER = re.compile(r"[^\W\d_]")
CREDITS = {"translator-credits", "your names", "your emails", "translator_credits"}


@dataclass(frozen=True)
class CleaningOptions:
    """Limits that decide which catalogue pairs are kept."""

    min_chars: int = 2
    max_words: int = 80
    max_chars: int = 500
    max_tags: int = 2
    max_length_ratio: float = 3.0


def placeholders(text: str) -> Counter[str]:
    """The format placeholders of a message, position markers dropped (German reorders them)."""
    return Counter(POSITION.sub("%", m.group(0)) for m in PLACEHOLDER.finditer(text))


def normalise(text: str) -> str:
    return SPACES.sub(" ", ACCELERATOR.sub("", text)).strip()


def read_mo(data: bytes) -> Iterator[tuple[str, str]]:
    """Raw (msgid, msgstr) pairs of a .mo file: plural forms included, credits skipped."""
    path = _to_path(data)
    try:
        catalogue = polib.mofile(path)
    finally:
        os.unlink(path)
    for entry in catalogue:
        context = (entry.msgctxt or "").upper()
        if not entry.msgid or entry.msgid.strip().lower() in CREDITS:
            continue
        if "NAME OF TRANSLATORS" in context or "EMAIL OF TRANSLATORS" in context:
            continue
        if entry.msgid_plural:
            forms = entry.msgstr_plural
            if forms.get(0):
                yield entry.msgid, forms[0]
            if forms.get(1):
                yield entry.msgid_plural, forms[1]
        elif entry.msgstr:
            yield entry.msgid, entry.msgstr


def _to_path(data: bytes) -> str:
    """polib reads .mo files from paths only: spill the bytes to a temporary file."""
    with tempfile.NamedTemporaryFile(suffix=".mo", delete=False) as handle:
        handle.write(data)
    return handle.name


def clean_pair(source: str, target: str, options: CleaningOptions) -> tuple[str, str] | None:
    """The cleaned pair, or None when it is noise (untranslated, broken placeholders, markup...)."""
    if placeholders(source) != placeholders(target):
        return None
    if len(TAG.findall(source)) > options.max_tags or len(TAG.findall(target)) > options.max_tags:
        return None
    source = normalise(TAG.sub(" ", source))
    target = normalise(TAG.sub(" ", target))
    if source == target or source.lower() == target.lower():
        return None
    if not LETTER.search(source) or not LETTER.search(target):
        return None
    shortest, longest = sorted((len(source), len(target)))
    if shortest < options.min_chars or longest > options.max_chars:
        return None
    if len(source.split()) > options.max_words or len(target.split()) > options.max_words:
        return None
    if longest > 12 and longest > options.max_length_ratio * shortest:
        return None
    if "\t" in source + target or "msgid" in target:
        return None
    return source, target


def clean_pairs(
    raw: Iterable[tuple[str, str]], options: CleaningOptions
) -> Iterator[tuple[str, str]]:
    for source, target in raw:
        cleaned = clean_pair(source, target, options)
        if cleaned is not None:
            yield cleaned
