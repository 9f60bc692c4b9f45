"""Where a glossary's term goes into a translation (tm_guide.server.glossaries.swap_own_words):
over the model's own word for it, over the term left untranslated, over a word that spells it
nearly, and nowhere else."""

from __future__ import annotations

import pytest

from tm_guide.server.glossaries import swap_own_words
from tm_guide.server.results import Translation
from tm_guide.text.glossary import Term


def swapped(text: str, term: Term, own: str = "") -> str:
    translation = Translation(text, None, True, "fused", -0.5, 0.0, None)
    return swap_own_words(translation, [term], {term.source: own}).text


@pytest.mark.parametrize(
    ("text", "term", "own", "expected"),
    [
        # the model's own translation of the term
        ("Speichern Sie die Datei.", Term("file", "Akte"), "Datei", "Speichern Sie die Akte."),
        # the term left untranslated
        ("Luo (Kenia und Tanzania)", Term("tanzania", "Tansania"), "", "Luo (Kenia und Tansania)"),
        # a name copied and bent, an inflected copy
        (
            "Portugiesisch (Brasil, keine Tottasten)",
            Term("brazil", "Brasilien"),
            "",
            "Portugiesisch (Brasilien, keine Tottasten)",
        ),
        ("Luo (Kenia und Tanzanien)", Term("tanzania", "Tansania"), "", "Luo (Kenia und Tansania)"),
        ("Name dieses Streams", Term("stream", "Datenstrom"), "", "Name dieses Datenstrom"),
    ],
)
def test_a_term_replaces_the_word_the_model_wrote_for_it(text, term, own, expected):
    assert swapped(text, term, own) == expected


@pytest.mark.parametrize(
    ("text", "term"),
    [
        # a short term is near too many words to be told by spelling
        ("Die Daten sind gespeichert.", Term("date", "Datum")),
        # a German word is not near enough
        ("Eine sichere Verbindung", Term("secure", "gesichert")),
        # code is left alone
        ("Führen Sie --stream aus.", Term("stream", "Datenstrom")),
    ],
)
def test_a_word_that_does_not_spell_the_term_is_left(text, term):
    assert swapped(text, term) == text
