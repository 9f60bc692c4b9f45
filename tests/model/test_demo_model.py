"""The bundled demo model (en->de) turns real LibreOffice-help-like English into German."""

from __future__ import annotations

import re

import pytest

from tm_guide.config import BUNDLED_MODEL
from tm_guide.model import Bundle
from tm_guide.model.unguided import UnguidedOptions, translate_lines

pytestmark = pytest.mark.skipif(
    not (BUNDLED_MODEL / "model_card.json").is_file(), reason="demo model not in this checkout"
)

SENTENCES = [
    "Click OK to close the dialog.",
    "Select the cells that you want to format.",
    "Choose a file and click Open.",
    "The settings are saved when you close the window.",
    "You can insert a new table in the document.",
    "Enter the name of the new style.",
]
GERMAN_WORDS = {
    "der", "die", "das", "den", "dem", "des", "und", "ist", "sind", "sie", "zu", "zum",
    "auf", "mit", "ein", "eine", "einen", "nicht", "wenn", "werden", "wird", "im", "in",
    "für", "von", "klicken", "wählen", "datei", "fenster", "tabelle", "zellen", "dokument",
}  # fmt: skip
ENGLISH_WORDS = {"the", "and", "you", "to", "that", "when", "of", "a", "are", "is"}


@pytest.fixture(scope="module")
def demo_translations() -> list[str]:
    bundle = Bundle.load(BUNDLED_MODEL, intra_threads=1)
    assert (bundle.card.source_lang, bundle.card.target_lang) == ("en", "de")
    return translate_lines(bundle, SENTENCES, UnguidedOptions(beam_size=4, batch_size=8))


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def test_output_is_german(demo_translations: list[str]) -> None:
    german, english = 0, 0
    for output in demo_translations:
        words = _words(output)
        german += sum(w in GERMAN_WORDS for w in words)
        english += sum(w in ENGLISH_WORDS for w in words)
    assert german >= 2 * len(SENTENCES), demo_translations  # about two German words a sentence
    assert english < german / 4, demo_translations


def test_click_becomes_klicken(demo_translations: list[str]) -> None:
    assert re.search(r"klick", demo_translations[0], re.IGNORECASE), demo_translations[0]


def test_every_sentence_is_translated(demo_translations: list[str]) -> None:
    for source, output in zip(SENTENCES, demo_translations, strict=True):
        assert output and output != source
        assert len(_words(output)) <= 3 * len(_words(source)), output  # no runaway output
