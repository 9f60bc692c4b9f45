"""cut_completions: which output words begin a memory target's word without ending it."""

from collections.abc import Sequence

from tm_guide.pieces.cut_words import cut_completions

TARGET = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", "nahme", "n", "▁für", "▁das", "▁Internet")


def grams(*targets: Sequence[str]) -> set[tuple[str, ...]]:
    """Every 1..4-gram of the targets: the pieces of pairs whose source is unedited there."""
    return {tuple(t[s : s + n]) for t in targets for s in range(len(t)) for n in range(1, 5)}


def test_a_cut_word_is_written_as_the_target_writes_it() -> None:
    output = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", "▁für", "▁das", "▁Internet")
    assert cut_completions(output, [TARGET], grams(TARGET), 4) == [TARGET]


def test_a_cut_word_at_the_end_and_before_a_mark() -> None:
    output = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", ".")
    completed = ("▁Zusätzliche", "▁Sicherheit", "s", "maß", "nahme", "n", ".")
    assert cut_completions(output, [TARGET], grams(TARGET), 4) == [completed]
    assert cut_completions(output[:-1], [TARGET], grams(TARGET), 4) == [completed[:-1]]


def test_only_where_the_pieces_spell_the_whole_word() -> None:
    output = ("▁Sicherheit", "s", "maß", "▁für", "▁das", "▁Internet")
    pieces = grams(TARGET) - {("maß", "nahme")}
    assert cut_completions(output, [TARGET], pieces, 4) == []


def test_a_whole_word_of_any_target_is_not_cut() -> None:
    output = ("▁Sicherheit", "s", "maß", "▁für", "▁das", "▁Internet")
    other = ("▁Das", "▁Sicherheit", "s", "maß", "▁ist", "▁gering")
    assert cut_completions(output, [TARGET, other], grams(TARGET, other), 4) == []


def test_words_the_vocabulary_holds_short_beginnings_and_endings_are_left() -> None:
    # one token: a word the model knows whole ("Zeit" is not "Zeitpunkt" cut short)
    target = ("▁Zeit", "punkt", "▁und", "▁Inhalt", "s", "verzeichnis")
    assert cut_completions(("▁Zeit", "▁und"), [target], grams(target), 4) == []
    # fewer than four letters: a beginning of too many words
    short = ("▁Ab", "s", "atz", "rand")
    assert cut_completions(("▁Ab", "s", "▁und"), [short], grams(short), 4) == []
    # a rest of fewer than three letters is an ending, which agreement chooses
    ending = ("▁Sicherheit", "s", "maß", "nahme", "n")
    output = ("▁Sicherheit", "s", "maß", "nahme", "▁und")
    assert cut_completions(output, [ending], grams(ending), 4) == []
    inhalts = ("▁des", "▁Inhalt", "s")
    completed = ("▁des", "▁Inhalt", "s", "verzeichnis")
    assert cut_completions(inhalts, [target], grams(target), 4) == [completed]


def test_the_first_part_of_a_compound_is_no_cut_word() -> None:
    output = ("▁Sicherheit", "s", "maß", "-", "▁und", "▁Netz")
    assert cut_completions(output, [TARGET], grams(TARGET), 4) == []


def test_two_cut_words_give_each_then_both() -> None:
    target = ("▁Sicherheit", "s", "maß", "nahme", "n", "▁und", "▁Netz", "werk", "zeug", "e")
    output = ("▁Sicherheit", "s", "maß", "▁und", "▁Netz", "wer")
    only = ("▁Sicherheit", "s", "maß", "nahme", "n", "▁und", "▁Netz", "wer")
    assert cut_completions(output, [target], grams(target), 4) == [only]  # "wer" ≠ "werk"
    output = ("▁Sicherheit", "s", "maß", "▁und", "▁Netz", "werk")
    first = ("▁Sicherheit", "s", "maß", "nahme", "n", "▁und", "▁Netz", "werk")
    second = ("▁Sicherheit", "s", "maß", "▁und", "▁Netz", "werk", "zeug", "e")
    assert cut_completions(output, [target], grams(target), 4) == [first, second, target]
    assert cut_completions(output, [target], grams(target), 2) == [first, second]
