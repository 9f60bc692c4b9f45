"""The source's characters that the normalizer changed come back in the translation."""

from __future__ import annotations

import unicodedata

from tm_guide.text.normalized import restore


def nfkc(text: str) -> str:
    """NFKC with runs of whitespace as one space, as SentencePiece's nmt_nfkc writes text."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def test_a_word_comes_back_whole_where_the_translation_writes_its_normal_form() -> None:
    restored = restore("The room is 10\u00a0m² large.", "Der Raum ist 10 m2 groß.", nfkc)
    assert restored.text == "Der Raum ist 10\u00a0m² groß."
    assert restore("LibreOffice™ is free.", "LibreOfficeTM ist frei.", nfkc).text == (
        "LibreOffice™ ist frei."
    )
    assert restore("Open the ﬁle.", "Open the file.", nfkc).text == "Open the ﬁle."
    # only as a whole word: "m2" inside "Rm2x" is another word
    assert restore("10 m² (m²)", "Rm2x m2", nfkc).text == "Rm2x m²"


def test_punctuation_comes_back_wherever_the_translation_holds_it() -> None:
    restored = restore(
        "Choose Save As… or Open…", "Wählen Sie Speichern unter... oder Öffnen...", nfkc
    )
    assert restored.text == "Wählen Sie Speichern unter… oder Öffnen…"


def test_nothing_changes_where_the_source_holds_the_normal_form_too() -> None:
    assert restore("Wait... or go…", "Warte... oder geh...", nfkc).text == "Warte... oder geh..."
    assert restore("m2 or m²", "m2 oder m2", nfkc).text == "m2 oder m2"
    assert restore("Plain ASCII text.", "Reiner ASCII-Text...", nfkc).edits == ()


def test_positions_move_with_the_edits() -> None:
    restored = restore("A… B…", "X... Y...", nfkc)
    assert restored.text == "X… Y…"
    assert [restored.moved(p) for p in (0, 1, 2, 4, 5, 8, 9)] == [0, 1, 1, 2, 3, 4, 5]


def test_the_memorys_punctuation_comes_back_where_its_targets_write_it() -> None:
    """A memory that writes "…" for the source's "..." gets it where the model wrote "..."."""
    targets = ["Wählen Sie Datei - Speichern unter…", "Öffnen…"]
    restored = restore(
        "Choose File - Save As...", "Wählen Sie Datei - Speichern unter...", nfkc, targets
    )
    assert restored.text == "Wählen Sie Datei - Speichern unter…"
    mixed = [*targets, "Warten..."]  # the memory writes both: either may be meant
    assert restore("Save As...", "Speichern unter...", nfkc, mixed).edits == ()
    assert restore("Save As...", "Speichern unter...", nfkc).edits == ()  # no memory
