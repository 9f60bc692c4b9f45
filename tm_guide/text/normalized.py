"""The source's characters that the tokenizer's normalizer changed, put back in a translation.

The models read and write text through SentencePiece's NFKC normalizer: "m²" reaches the
model as "m2", "…" as "...", a no-break space as a space, "™" as "TM", "ﬁ" as "fi". So the
model writes the normalized forms, and a translator must change each back by hand. Where the
source holds such a character, the translation gets it back:

- a word (split at ASCII whitespace, so that "10 km" with a no-break space is one word) that
  the normalizer changes, found as a whole word in the translation in its normalized form,
  becomes the source's word again ("m2" -> "m²", "10 km" -> "10 km" with its no-break space);
- a character that normalizes to punctuation only ("…" -> "...") becomes itself again wherever
  the translation holds that punctuation, since the target language writes it too ("Speichern
  unter..." -> "Speichern unter…");
- so does such a character of the TM targets the translation was guided by: a memory that
  writes "Speichern unter…" for "Save As..." gets "…" where the model wrote "...".

Nothing changes where the source (or, for the memory's characters, a TM target) holds the
normalized form as well: then either may be meant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from tm_guide.text.edits import Edited, edited
from tm_guide.text.words import occurs_as_word

_WORDS = re.compile(r"[^ \t\r\n]+")
# ASCII punctuation around a word, which the normalizer leaves as it is
_EDGES = "()[]{}<>\"'.,;:!?"


def restore(
    source: str,
    translation: str,
    normalize: Callable[[str], str],
    targets: Sequence[str] = (),
) -> Edited:
    """`translation` with the characters of `source` that `normalize` (the target tokenizer's
    normalizer, on plain text) changed put back, and the memory's punctuation of `targets` (the
    TM targets the translation was guided by), as the module says."""
    if not translation or (source.isascii() and all(t.isascii() for t in targets)):
        return Edited(translation)
    wanted: dict[str, str] = {}  # normalized form -> the source's
    for word in _WORDS.findall(source):
        if word.isascii():
            continue
        word = word.strip(_EDGES)
        normal = normalize(word)
        if normal != word and any(c.isalnum() for c in normal):
            wanted.setdefault(normal, word)
    edits = []
    for normal, original in wanted.items():
        if occurs_as_word(normal, source):
            continue
        pattern = r"(?<!\w)" + re.escape(normal) + r"(?!\w)"
        edits += [(m.start(), m.end(), original) for m in re.finditer(pattern, translation)]
    symbols = _symbols(source, normalize, [source])
    # the memory's own: what its targets write and never write in the normal form
    for normal, original in _symbols("".join(targets), normalize, targets).items():
        symbols.setdefault(normal, original)
    for normal, original in symbols.items():
        edits += [
            (m.start(), m.end(), original) for m in re.finditer(re.escape(normal), translation)
        ]
    return edited(translation, edits)


def _symbols(text: str, normalize: Callable[[str], str], texts: Sequence[str]) -> dict[str, str]:
    """The characters of `text` that normalize to punctuation only, by their normal form, where
    none of `texts` holds that form too (then either may be meant)."""
    symbols: dict[str, str] = {}
    for char in sorted({c for c in text if not c.isascii()}):
        normal = normalize(char)
        if not normal or normal == char or any(c.isalnum() or c.isspace() for c in normal):
            continue
        if not any(normal in one for one in texts):
            symbols.setdefault(normal, char)
    return symbols
