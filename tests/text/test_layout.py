"""The layout around the sentences: whatever a CAT tool sends comes back around the translations
exactly, and a sentence wrapped over lines is translated whole and wrapped again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tm_guide.text import layout_of


def test_a_single_sentence_is_plain() -> None:
    layout = layout_of("Click OK to close the dialog.", "en")
    assert layout.plain and layout.units == ("Click OK to close the dialog.",)


def test_leading_and_trailing_whitespace_come_back() -> None:
    layout = layout_of("  Click OK.\n", "en")
    assert not layout.plain and layout.units == ("Click OK.",)
    assert layout.join(["Klicken Sie auf OK."]) == "  Klicken Sie auf OK.\n"


def test_lines_and_indentation_are_kept_and_blank_lines_not_translated() -> None:
    source = "Usage: cp SOURCE DEST\nCopy SOURCE to DEST.\n\n  -f, --force    never ask.\n"
    layout = layout_of(source, "en")
    assert layout.units == (
        "Usage: cp SOURCE DEST",
        "Copy SOURCE to DEST.",
        "-f, --force",  # an option and its description: columns, translated one by one
        "never ask.",
    )
    target = layout.join(
        ["Aufruf: cp QUELLE ZIEL", "QUELLE nach ZIEL kopieren.", "-f, --force", "nie fragen."]
    )
    assert target == (
        "Aufruf: cp QUELLE ZIEL\nQUELLE nach ZIEL kopieren.\n\n  -f, --force    nie fragen.\n"
    )


def test_sentences_of_a_line_are_translated_one_by_one() -> None:
    layout = layout_of("Open the file. Then save it, e.g. as PDF!  Done?", "en")
    assert layout.units == ("Open the file.", "Then save it, e.g. as PDF!", "Done?")
    assert layout.join(["A.", "B!", "C?"]) == "A. B!  C?"


def test_a_wrapped_sentence_is_one_unit_and_keeps_its_line_count() -> None:
    layout = layout_of("Written by %s, %s, %s,\nand %s.\n", "en")
    assert layout.units == ("Written by %s, %s, %s, and %s.",)
    target = layout.join(["Geschrieben von %s, %s, %s und %s."])
    assert target == "Geschrieben von %s, %s, %s\nund %s.\n"
    assert target.count("\n") == 2


def test_a_translation_without_spaces_still_keeps_every_line() -> None:
    layout = layout_of("the first part of it\nand the second part\n", "en")
    assert len(layout.units) == 1
    assert layout.join(["一二三"]).count("\n") == 2


def test_a_translation_with_fewer_spaces_than_breaks_repeats_nothing() -> None:
    """Breaks with no space left go at the end, and no later break goes back to a space an
    earlier one took (which wrote the text after it twice)."""
    layout = layout_of("one two\nthree four\nfive six\nseven eight.", "en")
    assert len(layout.units) == 1
    assert layout.join(["eins zwei"]) == "eins\nzwei\n\n"


def test_nothing_to_translate() -> None:
    for text in ("", "---", "\n\n", "  \t ", "* * *\n"):
        layout = layout_of(text, "en")
        assert layout.units == () and layout.join([]) == text


TEXT = st.lists(
    st.sampled_from(list("ab cD.,!?\n\r\t:;%s-") + ["\r\n", "  ", "é", "Ω", "e.g.", "Word"]),
    max_size=60,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_units_put_back_give_the_source(text: str) -> None:
    layout = layout_of(text, "en")
    assert layout.join(list(layout.units)) == text
    assert all(unit == unit.strip() and unit for unit in layout.units)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.sampled_from(["X", "Zwei Wörter", "", "a b c d e f"]))
def test_any_translations_keep_the_line_breaks(text: str, translation: str) -> None:
    layout = layout_of(text, "en")
    target = layout.join([translation] * len(layout.units))
    assert target.count("\n") == text.count("\n") and target.count("\r") == text.count("\r")


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_join_at_says_where_each_translation_starts(text: str) -> None:
    layout = layout_of(text, "en")
    marks = [f"<T{i}>" for i in range(len(layout.units))]
    joined, starts = layout.join_at(marks)
    assert joined == layout.join(marks)
    assert [joined[s : s + len(m)] for s, m in zip(starts, marks, strict=True)] == marks


def test_join_at_counts_a_longer_line_break_before_a_sentence() -> None:
    layout = layout_of("first part of it\r\nand the rest. Then more.", "en")
    joined, starts = layout.join_at(["eins zwei drei", "vier."])
    assert joined == "eins zwei\r\ndrei vier." and joined[starts[1] :] == "vier."


LONG = (
    "When the document is opened for the first time after the upgrade, the program converts "
    "every style that the old version stored in the file; it keeps the names the user gave "
    "them, and it writes the converted styles back only when the document is saved again."
)


def test_a_long_sentence_is_cut_into_clauses_that_give_it_back() -> None:
    layout = layout_of(LONG, "en")
    assert len(LONG.split()) > 30 and len(layout.units) > 1
    assert all(len(unit.split()) <= 30 for unit in layout.units)
    assert layout.units[0].endswith(",") or layout.units[0].endswith(";")
    assert layout.join(list(layout.units)) == LONG
    assert layout_of(LONG, "en", max_words=0).units == (LONG,)


def test_a_long_sentence_without_a_clause_mark_stays_whole() -> None:
    words = " ".join(["word"] * 40) + "."
    assert layout_of(words, "en").units == (words,)


def test_a_number_or_a_ratio_is_no_clause_end() -> None:
    text = "Set the value to 1,5 and the ratio to 4:3 " * 4 + "before you print the page."
    layout = layout_of(text, "en", max_words=10)
    assert layout.units == (text,)
