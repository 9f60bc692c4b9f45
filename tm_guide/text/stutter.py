"""A word written twice over in a translation, written once.

Guided search rewards a piece each time it is completed, and a repair's gap is filled next to
the match's own words, so a word can come out twice in a row: "können Sie auch auch ändern",
"Speichern speichern", "dann dann dann", "das @reboot-Makro-Makro". German writes no word of
four letters or more twice over (short ones it does: "die die"), so the repeats after the first
go, unless the source repeats a word itself (a label written twice is translated twice).
"""

from __future__ import annotations

import re

from tm_guide.text.edits import Edited, edited

# a word of four letters or more, then the same word (any case) after whitespace or a hyphen
# ("Makro-Makro"), as often
_REPEATED = re.compile(r"(?<!\w)([^\W\d_]{4,})((?:(?:\s+|-)\1)+)(?!\w)", re.IGNORECASE)
_ANY_REPEAT = re.compile(r"(?<!\w)(\w+)(?:\s+|-)\1(?!\w)", re.IGNORECASE)


def without_stutter(source: str, translation: str) -> Edited:
    """`translation` with each run of a repeated word written once (its first), where `source`
    repeats no word itself."""
    if _ANY_REPEAT.search(source):
        return Edited(translation)
    return edited(
        translation, [(m.start(2), m.end(2), "") for m in _REPEATED.finditer(translation)]
    )
