"""The template of a close match: what it keeps of the target and where the model may write."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tm_guide.errors import InvalidInput
from tm_guide.pieces.collect import (
    AlignedPair,
    EditComparison,
    collect_ngrams,
    compare,
    compare_words,
)
from tm_guide.pieces.repair import (
    MatchTemplate,
    RepairOptions,
    match_template,
    without_edge_marks,
    word_similarity,
)
from tm_guide.pieces.words import word_starts

from .test_algorithm1 import WORDS, aligned_pairs

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OPTIONS = RepairOptions(threshold=0.5, gap_scale=1, gap_margin=1)


def _pair(source: str, target: str, links: list[tuple[int, int]]) -> AlignedPair:
    return AlignedPair.build(3, source.split(), target.split(), links)


def _row_to_object() -> tuple[AlignedPair, EditComparison]:
    """The match "Copies the selected row." and the input that makes the row an object."""
    pair = _pair(
        "▁Copies ▁the ▁selected ▁row .",
        "▁Kopiert ▁die ▁ausgewählte ▁Zeile .",
        [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)],
    )
    return pair, compare(["▁Copies", "▁the", "▁selected", "▁object", "."], pair.source)


def test_a_replaced_word_leaves_a_gap_where_its_target_was():
    # "Zeile" goes, one token is owed (the article and adjective left: modifiers 0)
    pair, comparison = _row_to_object()
    template = match_template(pair, comparison, replace(OPTIONS, modifiers=0))
    assert template is not None
    assert template.tokens == ("▁Kopiert", "▁die", "▁ausgewählte", ".")
    assert template.gaps == (0, 0, 0, 2, 0)  # 1 per replaced token + 1
    assert template.positions == (0, 1, 2, 4)
    assert template.segment_id == 3 and template.similarity == comparison.similarity


def test_the_article_and_adjectives_of_a_changed_noun_are_written_again_with_it():
    # "die ausgewählte Zeile" for "row" gave "die ausgewählte Objekte" for "object": the noun
    # phrase's article and adjectives agree with the new noun, so they go with it, and the gap
    # holds a token for each besides what is owed
    pair, comparison = _row_to_object()
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("▁Kopiert", ".")
    assert template.gaps == (0, 4, 0) and template.least == (0, 3, 0)
    # a noun phrase reaches its article over at most `modifiers` words in small letters
    far = _pair(
        "▁Copies ▁the ▁here ▁given ▁row .",
        "▁Kopiert ▁die ▁hier ▁angegebene ▁Zeile .",
        [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)],
    )
    comparison = compare(["▁Copies", "▁the", "▁here", "▁given", "▁object", "."], far.source)
    template = match_template(far, comparison, OPTIONS)
    assert template is not None and template.tokens == ("▁Kopiert", ".")
    template = match_template(far, comparison, replace(OPTIONS, modifiers=1))
    assert template is not None
    assert template.tokens == ("▁Kopiert", "▁die", "▁hier", "▁angegebene", ".")
    # a changed word in small letters (a verb) takes only the short word right before it
    verb = _pair(
        "▁to ▁save ▁the ▁file",
        "▁um ▁die ▁Datei ▁zu ▁speichern",
        [(0, 0), (1, 4), (2, 1), (3, 2), (0, 3)],
    )
    comparison = compare(["▁to", "▁print", "▁the", "▁file"], verb.source)
    template = match_template(verb, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("▁um", "▁die", "▁Datei")


def test_a_word_the_input_lacks_is_dropped_and_its_seam_may_be_mended():
    pair = _pair(
        "▁Choose ▁Format ▁- ▁Borders ▁tab .",
        "▁Wählen ▁Sie ▁Format ▁– ▁Register : ▁Umrandung .",
        [(0, 0), (0, 1), (1, 2), (2, 3), (4, 4), (3, 6), (5, 7)],
    )
    comparison = compare(["▁Choose", "▁Format", "▁-", "▁Borders", "."], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    # "Register" goes with "tab"; the unaligned ":" is punctuation, a word of its own, and stays
    assert template.tokens == ("▁Wählen", "▁Sie", "▁Format", "▁–", ":", "▁Umrandung", ".")
    assert template.gaps == (0, 0, 0, 0, 1, 0, 0, 0)  # no token owed: the margin only


def test_input_tokens_the_match_lacks_are_written_after_the_word_before_them():
    # "Add" -> "Add characters": the new token goes after the target of "Add", whole words kept
    pair = _pair("▁Add ▁the ▁file", "▁Hinzu fügen ▁der ▁Datei", [(0, 0), (1, 2), (2, 3)])
    comparison = compare(["▁Add", "▁new", "▁the", "▁file"], pair.source)
    assert comparison.inserted == (0, 1, 0, 0)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == pair.target
    assert template.gaps == (0, 0, 2, 0, 0)  # after "fügen", not inside "Hinzufügen"


def test_a_clause_added_at_the_end_of_the_source_goes_at_the_end_of_the_target():
    # "Click OK to close the dialog." -> "... the dialog and save the file.": German ends the
    # clause on its verb ("um den Dialog zu schließen"), so the added clause follows that, not
    # the word "Dialog" that "dialog" is aligned to
    pair = _pair(
        "▁Click ▁OK ▁to ▁close ▁the ▁dialog .",
        "▁Klicken ▁Sie ▁auf ▁OK , ▁um ▁den ▁Dialog ▁zu ▁schließen .",
        [(0, 0), (0, 1), (1, 3), (2, 5), (3, 9), (4, 6), (5, 7), (6, 10)],
    )
    query = [
        "▁Click",
        "▁OK",
        "▁to",
        "▁close",
        "▁the",
        "▁dialog",
        "▁and",
        "▁save",
        "▁the",
        "▁file",
        ".",
    ]
    comparison = compare(query, pair.source)
    assert comparison.inserted[6] == 4
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == pair.target
    assert template.gaps == (0,) * 10 + (5, 0)  # before the period
    assert template.least == (0,) * 10 + (1, 0)
    # fewer tokens than RepairOptions.tail stay after the word before them ("in the document"
    # goes before a separable verb's particle, "den Text im Dokument aus")
    short = match_template(pair, comparison, RepairOptions(threshold=0.5, tail=5))
    assert short is not None and short.gaps == (0,) * 8 + (5, 0, 0, 0)
    never = match_template(pair, comparison, RepairOptions(threshold=0.5, tail=0))
    assert never is not None and never.gaps == short.gaps


def test_a_whole_word_goes_when_one_of_its_pieces_is_edited():
    pair = _pair("▁a ▁b", "▁x y z ▁w", [(0, 0), (1, 1), (1, 3)])
    comparison = compare(["▁a", "▁c"], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is None  # "▁x y z" goes with "y", "▁w" with "▁b": nothing is kept
    comparison = compare(["▁q", "▁b"], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None and template.tokens == ("▁w",)
    # "▁x" translated the replaced "▁a", "y" the unchanged "▁b": both are to be written again
    assert template.gaps == (3, 0)


def test_a_compound_goes_whole_when_its_head_is_edited():
    # "version tools" -> "version systems": "Versions" translates the unchanged "version", but
    # left behind it would be glued to the new head ("Versionskontrollsystem-Systeme"): the
    # compound goes whole, and the gap has room to write its first part again
    pair = _pair(
        "▁Other ▁version ▁tools ▁here",
        "▁Andere ▁Versions - Werkzeuge ▁hier",
        [(0, 0), (1, 1), (2, 3), (3, 4)],
    )
    query = ["▁Other", "▁version", "▁systems", "▁here"]
    template = match_template(pair, compare(query, pair.source), OPTIONS)
    assert template is not None and template.tokens == ("▁Andere", "▁hier")
    # "Versions" and "-" again, "systems" owed, plus the margin
    assert template.gaps == (0, 1 + 1 + 1 + 1, 0)
    # a changed first part goes alone: the head stays, and the model writes a new first part
    # before its hyphen ("Jessie-Veröffentlichungshinweise" -> "Bullseye-...")
    query = ["▁Other", "▁edition", "▁tools", "▁here"]
    template = match_template(pair, compare(query, pair.source), OPTIONS)
    assert template is not None and template.tokens == ("▁Andere", "-", "Werkzeuge", "▁hier")
    # a hyphen between spaces, or after a mark, joins no compound
    pair = _pair("▁a ▁b ▁c", "▁Eins ▁- ▁Zwei ▁Drei", [(0, 0), (1, 2), (2, 3)])
    template = match_template(pair, compare(["▁a", "▁b", "▁q"], pair.source), OPTIONS)
    assert template is not None and template.tokens == ("▁Eins", "▁-", "▁Zwei")


def test_an_unaligned_word_inside_a_dropped_stretch_goes_with_it():
    # "... discussed in greater detail in Chapter 5" -> "Chapter 5": the aligner left
    # "dargestellt" to no source word, so no edit reached it; between words that go, it goes
    pair = _pair(
        "▁discussed ▁in ▁detail ▁in ▁Chapter ▁5",
        "▁ausführlicher ▁dargestellt ▁in ▁Kapitel ▁5",
        [(2, 0), (3, 2), (4, 3), (5, 4)],
    )
    comparison = compare(["▁Chapter", "▁5"], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("▁Kapitel", "▁5")
    # kept on either side, or at an end of the sentence, it stays: the aligner's silence is
    # no edit ("um" before "das Dokument zu speichern" in the test below)
    kept = compare(["▁detail", "▁in", "▁Chapter", "▁5"], pair.source)
    template = match_template(pair, kept, OPTIONS)
    assert template is not None
    assert template.tokens[:2] == ("▁ausführlicher", "▁dargestellt")


def test_an_unaligned_compound_head_that_goes_takes_its_hyphen():
    # "For 64-bit PC you have ..." -> "For information ...": "System en" of "PC-Systemen" is
    # aligned to nothing and goes between words that go; the hyphen, which joins it to the
    # changed "PC", goes with it, or it stood alone between two gaps: "Für die-Informationen"
    pair = _pair(
        "▁For ▁PC ▁you ▁have ▁it",
        "▁Auf ▁PC - System en ▁haben ▁Sie ▁es",
        [(0, 0), (1, 1), (2, 6), (3, 5), (4, 7)],
    )
    comparison = compare(["▁For", "▁it"], pair.source)
    template = match_template(pair, comparison, replace(OPTIONS, agreement=0))
    assert template is not None
    assert template.tokens == ("▁Auf", "▁es")


def test_a_gap_holds_a_token_for_each_agreeing_word_besides_what_is_owed():
    # "save the document" -> "save the file": "das" goes with "Dokument" to agree with the new
    # noun, so the gap must write two words again, not the article alone ("um das zu speichern")
    pair = _pair(
        "▁save ▁the ▁document .",
        "▁um ▁das ▁Dokument ▁zu ▁speichern .",
        [(0, 4), (1, 1), (2, 2), (3, 5)],
    )
    comparison = compare(["▁save", "▁the", "▁file", "."], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("▁um", "▁zu", "▁speichern", ".")
    assert template.gaps == (0, 3, 0, 0, 0)  # "das" (an unchanged source word) + 1 owed + 1
    assert template.least == (0, 2, 0, 0, 0)
    # an agreeing word with no link of its own (a thin memory's alignment) is written again too
    unlinked = _pair(
        "▁you ▁want ▁to ▁copy .",
        "▁den ▁Sie ▁kopieren ▁möchten .",
        [(1, 3), (3, 2), (4, 4)],
    )
    comparison = compare(["▁you", "▁want", "▁to", "▁delete", "."], unlinked.source)
    template = match_template(unlinked, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("▁den", "▁möchten", ".")
    assert template.least == (0, 2, 0, 0)


def test_word_starts_split_at_spaces_and_punctuation():
    tokens = ("▁=", "WERT", "(", "A", "1", ")", "▁Zeile", "n")
    assert word_starts(tokens) == [True, True, True, True, False, True, True, False]
    assert word_starts(("Kopiert", "die")) == [True, True]  # whole-word tokens


def test_punctuation_spelled_in_bytes_is_a_word_of_its_own():
    # "¶" is <0xC2><0xB6> in the demo vocabulary; "é" (<0xC3><0xA9>) is part of its word
    tokens = ("▁Einzel", "heit", "en", "<0xC2>", "<0xB6>", "x", "▁caf", "<0xC3>", "<0xA9>")
    assert word_starts(tokens) == [True, False, False, True, False, True, True, False, False]
    assert word_starts(("▁a", "<0xC2>")) == [True, False]  # no whole character: no mark


def test_a_pilcrow_stays_when_the_word_before_it_changes():
    # "5.14.2.5. Details¶" -> "5.14.2. Updates from unstable¶": the pilcrow is aligned to the
    # source's and stays, where it went with "Einzelheiten" as one word
    pair = _pair(
        "▁Details <0xC2> <0xB6>",
        "▁Einzel heit en <0xC2> <0xB6>",
        [(0, 0), (0, 1), (0, 2), (1, 3), (2, 4)],
    )
    comparison = compare(["▁Updates", "<0xC2>", "<0xB6>"], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("<0xC2>", "<0xB6>")
    assert template.gaps == (2, 0, 0)


def test_no_room_opens_before_a_kept_piece_that_goes_on_with_a_word():
    # '"pen.*"' -> '"pen"': the match's '".*stift"' loses ".*" and keeps "stift" (aligned to
    # the unchanged "pen"); a margin there let the model write "pen" on to it: '"penstift"'
    pair = _pair(
        '▁= AV ; " pen .* "',
        '▁= MW ; " .* stift "',
        [(0, 0), (1, 1), (2, 2), (3, 3), (4, 5), (5, 4), (6, 6)],
    )
    comparison = compare(["▁=", "AV", ";", '"', "pen", '"'], pair.source)
    template = match_template(pair, comparison, OPTIONS)
    assert template is not None
    assert template.tokens == ("▁=", "MW", ";", '"', "stift", '"')
    assert template.gaps == (0,) * 7
    # a dropped word before a word start still leaves the margin to mend the seam
    spaced = _pair("▁the ▁big ▁file", "▁die ▁große ▁Datei", [(0, 0), (1, 1), (2, 2)])
    comparison = compare(["▁the", "▁file"], spaced.source)
    template = match_template(spaced, comparison, replace(OPTIONS, agreement=0))
    assert template is not None
    assert template.tokens == ("▁die", "▁Datei") and template.gaps == (0, 1, 0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(aligned_pairs(), st.lists(WORDS, min_size=1, max_size=12))
def test_a_template_keeps_only_what_algorithm_1_would_collect(pair, query):
    """Every kept token sits in a run of Algorithm 1 (no aligned edited source token), in the
    target's order; the gaps are where the model may write, and there are len + 1 of them."""
    comparison = compare(query, pair.source)
    template = match_template(pair, comparison, OPTIONS)
    ngrams = set(collect_ngrams(pair.target, pair.target_links, comparison.unedited, 1))
    if template is None:
        return
    assert list(template.positions) == sorted(template.positions)
    assert all((pair.target[p],) in ngrams for p in template.positions)
    assert template.tokens == tuple(pair.target[p] for p in template.positions)
    assert len(template.gaps) == len(template.tokens) + 1 and min(template.gaps) >= 0


@PROPERTY
@given(aligned_pairs())
def test_the_match_itself_is_kept_whole_without_gaps(pair):
    template = match_template(pair, compare(list(pair.source), pair.source), OPTIONS)
    assert template is not None
    assert template.tokens == pair.target and set(template.gaps) == {0}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0.0},
        {"threshold": 1.5},
        {"gap_scale": -1},
        {"gap_margin": -2},
        {"words": 1.5},
    ],
)
def test_bad_repair_options_are_refused(kwargs):
    with pytest.raises(InvalidInput):
        RepairOptions(**kwargs)


def test_a_character_spelt_in_bytes_is_that_character_not_a_word():
    """The Debian manuals end each heading with a pilcrow, which the vocabulary spells in
    bytes: "<0xC2><0xB6>" holds letters, and read as two words it made "5.14.2.1. Out-of-date¶"
    and "5.14.2.5. Details¶" share 2 of 3 words, so the model wrote "Außer-date" into the
    match's frame. A letter spelt in bytes is still a letter."""
    pilcrow = ["<0xC2>", "<0xB6>"]
    heading = ["\u25815", ".", "1", "4.2", ".", "1", ".", "\u2581Out", "-", "of", "-", "date"]
    other = ["\u25815", ".", "1", "4.2", ".", "5", ".", "\u2581Details"]
    assert word_similarity(heading + pilcrow, other + pilcrow) == 0.0
    umlaut = ["\u2581Gr", "<0xC3>", "<0xB6>", "\u00df", "e"]  # "Größe", its ö in bytes
    assert word_similarity([*umlaut, "\u2581ändern"], umlaut) == pytest.approx(1 / 2)
    assert word_similarity([*umlaut, "\u2581ändern"], ["\u2581Größe"]) == pytest.approx(1 / 2)


def test_repair_applies_from_its_threshold_and_never_without_one():
    assert RepairOptions(0.7).applies(0.7) and not RepairOptions(0.7).applies(0.69)
    assert not RepairOptions().applies(1.0)


def test_a_match_that_shares_only_numbers_and_punctuation_is_not_repaired():
    """A heading's number and dots make half the tokens of "6.3.1. Basics of SSH" and "6.2.1.
    Email basics" alike, but no word with a letter; a changed word of three leaves 2/3."""
    heading = ["\u25816", ".", "3", ".", "1", ".", "\u2581Basics", "\u2581of", "\u2581SSH"]
    other = ["\u25816", ".", "2", ".", "1", ".", "\u2581Email", "\u2581basics"]
    assert word_similarity(heading, other) == 0.0
    assert word_similarity(
        ["\u2581Opens", "\u2581the", "\u2581Wiz", "ard"],
        ["\u2581opens", "\u2581a", "\u2581Wizard"],
    ) == pytest.approx(2 / 3)
    assert word_similarity(["1", "."], ["2", "."]) == 1.0  # no word with a letter on either side
    # a dot parts a function's name: "PERCENTILE" shares a word with "PERCENTILE.INC", whose
    # "QUANTIL.INKL" repaired is the reference's "QUANTIL", where guided alone it wrote "ANTILLE"
    percentile = ["\u2581P", "ER", "C", "EN", "T", "I", "LE"]
    assert word_similarity(percentile, [*percentile, ".", "IN", "C"]) == pytest.approx(1 / 2)
    norm = ["\u2581N", "OR", "M", "."]
    assert word_similarity(
        [*norm, "D", "I", "ST"], [*norm, "S", ".", "D", "I", "ST"]
    ) == pytest.approx(2 / 3)
    options = RepairOptions(0.5)
    assert options.applies(0.5) and options.shares(0.3) and not options.shares(0.29)
    assert RepairOptions(0.5, words=0.0).shares(0.0)


def test_a_template_loses_the_edge_marks_it_kept_and_its_gaps_there_join():
    """ "4.6. Das Debian-Archiv¶" kept with a gap of 2 before the pilcrow: read without the
    pilcrow, the model would fill that gap where it means to end."""
    pilcrow = frozenset({"<0xC2>", "<0xB6>"})
    kept = ("\u25814", ".", "6", ".", "\u2581Das", "\u2581Debian", "-", "Archiv")
    template = MatchTemplate(
        tokens=(*kept, "<0xC2>", "<0xB6>"),
        gaps=(0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1),
        positions=tuple(range(10)),
        segment_id=7,
        similarity=0.9,
        least=(0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0),
    )
    cut = without_edge_marks(template, pilcrow)
    assert cut is not None and cut.tokens == kept and cut.positions == tuple(range(8))
    assert cut.gaps == (0, 0, 0, 0, 0, 0, 0, 0, 3) and cut.least == (0,) * 8 + (1,)
    # at the start, with the space piece before the mark's bytes; a middle one stays
    arrow = ("\u2581", "<0xF0>", "<0x9F>", "<0xA1>", "<0x86>")
    marks = frozenset(arrow[1:])
    led = MatchTemplate(
        (*arrow, "\u2581Weiter", *arrow[1:], "!"), (1,) * 12, tuple(range(11)), 3, 0.8
    )
    cut = without_edge_marks(led, marks)
    assert cut is not None and cut.tokens == ("\u2581Weiter", *arrow[1:], "!")
    assert cut.gaps == (6, 1, 1, 1, 1, 1, 1) and cut.positions == tuple(range(5, 11))
    assert without_edge_marks(template, frozenset({"<0xE2>"})) is template  # none to cut
    assert (
        without_edge_marks(MatchTemplate(("<0xC2>", "<0xB6>"), (0, 0, 0), (0, 1), 1, 1.0), pilcrow)
        is None
    )


def test_the_repair_compares_words_not_pieces():
    # "▁file" + "s": a script over pieces keeps "▁file" and inserts "s", and the repair would
    # keep "Datei" for "files"; over words the word is replaced whole, its pieces in order
    source = ["▁Save", "▁the", "▁file"]
    query = ["▁Save", "▁the", "▁file", "s"]
    by_pieces = compare(query, source)
    assert by_pieces.unedited == 0b111 and by_pieces.inserted == (0, 0, 0, 1)
    words = compare_words(query, source)
    assert words.unedited == 0b011 and words.replaced == 0b100
    assert words.inserted == (0, 0, 0, 1)  # the piece "s" the word lacks, after it
    assert (words.similarity, words.distance) == (by_pieces.similarity, by_pieces.distance)
    # words in capitals are spelt in letters: "AVEDEV" deleted from the end does not touch
    # the pieces of the words before it
    source = ["▁A", "VE", "R", "AGE", ",", "▁A", "VE", "DE", "V"]
    query = ["▁A", "VE", "R", "AGE"]
    words = compare_words(query, source)
    assert words.unedited == 0b1111 and words.replaced == 0 and words.inserted == ()
    # a word of the input the match lacks: its tokens are inserted before the next word
    words = compare_words(["▁Save", "▁new", "▁file"], ["▁Save", "▁file"])
    assert words.unedited == 0b11 and words.inserted == (0, 1, 0)
    # a name in capitals that gains a prefix is compared piece by piece: its translation kept
    # ("KALENDERWOCHE"), the prefix written before it
    source = ["▁=", "W", "E", "E", "K", "NUM", "("]
    query = ["▁=", "ISO", "W", "E", "E", "K", "NUM", "("]
    words = compare_words(query, source)
    assert words == compare(query, source)
