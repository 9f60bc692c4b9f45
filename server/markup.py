"""Translating XML or HTML text (DeepL's `tag_handling`, LibreTranslate's `format=html`).

The text is translated once, whole, as the sentence it is. Its tags (and any element named in
`ignore_tags`, content included) stand in as Weblate-style markers, which the text pipeline
masks, lets the model place, and checks (tm_guide.server.pipeline); entities are decoded first
and `&`, `<` and `>` encoded again after, so that markup escaped as text (Weblate sends the
source's own tags as `&lt;b&gt;`) is translated as the text it is and comes back as escaped as
it came.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

_TAG = re.compile(r"<!--[\s\S]*?-->|<[^<>]*>")
_MARKER = re.compile(r"\[X(\d+)X\]")


def translate_markup(
    texts: Sequence[str],
    translate: Callable[[list[str]], list[str]],
    ignore_tags: Sequence[str] = (),
) -> list[str]:
    """Each text translated whole, its tags and ignored elements back where the model put
    them; `translate` gets every text in one call (one decoding batch)."""
    # numbered above any marker the texts hold, so that none is taken for one of these
    first = 1 + max((int(n) for t in texts for n in _MARKER.findall(t)), default=0)
    hidden: list[str] = []
    elements = _elements(ignore_tags)

    def hide(match: re.Match[str]) -> str:
        hidden.append(match.group())
        return f"[X{first + len(hidden) - 1}X]"

    prepared = []
    for text in texts:
        if elements is not None:
            text = elements.sub(hide, text)
        prepared.append(html.unescape(_TAG.sub(hide, text)))
    translated = translate(prepared)

    def show(match: re.Match[str]) -> str:
        index = int(match.group(1)) - first
        return hidden[index] if 0 <= index < len(hidden) else match.group()

    return [_MARKER.sub(show, html.escape(text, quote=False)) for text in translated]


def _elements(names: Sequence[str]) -> re.Pattern[str] | None:
    """An element named in `names`, from its start tag to its end tag (or self-closed)."""
    if not names:
        return None
    alternatives = "|".join(re.escape(name) for name in names)
    return re.compile(rf"<({alternatives})(?:\s[^<>]*)?(?:/>|>[\s\S]*?</\1\s*>)")
