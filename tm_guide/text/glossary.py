"""Glossary entries found in a sentence: which target terms its translation must hold.

A glossary (a DeepL glossary, a ModernMT glossary, a memory a request names as one) maps source
terms to target terms. An entry applies where its source term occurs in the sentence as whole
words, in any letter case; longer terms win over the shorter ones they contain ("file manager"
over "file"), and an entry applies once however often its term occurs. The target term must
then appear in the translation as the glossary writes it (letter case aside, for a term that
opens the sentence), as words of its own or at either end of a longer word: German compounds
hold terms so ("ORDER-BY-Spalte"), which also lets an ending follow the term ("Akten" holds
"Akte", "Fehlersuchinformationen" holds "Information"), but never a form that changes the
term's own letters. An entry may say that its term does not inflect (`Term.inflects`: a name, a
product, a UI label quoted as it is): then no ending may follow it. Entries inflect unless they
say so, as DeepL applies its glossaries, whose entries have no place to say it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tm_guide.text.placeholders import PROTECTED


@dataclass(frozen=True)
class Term:
    """A glossary entry; `inflects`: whether its target may take an ending (see `applied`)."""

    source: str
    target: str
    inflects: bool = True


class Glossary:
    """Entries of one or more glossaries, looked up by the words of their source terms."""

    def __init__(self, entries: Iterable[tuple[str, str] | Term]) -> None:
        self.entries = [e if isinstance(e, Term) else Term(*e) for e in entries]
        by_first: dict[str, list[tuple[tuple[str, ...], Term]]] = {}
        for entry in self.entries:
            words = tuple(_words(entry.source))
            if words and entry.target.strip():
                term = Term(entry.source, entry.target.strip(), entry.inflects)
                by_first.setdefault(words[0], []).append((words, term))
        for candidates in by_first.values():  # longest first: "file manager" before "file"
            candidates.sort(key=lambda item: -len(item[0]))
        self._by_first = by_first

    def __bool__(self) -> bool:
        return bool(self._by_first)

    def terms_in(self, sentence: str) -> list[Term]:
        """The entries whose source term occurs in the prose of `sentence` (see `prose`), in
        order of occurrence."""
        words = _words(prose(sentence))
        found: list[Term] = []
        i = 0
        while i < len(words):
            for term_words, term in self._by_first.get(words[i], ()):
                if tuple(words[i : i + len(term_words)]) == term_words:
                    if term not in found:
                        found.append(term)
                    i += len(term_words)
                    break
            else:
                i += 1
        return found


# Words that are code, not prose, in software strings: options (--list, -v, [--all]), dotted
# names and file extensions (.changes, .git/objects), identifiers (snake_case, a=b, a/b), words in
# capitals (SQL keywords, constants, metavariables: COPY, TRUE, SIZE) and a quoted word in small
# letters (a literal: type "numeric", value 'auto'; a quoted label is capitalised: "Save").
_CODE = re.compile(
    r"(?<![\w-])--?\w[\w-]*|[\w.]*\.\w[\w./-]*|\w*[_/=]\w[\w/=.-]*|\b[A-Z][A-Z0-9]+\b"
    r"|(?<=[\"'`])[a-z][\w-]*(?=[\"'`])"
)


def code_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a non-translatable (tm_guide.text.placeholders) or a word of code."""
    return [m.span() for pattern in (PROTECTED, _CODE) for m in pattern.finditer(text)]


def prose(text: str) -> str:
    """`text` with its non-translatables and words of code blanked out: a glossary applies to
    what a translator translates, and "<file>", "--list" or "COPY" stay as they are."""
    chars = list(text)
    for start, end in code_spans(text):
        chars[start:end] = " " * (end - start)
    return "".join(chars)


# The endings German puts on a noun that closes a compound ("Fehlersuchinformationen" holds
# "Information"); a word of at least three letters must come before the term, so that a prefix
# and an ending ("bewerten") do not make a verb hold a noun ("Wert").
_ENDINGS = "e|en|n|s|es|er|ern|nen"
_COMPOUND_HEAD = r"\w{3}"


def applied(term: Term, translation: str) -> bool:
    """Whether `translation` holds the term's target as written: as words of their own, or
    opening or closing a compound (German writes "column" in "ORDER-BY-Spalte" and "element type"
    as "Elementtyp"), an ending after it allowed. A term that does not inflect (a name, a
    product) must stand as words of its own or close a compound: opening a word, it could not be
    told from the term with an ending ("LibreOffices")."""
    target = re.escape(term.target)
    if not term.inflects:
        return re.search(rf"{target}(?!\w)", translation, flags=re.IGNORECASE) is not None
    pattern = (
        rf"(?<!\w){target}|{target}(?!\w)"
        rf"|(?<={_COMPOUND_HEAD}){target}(?:{_ENDINGS})(?!\w)"
    )
    return re.search(pattern, translation, flags=re.IGNORECASE) is not None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def all_applied(terms: Sequence[Term], translation: str) -> bool:
    return all(applied(term, translation) for term in terms)
