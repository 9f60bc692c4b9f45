"""Words the retrieved pairs do not say, looked up alone in a real memory for what it calls
them: a new function name (tm_guide.pieces.code_words), a new name (tm_guide.pieces.names) and
any word a repaired match lacks (tm_guide.pieces.lookups)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions
from tm_guide.errors import InvalidInput
from tm_guide.pieces import PieceOptions
from tm_guide.pieces.code_words import missing_code_words
from tm_guide.pieces.collect import AlignedPair
from tm_guide.pieces.lookups import SourceWord, lookup_pieces, missing_words, translations
from tm_guide.pieces.names import written_as_is
from tm_guide.pieces.repair import RepairOptions

from .helpers import aligned_memory

# the help's pages: a sentence on CEILING, and FLOOR's own heading elsewhere in the memory;
# the header's properties, and the footer said in other pairs
TM = [
    (
        "The CEILING function rounds a number up.",
        "Die Funktion OBERGRENZE rundet eine Zahl auf.",
    ),
    ("FLOOR function", "Funktion UNTERGRENZE"),
    ("Rounds a number down.", "Rundet eine Zahl ab."),
    ("Opens the selected file.", "Öffnet die ausgewählte Datei."),
    (
        "Set the properties of the header.",
        "Legen Sie die Eigenschaften der Kopfzeile fest.",
    ),
    ("Inserts a footer.", "Fügt eine Fußzeile ein."),
    ("Removes the footer.", "Entfernt die Fußzeile."),
    ("Footer", "Fußzeile"),
    # the guides' headings: Nagios set up; Munin, written as it is wherever the memory has it
    ("12.4.2. Setting Up Nagios", "12.4.2. Nagios einrichten"),
    ("The Munin plugins", "Die Munin-Plugins"),
    (
        "Unlike Munin, Nagios needs no agent.",
        "Im Gegensatz zu Munin braucht Nagios keinen Agenten.",
    ),
    # the help's: a German target that writes an English noun as it is, and pictures
    ("Inserting Hyperlinks", "Hyperlinks einfügen"),
    ("Pictures and Charts", "Bilder und Diagramme"),
]
FLOOR = "The FLOOR function rounds a number up."
FOOTER = "Set the properties of the footer."


@pytest.fixture(scope="module")
def store_and_memory(tmp_path_factory, demo):  # type: ignore[no-untyped-def]
    with aligned_memory(tmp_path_factory.mktemp("lookup-tm"), demo, "help", TM) as found:
        yield found


def _options(memory, code_words: int = 3, words: int = 5) -> TranslateOptions:  # type: ignore[no-untyped-def]
    """One pair retrieved (m=1), so that only a lookup finds the others."""
    pieces = PieceOptions(
        m=1, repair=RepairOptions(0.5), code_word_lookups=code_words, word_lookups=words
    )
    return TranslateOptions(pieces=pieces, memory_ids=(memory.id,))


def test_the_memorys_name_for_a_new_function_is_looked_up_and_kept(store_and_memory, demo):  # type: ignore[no-untyped-def]
    """Retrieving one pair finds the CEILING sentence only; FLOOR looked up alone finds its
    heading, whose target says UNTERGRENZE, and the repair keeps that."""
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    query = demo.encode_source(FLOOR)
    pieces = translator.collect_pieces(query, _options(memory))
    assert [m.segment.source for m in pieces.matches] == [TM[0][0]]
    assert pieces.template is not None
    kept = "".join(pieces.template.tokens).replace("\u2581", " ")
    assert "UNTERGRENZE" in kept and "OBERGRENZE" not in kept.replace("UNTERGRENZE", "")
    # without the lookup the name is the model's to write, from the input's own word
    alone = translator.collect_pieces(query, _options(memory, code_words=0))
    assert alone.template is not None
    assert "UNTERGRENZE" not in "".join(alone.template.tokens)


def test_only_identifiers_and_names_no_pair_holds_are_missing(demo) -> None:  # type: ignore[no-untyped-def]
    source = demo.encode_source("The CEILING function of LibreOffice rounds 4.5 up.")
    pair = AlignedPair.build(1, source, demo.encode_target("x"), [])
    query = demo.encode_source("The FLOOR function of LibreOffice rounds 7.5 in OpenOffice.")
    assert missing_code_words(query, [pair]) == ["FLOOR", "OpenOffice"]
    assert missing_code_words(query, []) == ["FLOOR", "LibreOffice", "OpenOffice"]


def test_the_memorys_word_for_a_changed_one_becomes_a_piece(store_and_memory, demo):  # type: ignore[no-untyped-def]
    """Retrieving one pair finds the header's sentence only; "footer" looked up alone finds
    three pairs that write "Fußzeile" for it, which the repair's gap is then rewarded for,
    and writes."""
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    footer = tuple(demo.encode_target("Fußzeile"))
    query = demo.encode_source(FOOTER)
    pieces = translator.collect_pieces(query, _options(memory))
    assert [m.segment.source for m in pieces.matches] == [TM[4][0]]
    assert pieces.template is not None
    assert footer in pieces.ngrams
    # weighed as the match's own pieces (the default linear weighting: its similarity), times
    # the share of the three pairs that give it alone (the aligner may give one "ein" too)
    share = pieces.ngrams[footer] / pieces.matches[0].similarity
    assert share == pytest.approx(2 / 3) or share == pytest.approx(1.0)
    # it comes from the pairs that say it, not the one retrieved
    said_by = {s.source for s in store.get_segments(pieces.provenance[footer])}
    assert said_by <= {TM[5][0], TM[6][0], TM[7][0]}
    alone = translator.collect_pieces(query, _options(memory, words=0))
    assert footer not in alone.ngrams
    # with the paper's 1/0 reward the match's pieces score 1, so it scores its share
    binary = replace(_options(memory), pieces=replace(_options(memory).pieces, binary_reward=True))
    assert translator.collect_pieces(query, binary).ngrams[footer] == pytest.approx(share)
    [result] = translator.translate([FOOTER], _options(memory))
    assert result.translation == "Legen Sie die Eigenschaften der Fußzeile fest."


def test_missing_words_are_the_long_words_the_match_lacks(demo) -> None:  # type: ignore[no-untyped-def]
    """Words of four letters or more, each once, a function name too; not a number."""
    query = demo.encode_source("Set the footer of the LARGE page, the footer of 2024.")
    source = demo.encode_source("Set the properties of the header.")
    assert [w.text for w in missing_words(query, source)] == ["footer", "LARGE", "page"]


def test_a_translation_counts_the_pairs_that_align_the_word_alone(demo) -> None:  # type: ignore[no-untyped-def]
    """A target word aligned to the looked-up word and to another one says nothing of it."""
    source = demo.encode_source("Removes the footer.")
    target = demo.encode_target("Entfernt die Fußzeile.")
    word = SourceWord(tuple(demo.encode_source("footer")), "footer")
    at = source.index(word.tokens[0])
    starts = [i for i, t in enumerate(target) if t.startswith("\u2581Fu")]
    [fu] = starts
    ends = len(target) - 1  # the final "." is aligned to the source's
    span = range(fu, ends)
    links = [(at + k, t) for k in range(len(word.tokens)) for t in span]
    links.append((len(source) - 1, ends))
    alone = AlignedPair.build(1, source, target, links)
    again = AlignedPair.build(3, source, target, links)
    said, holding = translations(word, [alone, again])
    assert holding == 2
    assert said == {tuple(target[fu:ends]): [1, 3]}
    shared = AlignedPair.build(2, source, target, [*links, (0, fu)])
    said, holding = translations(word, [shared])
    assert (said, holding) == ({}, 1)


def test_only_translations_enough_pairs_agree_on_become_pieces() -> None:
    """Each piece with its share of the pairs and the first segment that gives it."""
    said = {("▁Fuß", "zeile"): [7, 8, 9], ("▁Seiten", "ende"): [6]}
    pieces = lookup_pieces(said, 4, max_n=4, least_share=0.4)
    assert pieces == {("▁Fuß",): (0.75, 7), ("zeile",): (0.75, 7), ("▁Fuß", "zeile"): (0.75, 7)}


def test_word_lookup_options_are_checked() -> None:
    with pytest.raises(InvalidInput):
        PieceOptions(word_lookups=-1)
    with pytest.raises(InvalidInput):
        PieceOptions(word_share=0.0)


def _kept(translator, demo, memory, query: str, match: str) -> str:  # type: ignore[no-untyped-def]
    """What the repair of `match`, the one pair retrieved for `query`, keeps."""
    pieces = translator.collect_pieces(demo.encode_source(query), _options(memory))
    assert [m.segment.source for m in pieces.matches] == [match]
    assert pieces.template is not None
    return "".join(pieces.template.tokens).replace("\u2581", " ")


def test_a_name_the_memory_writes_as_it_is_replaces_the_matchs(store_and_memory, demo):  # type: ignore[no-untyped-def]
    """ "Setting Up Munin" from Nagios's heading: Munin is written as it is wherever the memory
    has it, so the match takes it and leaves no gap ("Setze Munin einrichten" before); the
    help's "Pictures" is translated where the memory has it, so "Hyperlinks einfügen" does not
    become "Pictures einfügen" although its target writes its English noun as it is."""
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    munin = _kept(translator, demo, memory, "12.4.1. Setting Up Munin", "12.4.2. Setting Up Nagios")
    assert "Munin" in munin and "Nagios" not in munin
    kept = _kept(translator, demo, memory, "Inserting Pictures", "Inserting Hyperlinks")
    assert "Pictures" not in kept
    [result] = translator.translate(["12.4.1. Setting Up Munin"], _options(memory))
    assert result.translation == "12.4.1. Munin einrichten"


def test_a_word_is_written_as_is_where_every_pair_holding_it_writes_it() -> None:
    pairs = [
        (
            "Iceweasel (a version of Mozilla Firefox)",
            "Iceweasel (eine Version von Mozilla Firefox)",
        ),
        ("the Mozilla software", "der Mozilla-Software"),
        ("Mozilla's mail client", "Mozillas E-Mail-Programm"),
        ("a mozilla of a word", "ein Wort"),  # not the name: its case differs
    ]
    assert written_as_is("Mozilla", pairs)
    assert not written_as_is("Mozilla", [*pairs, ("Mozilla add-ons", "Erweiterungen")])
    assert not written_as_is("Mozilla", [("unrelated", "anders")])  # no pair holds it
