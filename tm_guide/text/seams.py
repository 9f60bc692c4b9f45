"""Marks and hyphens that a memory-guided translation leaves at the seam of a gap, set right.

A repair writes new words between the match's kept ones, and a guided search joins pieces of
several targets, so a mark meant for what was there before can be left where nothing needs it:

* a quotation mark that opens nothing: "Das Menü „ Bearbeiten eines Datenbankfensters." where
  the match said "Das Menü Ansicht" and the source quotes nothing; it stands alone (a space
  after it), nothing closes it after it and the source holds no quotation mark, so it goes;
* a hyphen left hanging before a new noun: "Hier einige Unix-Datei- Grundzeichen:". German
  hangs a hyphen before "und", "oder" and their like ("Datei- und Ordnernamen") or a
  preposition ("vom Quer- ins Hochformat"), lower-case words all; before a noun the two are
  one compound, written with the hyphen joined ("Unix-Datei-Grundzeichen"). After a digit the
  hyphen is a range's ("Seite 5; 10- druckt"), and stays;
* a hyphen joining an inflected adjective to the kept part of a compound: "in
  kompilierte-Sprachen" where the match's "Interpreter-Sprachen" lost its first part; German
  joins no participle or adjective (-te, -ige, -ische, -liche, -ene, inflected) to a noun with
  a hyphen, so it becomes a space ("kompilierte Sprachen"), unless the source or a target
  writes the word in any case (a name: "unstable-Veröffentlichung"). An English word so
  joined is German technical writing ("nice-Prioritäten", "architecture-Wert") and stays;
* a sentence's period written before the ellipsis a kept menu name ends in: "Wählen Sie
  Einfügen – Text aus Datei.…" for "Choose Insert - Text from File." where the match wrote
  "Datei…"; the ellipsis is the name's, the period the sentence's ("Datei….", as the help's
  translations write it);
* a comma left before the sentence's period: "dessen Rest Sie berechnen möchten,." where a gap
  ended on a clause the kept period closes; the comma goes;
* a word that starts with a period, written apart in the source (".htaccess", ".deb"), glued by
  a gap to the kept word before it: "ZURÜCK ZU DEN GRUNDLAGEN.htaccess Datei" for "BACK TO
  BASICS .htaccess file"; the space comes back.

What the source or a TM target writes so is left as it is ("Ein- oder Ausblenden").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tm_guide.text.edits import Edited, edited
from tm_guide.text.words import occurs_as_word

# quotation marks that open a quote in German or English text
_QUOTES = "\"„“”«»‚‘’'"
_OPENERS = '„“«»‚"'
# an opening quotation mark with a space after it, where a word or the start is before it
_LONE_OPENER = re.compile(rf"(?:(?<=\s)|^)([{re.escape(_OPENERS)}])\s+(?=\w)")
# a word ending in a letter and a hyphen, a space, then a noun
_HANGING = re.compile(r"(?<=[^\W\d_])-[ \t]+(?=([A-ZÄÖÜ]\w*))")
# a lower-case participle or adjective, maybe inflected, a hyphen, then a noun
_ADJECTIVE_JOINED = re.compile(
    r"(?<![\w-])([a-zäöüß]{2,}(?:t|ig|isch|lich|en)e[nrsm]?)-(?=[A-ZÄÖÜ][a-zäöüß])"
)
# a period, then an ellipsis
_PERIOD_ELLIPSIS = re.compile(r"\.…")
# a comma, then the sentence's last period
_COMMA_PERIOD = re.compile(r",[ \t]*(?=\.\s*$)")
# a word that starts with a period (a dotfile, an extension), after a space or at the start
_DOT_WORD = re.compile(r"(?:(?<=\s)|^)\.[^\W_][\w.+-]*")


def set_seams(source: str, translation: str, targets: Sequence[str]) -> Edited:
    """`translation` with the marks and hyphens of its seams set right (see the module), where
    neither `source` nor `targets` write them so."""
    texts = (source, *targets)
    edits: list[tuple[int, int, str]] = []
    if not any(mark in source for mark in _QUOTES):
        for m in _LONE_OPENER.finditer(translation):
            if not any(mark in translation[m.end() :] for mark in _QUOTES):
                edits.append((m.start(), m.end(), ""))
    for m in _HANGING.finditer(translation):
        if not _written(translation, m.start(), m.end() + len(m.group(1)), texts):
            edits.append((m.start() + 1, m.end(), ""))
    for m in _ADJECTIVE_JOINED.finditer(translation):
        word = m.group(1)
        if not any(occurs_as_word(word, text, ignore_case=True) for text in texts):
            edits.append((m.end(1), m.end(), " "))
    if not any(".…" in text for text in texts):
        edits += [(m.start(), m.end(), "….") for m in _PERIOD_ELLIPSIS.finditer(translation)]
    if not any(_COMMA_PERIOD.search(text) for text in texts):
        edits += [(m.start(), m.end(), "") for m in _COMMA_PERIOD.finditer(translation)]
    for word in dict.fromkeys(m.group() for m in _DOT_WORD.finditer(source)):
        glued = re.compile(rf"(?<=[^\W_]){re.escape(word)}(?![\w.])")
        if not any(glued.search(text) for text in texts):
            edits += [(m.start(), m.start(), " ") for m in glued.finditer(translation)]
    return edited(translation, edits)


def _written(translation: str, start: int, end: int, texts: Sequence[str]) -> bool:
    """Whether one of `texts` writes the words around translation[start:end] as it does."""
    before = re.search(r"\w+$", translation[:start])
    around = (before.group() if before else "") + translation[start:end]
    return any(around in text for text in texts)
