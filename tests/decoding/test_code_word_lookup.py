"""A new function name the retrieved pairs do not hold, looked up alone in a real memory."""

from __future__ import annotations

import pytest

from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions
from tm_guide.pieces import PieceOptions
from tm_guide.pieces.code_words import missing_code_words
from tm_guide.pieces.repair import RepairOptions

from .helpers import aligned_memory

# the help's pages: a sentence on CEILING, and FLOOR's own heading elsewhere in the memory
TM = [
    (
        "The CEILING function rounds a number up.",
        "Die Funktion OBERGRENZE rundet eine Zahl auf.",
    ),
    ("FLOOR function", "Funktion UNTERGRENZE"),
    ("Rounds a number down.", "Rundet eine Zahl ab."),
    ("Opens the selected file.", "Öffnet die ausgewählte Datei."),
]
QUERY = "The FLOOR function rounds a number up."


@pytest.fixture(scope="module")
def store_and_memory(tmp_path_factory, demo):  # type: ignore[no-untyped-def]
    with aligned_memory(tmp_path_factory.mktemp("lookup-tm"), demo, "help", TM) as found:
        yield found


def _pieces(store, memory, demo, lookups: int):  # type: ignore[no-untyped-def]
    options = TranslateOptions(
        pieces=PieceOptions(m=1, repair=RepairOptions(0.5), code_word_lookups=lookups),
        memory_ids=(memory.id,),
    )
    return GuidedTranslator(demo, store).collect_pieces(demo.encode_source(QUERY), options)


def test_the_memorys_name_for_a_new_function_is_looked_up_and_kept(store_and_memory, demo):  # type: ignore[no-untyped-def]
    """Retrieving one pair (m=1) finds the CEILING sentence only; FLOOR looked up alone finds
    its heading, whose target says UNTERGRENZE, and the repair keeps that."""
    store, memory = store_and_memory
    pieces = _pieces(store, memory, demo, 3)
    assert [m.segment.source for m in pieces.matches] == [TM[0][0]]
    assert pieces.template is not None
    kept = "".join(pieces.template.tokens).replace("\u2581", " ")
    assert "UNTERGRENZE" in kept and "OBERGRENZE" not in kept.replace("UNTERGRENZE", "")
    # without the lookup the name is the model's to write, from the input's own word
    alone = _pieces(store, memory, demo, 0)
    assert alone.template is not None
    assert "UNTERGRENZE" not in "".join(alone.template.tokens)


def test_only_identifiers_and_names_no_pair_holds_are_missing(demo) -> None:  # type: ignore[no-untyped-def]
    from tm_guide.pieces.collect import AlignedPair

    source = demo.encode_source("The CEILING function of LibreOffice rounds 4.5 up.")
    pair = AlignedPair.build(1, source, demo.encode_target("x"), [])
    query = demo.encode_source("The FLOOR function of LibreOffice rounds 7.5 in OpenOffice.")
    assert missing_code_words(query, [pair]) == ["FLOOR", "OpenOffice"]
    assert missing_code_words(query, []) == ["FLOOR", "LibreOffice", "OpenOffice"]
