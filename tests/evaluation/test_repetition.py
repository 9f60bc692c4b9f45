"""Back-to-back repetition counts, relative to the source."""

from __future__ import annotations

import pytest

from tm_guide.evaluation.repetition import back_to_back_repeats, repeated_outputs


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Öffnen Sie den Dialog.", 0),
        ("in ein Dialogfenster, in ein Dialogfenster, in ein Dialogfenster", 4),
        ("Werkzeuge ⁇ Malwerkzeuge ⁇ Malwerkzeuge ⁇ Malwerkzeuge", 2),
        ("Das das Haus", 1),  # case folded
        ("", 0),
    ],
)
def test_phrases_that_follow_themselves_are_counted(text: str, count: int) -> None:
    assert back_to_back_repeats(text) == count


def test_an_output_counts_only_when_it_repeats_more_than_its_source() -> None:
    sources = ["very, very good", "Open the file.", "Save it."]
    outputs = ["sehr, sehr gut", "Öffnen Sie die Datei Datei.", "Speichern Sie es."]
    assert repeated_outputs(outputs, sources) == 1
    with pytest.raises(ValueError, match="2 outputs but 3 sources"):
        repeated_outputs(outputs[:2], sources)
