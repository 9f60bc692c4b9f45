"""Language tags: what a tag means, and which tags serve a request for which.

Tags arrive in every spelling a CAT tool or an MT protocol uses (`de_DE`, `EN-GB`, `zh_CN`,
`sr@latin`, `pt-br`); `normalize` turns each into its BCP 47 form. Matching compares the
language and the *script* (filled in from CLDR's likely subtags when a tag leaves it out, so `zh-TW`
is Traditional and `zh_CN` Simplified): the same tag ranks first, the same language and script in
another region next, and another script never matches (zh-Hans/zh-Hant, sr-Latn/sr-Cyrl).

The data comes from `langcodes` (CLDR likely subtags and the IANA registry), so the rule is the
registry's, not a table kept here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import langcodes

from tm_guide.errors import InvalidInput

# glibc/gettext locale modifiers that name a script
_SCRIPT_MODIFIERS = {"latin": "Latn", "cyrillic": "Cyrl", "arabic": "Arab", "devanagari": "Deva"}

# every spelling normalize() accepts: BCP 47 with - or _, a locale's .charset and @modifier
# (de_DE.UTF-8, sr@latin); a well-formed tag that names no registered language is accepted and
# matches only itself. The LanguageTag pattern of server/openapi.yaml is this one (a
# test holds it).
SPELLING = re.compile(r"[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*(\.[A-Za-z0-9-]+)?(@[A-Za-z]+)?")
# RFC 5646 (4.4.1): a tag of at most 35 characters fits every implementation; the store's columns
# hold that many
MAX_LENGTH = 35

EXACT = 0
SAME_SCRIPT = 1


@lru_cache(maxsize=4096)
def normalize(tag: str, field: str = "language") -> str:
    """The BCP 47 form of `tag` (`de_DE` -> `de-DE`, `sr@latin` -> `sr-Latn`, `EN-us` -> `en-US`).

    Raises InvalidInput naming `field` when it is not a language tag."""
    raw = tag or ""
    if len(raw) > MAX_LENGTH or not SPELLING.fullmatch(raw):
        raise InvalidInput(
            f"{tag!r} is not a language tag like en or de-DE (at most {MAX_LENGTH} characters)",
            field=field,
        )
    base, _, modifier = raw.partition("@")
    base = base.split(".", 1)[0].replace("_", "-")  # de_DE.UTF-8
    language = _parsed(base)
    if language is None:  # well-formed, but no grammar langcodes knows: it matches itself only
        return base.lower()
    script = _SCRIPT_MODIFIERS.get(modifier.lower())
    if script and not language.script:
        language = language.update_dict({"script": script})
    normalized = str(language.to_tag())
    if len(normalized) > MAX_LENGTH:
        raise InvalidInput(f"{tag!r} is longer than {MAX_LENGTH} characters", field=field)
    return normalized


def _parsed(tag: str) -> langcodes.Language | None:
    try:
        language = langcodes.Language.get(tag)
    except (langcodes.LanguageTagError, ValueError):
        return None
    return language if language.language else None


@lru_cache(maxsize=4096)
def _language_and_script(tag: str) -> tuple[str, str]:
    normalized = normalize(tag)
    language = _parsed(normalized)
    if language is None:
        return normalized, ""
    full = language.maximize()
    return str(full.language), str(full.script or "")


def primary(tag: str) -> str:
    """The language subtag alone (`de` for `de-AT`)."""
    return _language_and_script(tag)[0]


def match_rank(have: str, want: str) -> int | None:
    """EXACT when both tags mean the same, SAME_SCRIPT for the same language and script in another
    (or no) region, None when a translation for one does not serve the other."""
    try:
        if normalize(have).lower() == normalize(want).lower():
            return EXACT
        if _language_and_script(have) == _language_and_script(want):
            return SAME_SCRIPT
    except InvalidInput:
        return None
    return None


def best_match(haves: Sequence[str], want: str) -> int | None:
    """The index of the tag of `haves` that serves `want` best (an exact one before one of the
    same language and script, the first of equals); None when none serves it."""
    ranked = [
        (rank, i) for i, have in enumerate(haves) if (rank := match_rank(have, want)) is not None
    ]
    return min(ranked)[1] if ranked else None


def matches(have: str, want: str) -> bool:
    return match_rank(have, want) is not None


def pair_matches(have: tuple[str, str], want: tuple[str, str]) -> bool:
    """A (source, target) pair serves another when both sides match."""
    return matches(have[0], want[0]) and matches(have[1], want[1])


def display_name(tag: str) -> str:
    """The language's English name ("German", "Chinese (Traditional)"), for protocols that list
    languages by name; the tag itself when no name is known."""
    language = _parsed(normalize(tag))
    return str(language.display_name()) if language is not None else tag
