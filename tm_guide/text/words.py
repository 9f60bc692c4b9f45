"""Whether a text writes a word as a word of its own, not as part of a longer one.

The rules that set a translation right leave what the source or the memory writes: a symbol the
source holds ("m²"), a name it writes ("systemd" after "Init-System"). Each asks the same
question of a text, so it is asked here.
"""

from __future__ import annotations

import re


def occurs_as_word(word: str, text: str, ignore_case: bool = False) -> bool:
    """Whether `text` holds `word` with no letter, digit or underscore right before or after
    it (in any letter case with `ignore_case`)."""
    flags = re.IGNORECASE if ignore_case else 0
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags) is not None
