"""Translating text that holds markup (HTML, or the XML placeholders Weblate sends DeepL).

The model translates plain text, so a text with tags is cut at its tags: each run of text between
tags is translated on its own and the tags stay exactly where they were, in their order. Entities
in a run are decoded before translation and the characters `<`, `>` and `&` encoded after, so what
comes back is as well-formed as what was sent. Runs with no letter or digit (spaces, punctuation
between two tags) are kept as they are.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

_TAG = re.compile(r"<!--[\s\S]*?-->|<[^<>]*>")
_WORDLIKE = re.compile(r"\w", re.UNICODE)


def split(text: str) -> list[tuple[bool, str]]:
    """(is_text, piece) in order; the pieces joined give `text` back."""
    parts: list[tuple[bool, str]] = []
    position = 0
    for tag in _TAG.finditer(text):
        if tag.start() > position:
            parts.append((True, text[position : tag.start()]))
        parts.append((False, tag.group()))
        position = tag.end()
    if position < len(text):
        parts.append((True, text[position:]))
    return parts


def translate_marked_up(
    texts: Sequence[str], translate: Callable[[list[str]], list[str]]
) -> list[str]:
    """Each text with its runs between tags translated; `translate` gets every run of every text
    in one call (one decoding batch) and returns one translation per run."""
    layouts = [split(text) for text in texts]
    runs: list[str] = []
    for layout in layouts:
        for is_text, piece in layout:
            if _is_words(is_text, piece):
                runs.append(html.unescape(piece).strip())
    translated = iter(translate(runs) if runs else [])
    out = []
    for layout in layouts:
        pieces = []
        for is_text, piece in layout:
            if _is_words(is_text, piece):
                lead = piece[: len(piece) - len(piece.lstrip())]
                trail = piece[len(piece.rstrip()) :]
                pieces.append(lead + html.escape(next(translated), quote=False) + trail)
            else:
                pieces.append(piece)
        out.append("".join(pieces))
    return out


def _is_words(is_text: bool, piece: str) -> bool:
    return is_text and bool(_WORDLIKE.search(html.unescape(piece)))
