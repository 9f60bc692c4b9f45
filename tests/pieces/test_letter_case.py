"""Words a close match writes in another letter case only (tm_guide.pieces.letter_case), with the
demo model's own SentencePiece models: the pair as the repair then sees it."""

from __future__ import annotations

from tm_guide.model import Bundle
from tm_guide.pieces.collect import AlignedPair, compare
from tm_guide.pieces.letter_case import absorb_case
from tm_guide.pieces.repair import RepairOptions, match_template

from .test_code_words import encoded_pair


def _absorbed(bundle: Bundle, query: str, pair: AlignedPair, small: set[str]) -> AlignedPair:
    [absorbed] = absorb_case(
        bundle.encode_source(query),
        [pair],
        bundle.encode_source,
        bundle.encode_target,
        lambda word, _: word in small,
    )
    return absorbed


def test_title_case_is_no_edit_and_the_match_is_kept_whole(bundle: Bundle) -> None:
    pair = encoded_pair(
        bundle,
        "Comparison Operators",
        "Vergleichsoperatoren",
        [("▁Com", "▁Vergleich"), ("▁Operator", "operator")],
    )
    query = bundle.encode_source("Comparison operators")
    assert compare(query, pair.source).similarity < 1.0
    absorbed = _absorbed(bundle, "Comparison operators", pair, set())
    assert absorbed.source == tuple(query) and absorbed.target == pair.target
    comparison = compare(query, absorbed.source)
    assert comparison.similarity == 1.0
    template = match_template(absorbed, comparison, RepairOptions(threshold=0.5))
    assert template is not None
    assert template.tokens == pair.target and not any(template.gaps)


def test_a_first_word_no_longer_first_is_written_small_where_the_memory_does(
    bundle: Bundle,
) -> None:
    pair = encoded_pair(
        bundle,
        "Choose File - Save As.",
        "Wählen Sie Datei – Speichern unter.",
        [("▁Choose", "▁Wählen"), ("▁Choose", "▁Sie"), ("▁File", "▁Datei")],
    )
    query = "Open a document and choose File - Save As."
    absorbed = _absorbed(bundle, query, pair, {"wählen"})
    assert "".join(absorbed.target) == "▁wählen▁Sie▁Datei▁–▁Speichern▁unter."
    assert "▁choose" in absorbed.source
    # the small word stands where the capitalised one did, aligned as it was
    at = absorbed.target.index("▁wählen")
    assert absorbed.target_links[at] == 1 << absorbed.source.index("▁choose")
    # where the memory never writes the word small (a noun), the target keeps its capital
    kept = _absorbed(bundle, query, pair, set())
    assert kept.target == pair.target and "▁choose" in kept.source


def test_a_word_that_gains_a_capital_by_leading_the_input_stays_an_edit(bundle: Bundle) -> None:
    pair = encoded_pair(
        bundle,
        "Open the file and choose File - Save As.",
        "Öffnen Sie die Datei und wählen Sie Datei – Speichern unter.",
        [("▁choose", "▁wählen"), ("▁Open", "▁Öffnen")],
    )
    absorbed = _absorbed(bundle, "Choose File - Save As.", pair, {"wählen"})
    assert absorbed is pair


def test_a_pair_without_such_a_word_is_left_as_it_is(bundle: Bundle) -> None:
    pair = encoded_pair(bundle, "Save As", "Speichern unter", [("▁Save", "▁Speichern")])
    assert _absorbed(bundle, "Save the file", pair, set()) is pair


def test_a_heading_number_does_not_lead_the_sentence(bundle: Bundle) -> None:
    # "Other" leads "10.5.5. Other version control systems" (its number comes before it): a
    # capital gained by leading, left to the model, not a word kept after the number
    pair = encoded_pair(
        bundle,
        "10.14. List of other version control system tools",
        "10.14. Liste anderer Versionskontrollsystem-Werkzeuge",
        [("▁other", "▁anderer")],
    )
    assert _absorbed(bundle, "10.5.5. Other version control systems", pair, set()) is pair


def test_a_word_the_target_writes_as_it_is_takes_the_new_case_there_too(bundle: Bundle) -> None:
    pair = encoded_pair(
        bundle,
        "Flex is a Lex-compatible fast lexical analyzer generator.",
        "Flex ist ein Lex-kompatibler schneller lexikalischer Analysegenerator.",
        [("▁is", "▁ist"), ("▁Le", "▁Le")],
    )
    query = "LEX-compatible fast lexical analyzer generator"
    absorbed = _absorbed(bundle, query, pair, set())
    assert "".join(absorbed.source).startswith("▁Flex▁is▁a▁LEX-compatible")
    assert "".join(absorbed.target).startswith("▁Flex▁ist▁ein▁LEX-kompatibler")


def test_a_noun_that_gains_a_capital_by_leading_the_input_is_kept(bundle: Bundle) -> None:
    # "Basics" leads "6.3.1. Basics of SSH"; the match's "basics" is translated by a noun,
    # which German writes with its capital wherever it stands
    pair = encoded_pair(
        bundle,
        "6.2.1. Email basics",
        "6.2.1. Grundlagen des E-Mail-Systems",
        [("▁basic", "▁Grund"), ("s", "lag")],
    )
    absorbed = _absorbed(bundle, "6.3.1. Basics of SSH", pair, set())
    assert "▁Basic" in absorbed.source and absorbed.target == pair.target


def test_a_german_noun_that_spells_the_english_word_keeps_its_capital(bundle: Bundle) -> None:
    pair = encoded_pair(
        bundle,
        "Export Dialog",
        "Dialog exportieren",
        [("▁Export", "▁exportieren"), ("▁Dialog", "▁Dialog")],
    )
    absorbed = _absorbed(bundle, "Export dialog", pair, set())
    assert absorbed.source == tuple(bundle.encode_source("Export dialog"))
    assert absorbed.target == pair.target
