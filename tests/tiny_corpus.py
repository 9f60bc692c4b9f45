"""The word lists of the tiny random-weight fixtures, and sentences made of them.

A random-weight model is enough to exercise loading, conversion and decoding mechanics; its
output is deterministic but meaningless. The real demo model is tested in tests/model/.
"""

from __future__ import annotations

import io
import random

_TINY_EN = (
    "click open the menu file save window dialog select table cell text page insert format "
    "tools edit view help document choose button spreadsheet chart style paragraph font "
    "column row sheet range value number date time print export import options settings "
    "properties new name"
)
_TINY_DE = (
    "klicken öffnen das menü datei speichern fenster dialog auswählen tabelle zelle text "
    "seite einfügen format extras bearbeiten ansicht hilfe dokument wählen schaltfläche "
    "diagramm vorlage absatz schriftart spalte zeile bereich wert zahl datum uhrzeit drucken "
    "exportieren optionen einstellungen eigenschaften größe über für neu"
)


def tiny_corpus(seed: int = 7, pairs: int = 400) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(pairs):
        for vocabulary in (_TINY_EN, _TINY_DE):
            words = vocabulary.split()
            n = rng.randint(3, 12)
            lines.append(" ".join(rng.choice(words) for _ in range(n)).capitalize() + ".")
    return lines


def train_spm(
    lines: list[str], *, unk_id: int = 0, bos_id: int = -1, eos_id: int = 1, pad_id: int = -1
) -> bytes:
    """A small unigram SentencePiece model of `lines` (about 256 pieces) with these special ids,
    as the family being imitated numbers them (-1: none)."""
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=256,
        hard_vocab_limit=False,
        model_type="unigram",
        unk_id=unk_id,
        bos_id=bos_id,
        eos_id=eos_id,
        pad_id=pad_id,
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
    )
    return model.getvalue()
