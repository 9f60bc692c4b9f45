"""cut_completions: which output words begin a memory target's word without ending it."""

from tm_guide.pieces.cut_words import cut_completions

TARGET = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", "nahme", "n", "▁für", "▁das", "▁Internet")


def test_a_cut_word_is_written_as_the_target_writes_it() -> None:
    output = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", "▁für", "▁das", "▁Internet")
    assert cut_completions(output, [TARGET], 4) == [TARGET]


def test_a_cut_word_at_the_end_and_before_a_mark() -> None:
    output = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", ".")
    completed = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", "nahme", "n", ".")
    assert cut_completions(output, [TARGET], 4) == [completed]
    assert cut_completions(output[:-1], [TARGET], 4) == [completed[:-1]]


def test_a_whole_word_of_any_target_is_not_cut() -> None:
    output = ("▁Sicherheit", "s", "maß", "▁für", "▁das", "▁Internet")
    other = ("▁Das", "▁Sicherheit", "s", "maß", "▁ist", "▁gering")
    assert cut_completions(output, [TARGET, other], 4) == []


def test_the_model_own_word_and_short_beginnings_are_left() -> None:
    # a beginning of fewer than four letters ("▁für" of "fürsorge") begins too many words
    assert cut_completions(("▁Netz", "▁für"), [("▁für", "s", "orge")], 4) == []
    assert cut_completions(("▁Zusätzliche", "▁Netz"), [TARGET], 4) == []


def test_the_first_part_of_a_compound_is_no_cut_word() -> None:
    output = ("▁Sicherheit", "s", "maß", "-", "▁und", "▁Netz")
    assert cut_completions(output, [TARGET], 4) == []


def test_two_cut_words_give_each_then_both() -> None:
    target = ("▁Sicherheit", "s", "maß", "nahme", "n", "▁und", "▁Netz", "werk", "e")
    output = ("▁Sicherheit", "s", "maß", "▁und", "▁Netz", "wer")
    only = ("▁Sicherheit", "s", "maß", "nahme", "n", "▁und", "▁Netz", "wer")
    assert cut_completions(output, [target], 4) == [only]  # "wer" is not a piece of "werk"
    output = ("▁Sicherheit", "s", "maß", "▁und", "▁Netz", "werk")
    first = ("▁Sicherheit", "s", "maß", "nahme", "n", "▁und", "▁Netz", "werk")
    second = ("▁Sicherheit", "s", "maß", "▁und", "▁Netz", "werk", "e")
    assert cut_completions(output, [target], 4) == [first, second, target]
    assert cut_completions(output, [target], 2) == [first, second]
