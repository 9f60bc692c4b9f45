"""Language tokens of multilingual models: which vocabulary token names which language.

M2M100 (`__de__`), NLLB (`deu_Latn`) and mBART-50 (`de_DE`) read the source language from a
token before the source and write the target language as the first output token, forced as
`target_prefix`. The converter finds them in the model's vocabulary by each family's token shape
and records them in the card (`language_tokens`: token -> language tag); `Bundle` then puts the
tokens around every input and output, so no caller spells a family's convention.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tm_guide import languages
from tm_guide.errors import InvalidInput

# architecture -> the shape of its language tokens, and the tag a match spells
_SHAPES: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "M2M100ForConditionalGeneration": [
        (re.compile(r"^__([a-z]{2,3})__$"), r"\1"),  # M2M100: __de__
        (re.compile(r"^([a-z]{3})_([A-Z][a-z]{3})$"), r"\1-\2"),  # NLLB: deu_Latn
    ],
    "MBartForConditionalGeneration": [
        (re.compile(r"^([a-z]{2})_([A-Z]{2})$"), r"\1-\2"),  # mBART-50: de_DE, pt_XX
    ],
}


def find_language_tokens(architecture: str, vocabulary: Iterable[str]) -> dict[str, str]:
    """token -> normalised language tag, for the tokens of `vocabulary` shaped as the
    architecture's language tokens; {} for a model without them (Marian, BART)."""
    found: dict[str, str] = {}
    for token in vocabulary:
        for pattern, spelling in _SHAPES.get(architecture, []):
            if pattern.match(token):
                try:
                    found[token] = languages.normalize(pattern.sub(spelling, token))
                except InvalidInput:
                    continue
                break
    return found


def token_for(tokens: Mapping[str, str], tag: str, field: str = "target_lang") -> str:
    """The model's token for language `tag`: the exact tag, else the same language and script
    (de-AT finds de_DE). InvalidInput naming the field when the model has none."""
    names = sorted(tokens)
    best = languages.best_match([tokens[name] for name in names], tag)
    if best is None:
        raise InvalidInput(
            f"the model has no language token for {tag!r} "
            f"(it knows {len(tokens)} languages, e.g. {', '.join(names[:5])})",
            field=field,
        )
    return names[best]
