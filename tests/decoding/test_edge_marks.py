"""A heading's pilcrow, which the demo vocabulary spells in bytes, through every path that
translates: the model reads the heading without it and the translation gets it back, once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.engines import engine_spec
from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
from tm_guide.decoding.search import SearchOptions, beam_search
from tm_guide.decoding.template import TargetTemplate
from tm_guide.model.unguided import UnguidedOptions, translate_lines
from tm_guide.pieces import PieceOptions
from tm_guide.pieces.repair import RepairOptions

from .helpers import aligned_memory

# headings of the Debian manuals, as their HTML writes them (the anchor's pilcrow last)
TM = [
    ("4.6. The Debian archive¶", "4.6. Das Debian-Archiv¶"),
    ("5.12. Package Salvaging¶", "5.12. Pakete bergen¶"),
    ("5.14.2.5. Details¶", "5.14.2.5. Einzelheiten¶"),
    ("4.3. Documentation¶", "4.3. Dokumentation¶"),
]


@pytest.fixture(scope="module")
def store_and_memory(tmp_path_factory, demo):  # type: ignore[no-untyped-def]
    with aligned_memory(tmp_path_factory.mktemp("edges-tm"), demo, "docs", TM) as found:
        yield found


def _options(memory) -> TranslateOptions:  # type: ignore[no-untyped-def]
    return TranslateOptions(
        search=SearchOptions(beam_size=5, lam=6.0, reward_repeats=False),
        pieces=PieceOptions(m=5, clipped=True, repair=RepairOptions(0.5)),
        engine=EngineOptions(engine="fused"),
        memory_ids=(memory.id,),
        return_unguided=True,
    )


def test_the_bundle_cuts_only_what_its_vocabulary_spells_in_bytes(demo) -> None:  # type: ignore[no-untyped-def]
    assert demo.edges("5.12. Package Salvaging¶").trail == "¶"
    assert demo.edges("🡆 Next").lead == "🡆 "
    assert not demo.edges("Documentation:").cut  # the colon has a piece
    assert not demo.edges("Größe").cut
    assert demo.mark_pieces(demo.edges("Details¶")) == {"<0xC2>", "<0xB6>"}


def test_a_guided_and_an_unguided_heading_end_with_the_pilcrow_once(store_and_memory, demo):  # type: ignore[no-untyped-def]
    """Read with its pilcrow, the demo model put a colon in its place ("Außerdem-date:"); the
    pieces that write it are left out too, as they would put it where the model likes."""
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    options = _options(memory)
    [prepared] = translator.prepare(["5.14.2.1. Out-of-date¶"], options)
    pilcrow = {translator.token_to_id["<0xC2>"], translator.token_to_id["<0xB6>"]}
    assert "<0xB6>" in prepared.tokens  # the pieces are the memory's, pilcrow and all
    assert prepared.decoded == demo.encode_source("5.14.2.1. Out-of-date")
    assert prepared.reward is not None and prepared.reward.ngrams
    assert all(pilcrow.isdisjoint(gram) for gram in prepared.reward.ngrams)
    [result] = translator.translate(["5.14.2.1. Out-of-date¶"], options)
    assert result.guided and result.repaired_segment is None
    for text in (result.translation, result.unguided_translation):
        assert text is not None and text.startswith("5.14.2")
        assert text.endswith("¶") and text.count("¶") == 1 and ":" not in text


def test_a_repaired_heading_keeps_its_targets_pilcrow_once(store_and_memory, demo):  # type: ignore[no-untyped-def]
    store, memory = store_and_memory
    [result] = GuidedTranslator(demo, store).translate(
        ["4.6. The Debian archives¶"], _options(memory)
    )
    assert result.repaired_segment is not None
    assert result.translation.startswith("4.6. Das Debian-Archiv")
    assert result.translation.endswith("¶") and result.translation.count("¶") == 1
    # its template keeps no pilcrow: the model, reading none, is not made to write one
    [prepared] = GuidedTranslator(demo, store).prepare(
        ["4.6. The Debian archives¶"], _options(memory)
    )
    assert prepared.template is not None and prepared.pieces.template is not None
    assert "<0xB6>" not in prepared.pieces.template.tokens


def test_tm_guide_translate_without_a_memory_puts_the_marks_back(demo) -> None:  # type: ignore[no-untyped-def]
    heading, arrow = translate_lines(demo, ["4.3. Documentation¶", "🡆 Next"], UnguidedOptions())
    assert heading.startswith("4.3. Dokumentation") and heading.endswith("¶")
    assert heading.count("¶") == 1 and ":" not in heading
    assert arrow.startswith("🡆 ") and arrow.count("🡆") == 1


@pytest.mark.skipif(not compiled.available(), reason="the compiled search is not built")
def test_a_template_ending_in_the_pilcrow_is_searched_alike_in_python_and_compiled(
    store_and_memory, demo
):  # type: ignore[no-untyped-def]
    """A template that keeps the pilcrow's two bytes, searched for the heading read without
    it: the model wanted another character after the kept lead byte, and both searches found
    no output until the template let nothing but its own next byte follow (template.py)."""
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    options = _options(memory)
    heading = "4.6. The Debian archives¶"
    kept = translator.collect_pieces(demo.encode_source(heading), options).template
    assert kept is not None and kept.tokens[-2:] == ("<0xC2>", "<0xB6>")
    template = TargetTemplate.from_tokens(
        kept.tokens,
        kept.gaps,
        translator.token_to_id,
        translator.continues,
        kept.overrun,
        kept.lookahead,
        kept.least,
    )
    assert template is not None
    search = replace(options.search, max_length=demo.decoding_length(options.search.max_length))
    decoder = translator.step_decoder(engine_spec("ct2").stepper, options)
    found = [
        beam_search(
            decoder,
            [demo.source_input(demo.encode_source("4.6. The Debian archives"))],
            search,
            [None],
            max_lengths=[template.longest + 1],
            templates=[template],
            in_python=in_python,
        )
        for in_python in (True, False)
    ]
    assert found[0] == found[1] and found[0][0]
    tokens = [translator.target_vocabulary[t] for t in found[0][0][0].token_ids]
    assert tokens[-2:] == ["<0xC2>", "<0xB6>"]
