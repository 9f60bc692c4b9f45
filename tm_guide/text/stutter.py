"""A word written twice over in a translation, written once.

Guided search rewards a piece each time it is completed, and a repair's gap is filled next to
the match's own words, so a word can come out twice in a row: "können Sie auch auch ändern",
"Speichern speichern", "dann dann dann", "das @reboot-Makro-Makro", and a compound can hold a
part twice ("Einrichtungsdialogdialog"), also joined by a linking "s" or "n"
("Übergangsübergang", "FußzeilenFußzeile"). German writes no word of four letters or more twice
over (short ones it does: "die die"), so the repeats after the first go, unless the source
repeats a word itself (a label written twice is translated twice) or, inside a word, the source
or the memory writes it so. A section number whose last part is written twice ("8.2.2.2." for
the source's "8.2.2.") is written as the source writes it, and a range whose first cell is
written twice ("C2:C2:C6") as a range, where the source does not write it so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tm_guide.text.edits import Edited, edited
from tm_guide.text.words import occurs_as_word

# a word of four letters or more, then the same word (any case) after whitespace or a hyphen
# ("Makro-Makro"), as often
_REPEATED = re.compile(r"(?<!\w)([^\W\d_]{4,})((?:(?:\s+|-)\1)+)(?!\w)", re.IGNORECASE)
_ANY_REPEAT = re.compile(r"(?<!\w)(\w+)(?:\s+|-)\1(?!\w)", re.IGNORECASE)
# five letters or more, then the same again inside a word ("Verzeichnisverzeichnis"); four
# make real words ("Anzeigeeigenschaften")
_DOUBLED = re.compile(r"([^\W\d_]{5,})(\1+)", re.IGNORECASE)
# a part of six letters or more, a linking element ("s", "n", "es", "en", "e", "er", "ens"),
# then the same part again ending the word, maybe with an ending ("Umgebungsumgebungen"); a
# shorter part makes real words ("Karteikarte", "Festplattenplatz"), and other letters between
# the two are a word of their own ("Beleuchtungsrichtung"); a hyphen may join the two
# ("Konfigurations-Konfiguration")
_LINKED = re.compile(
    r"([^\W\d_]{6,})((?:s|n|es|en|e|er|ens|ns)-?)(\1)(?=[^\W\d_]{0,3}(?!\w))", re.IGNORECASE
)
# a word of four letters or more, then after whitespace or a hyphen the same with an ending
# (of a noun, a verb or an adjective): two forms of one word ("Kopie kopieren",
# "Upload-Uploads", "soll sollen"); other tails make another word ("Haus Hausmeister", "im
# Feld Feldtyp")
_TWO_FORMS = re.compile(
    r"(?<!\w)([^\W\d_]{4,})(?:(?:\s+|-)\1)*(\s+|-)(\1)"
    r"(?=(e|n|s|en|er|es|em|et|st|te|ten|ter|tes|ren|ern|rn|ns)(?!\w))",
    re.IGNORECASE,
)
# short German words that another word starts with and may go before: "sich sicher"
_NOT_A_FORM = frozenset({"sich"})
# a word, a hyphen and another word of letters ("Seufer-Sufer"): an echo where the second is
# the first with letters left out (_is_echo)
_HYPHENED = re.compile(r"(?<![\w-])([^\W\d_]{4,})-([^\W\d_]{3,})(?![\w-])")
# a dotted number, then its own last part again ("8.2.2" + ".2"), maybe with a final dot
_NUMBER_REPEAT = re.compile(r"(?<![\w.])((?:\d+\.)+(\d+))\.(\2)\.?(?![\w.])")
# a cell reference, then the same again before the end of its range ("C2:C2:C6")
_CELL_REPEAT = re.compile(r"(?<![\w$:])(\$?[A-Z]{1,3}\$?\d+:)\1(?=\$?[A-Z]{1,3}\$?\d+(?![\w:]))")


# passes of without_stutter at most: a part written three times over across linking elements
# ("Eingabeaufforderungsaufforderungsaufforderung") needs two, as matches do not overlap
MAX_PASSES = 3


def stutter_passes(source: str, translation: str, targets: Sequence[str] = ()) -> list[Edited]:
    """without_stutter again on its own text until a pass changes nothing (at most MAX_PASSES),
    each pass's edits of the text the one before made; at least one."""
    passes = [without_stutter(source, translation, targets)]
    while passes[-1].edits and len(passes) < MAX_PASSES:
        again = without_stutter(source, passes[-1].text, targets)
        if not again.edits:
            break
        passes.append(again)
    return passes


def without_stutter(source: str, translation: str, targets: Sequence[str] = ()) -> Edited:
    """`translation` with each run of a repeated word written once (its first), where `source`
    repeats no word itself; each part of a word written twice over inside it once, where
    neither `source` nor `targets` (the TM targets that guided it) writes it so; and of two
    forms of one word in a row, the second, where no target writes them so and the source
    writes neither (a name: "apt-file list listet")."""
    edits = []
    if not _ANY_REPEAT.search(source):
        edits += [(m.start(2), m.end(2), "") for m in _REPEATED.finditer(translation)]
    for m in _DOUBLED.finditer(translation):
        if not _written(m.group(), (source, *targets)):
            edits.append((m.start(2), m.end(2), ""))
    for m in _LINKED.finditer(translation):
        if _same_word_twice(translation, m):
            continue  # "Tschüss-Tschüss": a repeated word, as the source may write it
        if not _written(m.group(), (source, *targets)):
            edits.append(_first_dropped(m))
    for m in _TWO_FORMS.finditer(translation):
        second = m.group(3) + m.group(4)
        if m.group(1).casefold() in _NOT_A_FORM or any(
            occurs_as_word(word, source) for word in (m.group(1), second)
        ):
            continue  # German's own pair, or a name of the source's ("Init-System systemd")
        if not _written(m.group(), targets):
            edits.append(_first_dropped(m))
    edits += [
        (m.end(1), m.end(), "")
        for m in _HYPHENED.finditer(translation)
        if _is_echo(m.group(1), m.group(2), m.group(), source, targets)
    ]
    edits += _numbers_once(source, translation)
    edits += [
        (m.start(), m.start() + len(m.group(1)), "")
        for m in _CELL_REPEAT.finditer(translation)
        if m.group() not in source
    ]
    return edited(translation, edits)


def _is_echo(word: str, echo: str, pair: str, source: str, targets: Sequence[str]) -> bool:
    """Whether `echo` after `word` and a hyphen is the word written again, garbled: a name the
    source writes ("Thiemo Seufer"), then the same with letters left out and its ending kept
    ("Seufer-Sufer"), where neither the source nor a target writes the pair or the echo."""
    shorter, longer = echo.casefold(), word.casefold()
    if len(shorter) >= len(longer) or shorter[-2:] != longer[-2:]:
        return False
    letters = iter(longer)
    if not all(letter in letters for letter in shorter):
        return False  # not the word with letters left out
    if not occurs_as_word(word, source) or occurs_as_word(echo, source, ignore_case=True):
        return False
    return not _written(pair, (source, *targets))


def _written(fragment: str, texts: Sequence[str]) -> bool:
    """Whether any of `texts` writes `fragment`, in any letter case, inside a word or not."""
    folded = fragment.casefold()
    return any(folded in text.casefold() for text in texts)


def _numbers_once(source: str, translation: str) -> list[tuple[int, int, str]]:
    """The edits that write a number whose last part the translation repeats as the source
    writes it, where the source holds it and not the repeat."""
    edits = []
    for m in _NUMBER_REPEAT.finditer(translation):
        number = re.escape(m.group(1))
        written = re.search(rf"(?<![\w.]){number}\.?(?![\w])", source)
        repeated = re.search(rf"(?<![\w.]){number}\.{re.escape(m.group(3))}(?!\d)", source)
        if written and not repeated:
            edits.append((m.start(), m.end(), written.group()))
    return edits


def _same_word_twice(translation: str, m: re.Match[str]) -> bool:
    """Whether a _LINKED match joined by a hyphen is one word written twice, the linking
    element only the word's own end."""
    if not m.group(2).endswith("-"):
        return False
    after = re.match(r"[^\W\d_]*", translation[m.start(3) :])
    word = m.group(1) + m.group(2)[:-1]
    return after is not None and after.group().casefold() == word.casefold()


def _first_dropped(m: re.Match[str]) -> tuple[int, int, str]:
    """The edit that drops group 1 and what follows it up to group 3, the same word or part
    again: the first of two forms ("Upload-Uploads" -> "Uploads"), or a doubled part with its
    linking element ("Übergangsübergang" -> "Übergang"); what is left takes the capital where
    the first had one ("Kopie kopieren" -> "Kopieren")."""
    first = m.group(3)[0]
    if m.group(1)[0].isupper():
        first = first.upper()
    return m.start(1), m.start(3) + 1, first
