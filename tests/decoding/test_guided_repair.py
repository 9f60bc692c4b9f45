"""A close match repaired end to end: a real store, the demo model, every step engine."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tm_guide.decoding import compiled
from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
from tm_guide.decoding.search import SearchOptions
from tm_guide.pieces import PieceOptions
from tm_guide.pieces.choice import ChoiceOptions
from tm_guide.pieces.repair import RepairOptions

from .helpers import aligned_memory, teacher_forced

TM = [
    (
        "Copies the selected row to the clipboard.",
        "Kopiert die ausgewählte Zeile in die Zwischenablage.",
    ),
    (
        "Choose Format - Paragraph - Borders tab.",
        "Wählen Sie Format – Absatz… – Register: Umrandung.",
    ),
    ("Deletes the selected row.", "Löscht die ausgewählte Zeile."),
    ("Copies the selected text.", "Kopiert den ausgewählten Text."),
    ("Choose Format - Paragraph.", "Wählen Sie Format – Absatz…"),
    ("Inserts a new row.", "Fügt eine neue Zeile ein."),
]


@pytest.fixture(scope="module")
def store_and_memory(tmp_path_factory, demo):  # type: ignore[no-untyped-def]
    with aligned_memory(tmp_path_factory.mktemp("repair-tm"), demo, "help", TM) as found:
        yield found


def _options(memory, engine: str, threshold: float | None) -> TranslateOptions:  # type: ignore[no-untyped-def]
    return TranslateOptions(
        search=SearchOptions(beam_size=5, lam=8.0, reward_repeats=False),
        pieces=PieceOptions(m=5, clipped=True, repair=RepairOptions(threshold, 1, 1)),
        engine=EngineOptions(engine=engine),
        memory_ids=(memory.id,),
        return_unguided=True,
    )


@pytest.mark.parametrize("engine", ["fused", "torch", "ct2", "rerank"])
def test_a_close_match_is_repaired_and_keeps_its_own_characters(store_and_memory, demo, engine):  # type: ignore[no-untyped-def]
    if engine == "torch":
        pytest.importorskip("torch")
    if engine == "fused" and not compiled.available():
        pytest.skip("the fused engine was not built (no C++ compiler)")
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    sentences = [
        "Copies the selected object to the clipboard.",
        "Choose Format - Paragraph - Borders.",
    ]
    results = translator.translate(sentences, _options(memory, engine, 0.7))
    segments = {s.source: s for s in store.iter_segments(memory)}
    row, borders = results
    assert row.guided and row.repaired_segment == segments[TM[0][0]].id
    assert row.translation.startswith("Kopiert die ausgewählte ")
    assert row.translation.endswith(" in die Zwischenablage.")
    assert "Zeile" not in row.translation  # the word aligned to "row" was rewritten
    # the kept tokens are written in the TM target's own characters: "…", which the model's
    # normalizer turns into "..." (the unguided output cannot hold it)
    assert borders.repaired_segment == segments[TM[1][0]].id
    assert borders.translation.startswith("Wählen Sie Format – Absatz… –")
    assert "…" not in (borders.unguided_translation or "")
    for result in results:
        assert result.offsets is not None and result.offsets[-1] == len(result.translation)
        assert len(result.offsets) == len(result.tokens) + 1


def test_without_a_threshold_or_below_it_nothing_is_repaired(store_and_memory, demo):  # type: ignore[no-untyped-def]
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    sentence = ["Copies the selected object to the clipboard."]
    plain = translator.translate(sentence, _options(memory, "auto", None))
    high = translator.translate(sentence, _options(memory, "auto", 0.95))
    assert plain[0].repaired_segment is None and high[0].repaired_segment is None
    assert plain[0].translation == high[0].translation
    assert plain[0].offsets is None


def test_lambda_zero_is_native_search_even_with_a_template(store_and_memory, demo):  # type: ignore[no-untyped-def]
    """Guidance off is the model alone: the template that came with the pieces is not used."""
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    options = _options(memory, "auto", 0.7)
    sentence = "Deletes the selected object."
    [result] = translator.translate(
        [sentence], replace(options, search=replace(options.search, lam=0.0))
    )
    assert not result.guided and result.repaired_segment is None
    native = demo.translator.translate_batch(
        [demo.source_input(demo.encode_source(sentence))], beam_size=5
    )
    native_text = demo.decode_target(native[0].hypotheses[0])
    assert result.translation == demo.set_right(sentence, native_text)[-1].text
    [repaired] = translator.translate([sentence], options)
    assert repaired.repaired_segment is not None
    assert repaired.translation.startswith("Löscht die ausgewählte")


@pytest.mark.parametrize("engine", ["fused", "ct2"])
def test_a_close_match_gives_four_candidates_scored_by_the_model(store_and_memory, demo, engine):  # type: ignore[no-untyped-def]
    """The match as it is (scored by forced decoding of its target: what the model gives each
    of its tokens), the repaired match, the guided and the unguided translation; the biases
    decide which is served, and the result says so."""
    if engine == "fused" and not compiled.available():
        pytest.skip("the fused engine was not built (no C++ compiler)")
    store, memory = store_and_memory
    translator = GuidedTranslator(demo, store)
    sentence = "Copies the selected object to the clipboard."
    options = replace(
        _options(memory, engine, 0.5), return_unguided=False, choice=ChoiceOptions(0.5)
    )
    (plain,) = translator.translate([sentence], replace(options, choice=ChoiceOptions()))
    assert plain.choice is None
    (result,) = translator.translate([sentence], options)
    choice = result.choice
    assert choice is not None
    candidates = {c.kind: c for c in choice.candidates}
    assert set(candidates) == {"match", "repaired", "guided", "unguided"}
    assert candidates["match"].text == TM[0][1]
    assert candidates["repaired"].text == plain.translation
    # the match's score is the model's own, teacher-forced: mean log-prob over its tokens
    decoder = translator.step_decoder(engine, options)
    target = [translator.token_to_id[t] for t in demo.encode_target(TM[0][1])]
    source = demo.source_input(demo.encode_source(sentence))
    forced = teacher_forced(decoder, source, target)
    assert candidates["match"].score == pytest.approx(forced.sum() / len(forced), abs=1e-3)
    # biases 0: the best score is served, which the beam search's own output always has
    assert choice.chosen.kind == "unguided"
    assert result.translation == candidates["unguided"].text and not result.guided
    assert result.repaired_segment is None
    # a bias on the match that outweighs every difference serves the match verbatim
    trusted = replace(options, choice=ChoiceOptions(0.5, match=100.0))
    (served,) = translator.translate([sentence], trusted)
    assert served.choice is not None and served.choice.chosen.kind == "match"
    assert served.translation == TM[0][1]
    # below the threshold nothing is compared
    (far,) = translator.translate([sentence], replace(options, choice=ChoiceOptions(0.95)))
    assert far.choice is None and far.translation == plain.translation


def test_tm_guide_translate_with_a_memory_repairs_as_the_server_does(  # type: ignore[no-untyped-def]
    tmp_path, monkeypatch, capsys, demo
):
    """`tm-guide translate --memory` decodes each line with the card's guidance, as the library
    does with Guidance.resolve(card) (here the demo card's repair of a close match); --lambda 0
    is the model alone, as without a memory; a --lambda without a memory is refused."""
    from tm_guide.cli import main
    from tm_guide.decoding.guidance import Guidance
    from tm_guide.store import Store

    monkeypatch.delenv("TM_GUIDE_INDEX_DIR", raising=False)
    url = f"sqlite:///{tmp_path / 'tm.sqlite'}"
    pairs = tmp_path / "tm.tsv"
    pairs.write_text("".join(f"{s}\t{t}\n" for s, t in TM), encoding="utf-8")
    sentences = ["Copies the selected object to the clipboard.", "Click OK."]
    lines = tmp_path / "in.txt"
    lines.write_text("".join(f"{s}\n" for s in sentences), encoding="utf-8")
    assert main(["--db", url, "memory", "create", "help", "en", "de"]) == 0
    assert main(["--db", url, "import", "help", str(pairs)]) == 0
    capsys.readouterr()

    assert main(["--db", url, "translate", "--memory", "help", str(lines), "--no-progress"]) == 0
    guided = capsys.readouterr().out.splitlines()
    with Store.open(url, tmp_path / "tm.sqlite.index") as store:
        memory = store.get_memory("help")
        options = Guidance.resolve(demo.card).apply(
            TranslateOptions(memory_ids=(memory.id,), max_length_ratio=2.0)
        )
        expected = GuidedTranslator(demo, store).translate(sentences, options)
    assert guided == [r.translation for r in expected]
    assert expected[0].repaired_segment is not None  # the card repairs from 0.5

    plain_args = ["--db", url, "translate", str(lines), "--no-progress"]
    assert main(plain_args) == 0
    plain = capsys.readouterr().out.splitlines()
    zero = ["--db", url, "translate", "--memory", "help", "--lambda", "0", str(lines)]
    assert main([*zero, "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines() == plain
    assert main([*plain_args, "--lambda", "2"]) == 1
    assert "--memory" in capsys.readouterr().err


def test_a_match_whose_code_word_changed_keeps_its_own_characters(tmp_path, demo):  # type: ignore[no-untyped-def]
    """A code word the input changes is changed in the match (tm_guide.pieces.code_words), so
    the match's pieces are no longer the target's at their positions; the kept ones still are,
    in order, and keep the target's "…" (the normalizer's "..." otherwise)."""
    memory_pairs = [
        ("Run the COPY command…", "Führen Sie den Befehl COPY aus…"),
        ("Run the command.", "Führen Sie den Befehl aus."),
        ("Copies the selected text.", "Kopiert den ausgewählten Text."),
    ]
    with aligned_memory(tmp_path, demo, "code", memory_pairs) as (store, memory):
        translator = GuidedTranslator(demo, store)
        [result] = translator.translate(["Run the MOVE command…"], _options(memory, "auto", 0.5))
    assert result.repaired_segment is not None
    assert "MOVE" in result.translation and "COPY" not in result.translation
    assert result.translation.endswith("…"), result.translation


def _repaired_by_the_card(tmp_path, demo, pairs, sentence):  # type: ignore[no-untyped-def]
    """`sentence` translated as the server does (the card's guidance) with a memory of
    `pairs` (and one unrelated pair, so that the aligner has more than one)."""
    from tm_guide.decoding.guidance import Guidance

    pairs = [*pairs, ("Copies the selected text.", "Kopiert den ausgewählten Text.")]
    with aligned_memory(tmp_path, demo, "card", pairs) as (store, memory):
        translator = GuidedTranslator(demo, store)
        options = Guidance.resolve(demo.card).apply(TranslateOptions(memory_ids=(memory.id,)))
        [result] = translator.translate([sentence], options)
    assert result.repaired_segment is not None
    return result


def test_nothing_is_written_on_to_a_kept_part_of_a_word(tmp_path, demo):  # type: ignore[no-untyped-def]
    """'"pen.*"' of the match becomes '"pen"': the target's '".*stift"' loses ".*" and keeps
    "stift" (aligned to the unchanged "pen"). No room opens before it, where whatever the model
    wrote ("P", "pen") was glued on to it: '"Pstift"'."""
    match = (
        '=AVERAGEIFS(C2:C6;A2:A6;"pen.*";B2:B6)',
        '=MITTELWERTWENNS(C2:C6;A2:A6;".*stift";B2:B6)',
    )
    result = _repaired_by_the_card(tmp_path, demo, [match], '=AVERAGEIFS(C2:C6;A2:A6;"pen";B2:B6)')
    assert result.translation == '=MITTELWERTWENNS(C2:C6;A2:A6;"stift";B2:B6)'


def test_a_function_name_that_loses_its_suffix_is_repaired(tmp_path, demo):  # type: ignore[no-untyped-def]
    """ "PERCENTILE" against "PERCENTILE.INC": the dot parts the name, so the two share a word
    and the match is repaired ("QUANTIL.INKL" less ".INKL"); taken as one word they shared
    none, and the pieces alone wrote "ANTILLE"."""
    pairs = [("PERCENTILE.INC", "QUANTIL.INKL"), ("PERCENTILE.EXC", "QUANTIL.EXKL")]
    result = _repaired_by_the_card(tmp_path, demo, pairs, "PERCENTILE")
    assert result.translation == "QUANTIL"


def test_a_changed_code_word_leaves_no_mark_attached(tmp_path, demo):  # type: ignore[no-untyped-def]
    """Where the match target writes a joining mark with no space after it ("=" of
    "=KALENDERWOCHE"), what the model writes there stays on it (Bundle.render_target). The
    "." of "6.3.4.3." is no such mark where the code word changed ("4.3" -> "4.2"): the kept
    pieces are found again in the target, and its "." before "3" is not the heading's last."""
    match = ("6.3.4.3. Manual Partitioning", "6.3.4.3. Manuelle Partitionierung")
    result = _repaired_by_the_card(tmp_path, demo, [match], "6.3.4.2. Guided Partitioning")
    assert result.translation.startswith("6.3.4.2. "), result.translation
    assert result.translation.endswith(" Partitionierung")
