"""Target templates (a close match repaired): the automaton, and every search holding to it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tm_guide.config import BUNDLED_MODEL
from tm_guide.decoding import compiled, fused_engine
from tm_guide.decoding.ct2_engine import CT2StepDecoder
from tm_guide.decoding.search import SearchOptions, _finalize, beam_search, python_beam_search
from tm_guide.decoding.template import (
    CHARACTER,
    START,
    WORD,
    WORD_START,
    TargetTemplate,
    ahead_of,
    glues_on,
    word_open,
)
from tm_guide.errors import InvalidInput
from tm_guide.model import Bundle

from .helpers import batch_of, model_inputs, rewards_for, teacher_forced, template_variants

MAX_LENGTH = 24
END = 2


def test_a_template_allows_its_next_token_and_free_tokens_while_the_gap_lasts():
    template = TargetTemplate((5, 6), (0, 2, 1))
    row = np.zeros(10, dtype=np.float32)
    template.mask(START, row, END)  # no gap before the first token: only it
    assert np.isfinite(row).tolist() == [i == 5 for i in range(10)]
    state = template.advance(START, 5)
    assert state == (1, 0)
    row = np.zeros(10, dtype=np.float32)
    template.mask(state, row, END)  # a gap of 2: anything but </s>
    assert np.isfinite(row).tolist() == [i != END for i in range(10)]
    state = template.advance(template.advance(state, 7), 8)
    assert state == (1, 2)
    row = np.zeros(10, dtype=np.float32)
    template.mask(state, row, END)  # the gap is used up: the template's token
    assert np.isfinite(row).tolist() == [i == 6 for i in range(10)]
    state = template.advance(state, 6)
    row = np.arange(10, dtype=np.float32)
    template.mask(state, row, END)  # done, a gap of 1 left: anything, </s> included
    assert np.isfinite(row).all() and row[3] == 3
    row = np.zeros(10, dtype=np.float32)
    template.mask(template.advance(state, 9), row, END)  # nothing left but </s>
    assert np.isfinite(row).tolist() == [i == END for i in range(10)]
    assert template.follow([5, 7, 8, 6, 9]) == [0, None, None, 1, None]
    assert template.longest == 5


def test_a_word_begun_in_a_spent_gap_may_be_finished_for_overrun_tokens():
    continues = np.zeros(10, dtype=bool)
    continues[[7, 8]] = True  # tokens 7 and 8 continue a word; 9 starts one
    template = TargetTemplate((5, 6), (0, 1, 0), continues, overrun=2, joins=(False, True, True))
    state = template.advance(template.advance(START, 5), 9)
    assert state == (1, 1)  # the gap of 1 is spent, in the middle of the word 9 began
    for expected_state, allowed in [((1, 1), {6, 7, 8}), ((1, 2), {6, 7, 8}), ((1, 3), {6})]:
        assert state == expected_state
        row = np.full(10, -4.0, dtype=np.float32)
        row[[7, 8]] = -1.0  # the model would rather go on with the word
        template.mask(state, row, END)
        assert set(np.flatnonzero(np.isfinite(row)).tolist()) == allowed
        state = template.advance(state, 7 if state[1] == 1 else 8)
    empty = TargetTemplate((5, 6), (0, 1, 0), continues, overrun=2).advance(START, 5)
    row = np.zeros(10, dtype=np.float32)
    # a gap not begun: anything but </s> and a piece glued to the kept word before it
    template.mask((1, 0), row, END)
    assert empty == (1, 0) and set(np.flatnonzero(~np.isfinite(row)).tolist()) == {END, 7, 8}
    assert template.longest == 2 + 1 + 2 + 3  # tokens, gap, overrun, a character's last bytes


def test_a_spent_gap_does_not_lengthen_a_word_the_model_has_finished():
    """Past a spent gap, a token that continues a word is allowed only while the model gives
    such tokens at least the probability of those that start one: a model that wants a new
    word there ("des" then "Inhalts") must go on with the template, not glue "inhalts" on."""
    continues = np.zeros(10, dtype=np.uint8)
    continues[[7, 8]] = WORD
    template = TargetTemplate((5, 6), (0, 1, 0), continues, overrun=2)
    ending = np.full(10, -4.0, dtype=np.float32)
    ending[9] = -0.5  # a new word
    ending[[7, 8]] = -1.5
    template.mask((1, 1), ending, END)
    assert set(np.flatnonzero(np.isfinite(ending)).tolist()) == {6}
    # 0.6 for going on with the word against 0.4 for a new one (tokens 2, 4, 5, 6, 9)
    going_on = np.full(10, -np.inf, dtype=np.float32)
    going_on[[2, 4, 5, 6, 9]] = np.log(0.08)
    going_on[[7, 8]] = np.log(0.3)
    template.mask((1, 1), going_on, END)
    assert set(np.flatnonzero(np.isfinite(going_on)).tolist()) == {6, 7, 8}
    # a byte piece that continues a character counts with the word; a tie holds it open
    assert word_open(np.log(np.float32([0.5, 0.5])), np.uint8([WORD_START, CHARACTER]))
    assert not word_open(np.log(np.float32([0.6, 0.4])), np.uint8([WORD_START, CHARACTER]))


def test_the_end_of_the_output_does_not_close_a_word_the_model_would_go_on_with():
    """</s> is not a new word: past the last gap, a model that gives the end more than the
    word's next piece ("LXDE-Arbeit" then </s> over "sfläche") still finishes the word when it
    prefers that piece to any new word, and </s> stays allowed."""
    continues = np.zeros(10, dtype=np.uint8)
    continues[[7, 8]] = WORD
    template = TargetTemplate((5,), (0, 1), continues, overrun=2)
    state = template.advance(template.advance(START, 5), 9)
    assert state == (1, 1) and template.finishing_word(state)
    row = np.full(10, np.log(0.02), dtype=np.float32)
    row[END] = np.log(0.5)
    row[7] = np.log(0.3)  # 0.3 for the word's next piece, 0.14 for new words, 0.5 for </s>
    assert not word_open(row, continues)
    assert word_open(row, continues, END)
    template.mask(state, row, END)
    assert set(np.flatnonzero(np.isfinite(row)).tolist()) == {END, 7, 8}


def test_a_gap_that_owes_a_token_does_not_glue_it_onto_a_finished_word():
    """A gap that must hold two tokens makes the model write a second one: after a word the
    model has finished ("in", where it meant "im"), that is a new word, not "in" + "m"."""
    continues = np.zeros(10, dtype=np.uint8)
    continues[[7, 8]] = WORD
    template = TargetTemplate((5, 6), (0, 3, 0), continues, overrun=2, least=(0, 2, 0))
    state = template.advance(template.advance(START, 5), 9)
    assert state == (1, 1) and template.holds_word(state)
    finished = np.full(10, -4.0, dtype=np.float32)
    finished[6] = -0.5  # the template's next word, which the gap may not take yet
    finished[[7, 8]] = -1.5
    template.mask(state, finished, END)
    assert set(np.flatnonzero(np.isfinite(finished)).tolist()) == {0, 1, 3, 4, 5, 9}
    going_on = np.full(10, -4.0, dtype=np.float32)
    going_on[7] = -0.1
    template.mask(state, going_on, END)
    assert set(np.flatnonzero(np.isfinite(going_on)).tolist()) == {0, 1, 3, 4, 5, 7, 8, 9}
    # once the gap holds what it owes, the model's own choice again
    assert not template.holds_word((1, 2))
    # and before it holds any: the word before it is the template's (csrc/template.h alike)
    assert not template.holds_word((1, 0))


def test_a_gap_glues_nothing_onto_a_kept_word_or_a_closing_bracket():
    """A gap's first token starts a word after a kept word and after a closing bracket or
    quotation mark ("(Rad)s Winkel"), and may continue one after other punctuation ("13.11",
    "Kopf-/Fußzeile")."""
    assert [glues_on(t) for t in ["▁der", "zeile", ")", "»", "”", "▁(", ".", "-", "/"]] == [
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    tokens = ["▁im", "▁(", "R", "ad", ")", "."]
    index = {t: i for i, t in enumerate(tokens, start=3)} | {"s": 10}
    continues = np.zeros(11, dtype=np.uint8)
    continues[[5, 6, 10]] = WORD
    template = TargetTemplate.from_tokens(tokens, [0, 0, 0, 0, 0, 1, 0], index, continues)
    assert template is not None and template.joins == (False, True, False, True, True, True, False)
    row = np.zeros(11, dtype=np.float32)
    template.mask((5, 0), row, END)  # after ")": no "s" glued on
    assert not np.isfinite(row[10]) and np.isfinite(row[8])


def test_a_spent_gap_still_lets_a_character_be_finished():
    """Past the overrun only the template's token may come, and a byte piece that continues a
    character: a gap that ends inside a character has no valid UTF-8 way on."""
    continues = np.zeros(10, dtype=np.uint8)
    continues[7] = WORD
    continues[8] = CHARACTER
    template = TargetTemplate((5, 6), (0, 1, 0), continues, overrun=1)
    row = np.zeros(10, dtype=np.float32)
    template.mask((1, 2), row, END)
    assert set(np.flatnonzero(np.isfinite(row)).tolist()) == {6, 8}


def test_after_a_kept_lead_byte_only_the_characters_own_next_byte_may_come():
    """ "¶" is <0xC2> <0xB6>, both kept. A free continuation byte after the kept lead byte
    ("©" is <0xC2> <0xA9>) finished the character, leaving the kept <0xB6> a stray byte that
    no valid UTF-8 way on allows: the heading's search died with every hypothesis in it."""
    continues = np.zeros(10, dtype=np.uint8)
    continues[[6, 7, 8]] = WORD, CHARACTER, CHARACTER  # 6 a lead byte, 7 and 8 continuations
    template = TargetTemplate((5, 6, 7), (0, 2, 0, 0), continues, overrun=1)
    state = template.advance(template.advance(template.advance(START, 5), 9), 6)
    assert state == (2, 0)
    row = np.zeros(10, dtype=np.float32)
    template.mask(state, row, END)
    assert np.isfinite(row).tolist() == [i == 7 for i in range(10)]
    mask = template.row_mask(state, END)
    assert mask.classes == 0 and mask.allow == (7,)


def test_a_gap_owed_words_must_hold_one_before_the_template_goes_on():
    template = TargetTemplate((5, 6), (0, 2, 2), least=(0, 1, 1))
    state = template.advance(START, 5)
    row = np.zeros(10, dtype=np.float32)
    template.mask(state, row, END)  # the gap is empty: neither the next token nor </s>
    assert set(np.flatnonzero(~np.isfinite(row)).tolist()) == {6, END}
    assert template.advance(state, 6) == (1, 1)  # were it written, it is a free token
    state = template.advance(template.advance(state, 7), 6)
    assert state == (2, 0)
    row = np.zeros(10, dtype=np.float32)
    template.mask(state, row, END)  # the last gap owes one too: no </s> yet
    assert set(np.flatnonzero(~np.isfinite(row)).tolist()) == {END}
    with pytest.raises(InvalidInput):
        TargetTemplate((5, 6), (0, 2, 2), least=(0, 3, 1))


def test_a_gap_may_not_write_the_content_words_the_template_writes_next():
    tokens = ["▁das", "▁Werkzeug", "▁dieses", "▁Werkzeug", "s", "▁zu", "▁aktivieren", "."]
    index = {t: i for i, t in enumerate(dict.fromkeys(tokens), start=3)}
    template = TargetTemplate.from_tokens(tokens, [0, 0, 2, 0, 0, 0, 0, 0, 0], index, lookahead=2)
    assert template is not None
    werkzeug, dieses, aktivieren = index["▁Werkzeug"], index["▁dieses"], index["▁aktivieren"]
    # before "dieses" (k = 2): the next two words of four letters or more after it
    assert template.ahead[2] == tuple(sorted({werkzeug, aktivieren}))
    assert template.ahead[1] == tuple(sorted({dieses}))  # "Werkzeug" itself is the gap's end
    assert template.ahead[len(tokens)] == ()
    row = np.zeros(20, dtype=np.float32)
    template.mask((2, 0), row, END)
    assert not np.isfinite(row[[werkzeug, aktivieren, END]]).any()
    assert np.isfinite(row).sum() == 20 - 3


def test_a_long_word_is_a_content_word_by_its_letters_not_its_first_piece():
    # "▁Lib re O ff ic e": a gap wrote "LibreOffi" before the kept "LibreOffice", its first
    # piece having three letters; "▁Ge schützt en" starts with two, as too many words do
    tokens = ["▁im", "▁–", "▁Lib", "re", "O", "ff", "ic", "e", "▁Ge", "schützt", "en", "▁die"]
    ids = list(range(3, 3 + len(tokens)))
    ahead = ahead_of(tokens, ids, 3)
    assert ahead[1] == (ids[2],)  # before "–": "▁Lib"; not "▁Ge", nor "▁die" (three letters)
    assert ahead[0] == (ids[2],)


@pytest.mark.parametrize(
    ("tokens", "gaps"),
    [((), (0,)), ((5,), (0,)), ((5,), (0, -1)), ((END,), (0, 0)), ((99,), (0, 0))],
    ids=["empty", "gaps-short", "negative-gap", "end-token", "outside-vocab"],
)
def test_malformed_templates_are_refused(tokens, gaps):
    with pytest.raises(InvalidInput):
        TargetTemplate(tokens, gaps).check(vocab_size=10, end_id=END)


def test_a_template_of_a_token_outside_the_vocabulary_is_none():
    index = {"▁a": 3, "b": 4}
    assert TargetTemplate.from_tokens(["▁a", "b"], [0, 1, 0], index) == TargetTemplate(
        (3, 4), (0, 1, 0)
    )
    assert TargetTemplate.from_tokens(["▁a", "zz"], [0, 0, 0], index) is None


def _templates(bundle, inputs):  # type: ignore[no-untyped-def]
    """Per sentence: the native output with its second token left free (a gap of 2 there),
    none, and the native output kept whole with gaps of 1 everywhere."""
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    native = bundle.translator.translate_batch(inputs, beam_size=2, max_decoding_length=12)
    out: list[TargetTemplate | None] = []
    for i, result in enumerate(native):
        ids = [index[t] for t in result.hypotheses[0]]
        if i % 3 == 0 and len(ids) > 2:
            kept = ids[:1] + ids[2:]
            out.append(TargetTemplate(tuple(kept), (0, 2) + (0,) * (len(kept) - 1)))
        elif i % 3 == 1 or not ids:
            out.append(None)
        else:
            out.append(TargetTemplate(tuple(ids), (1,) * (len(ids) + 1)))
    return out


def _follows(template: TargetTemplate, output: tuple[int, ...]) -> bool:
    """The output holds every template token in order, with no more free tokens per gap than
    the gap allows."""
    which = template.follow(output)
    kept = [k for k in which if k is not None]
    if kept != list(range(len(template.tokens))):
        return False
    free = [0] * len(template.gaps)
    k = 0
    for w in which:
        if w is None:
            free[k] += 1
        else:
            k = w + 1
    return all(f <= g for f, g in zip(free, template.gaps, strict=True))


@pytest.mark.parametrize("lam", [0.0, 2.0])
def test_search_py_keeps_every_output_to_its_template(peaked_bundle, sentences, lam):
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences)
    templates = _templates(bundle, inputs)
    rewards = rewards_for(bundle, [["▁x", "y"]] * len(inputs))
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=lam, num_hypotheses=3)
    found = python_beam_search(decoder, inputs, options, rewards, templates=templates)
    for template, hypotheses in zip(templates, found, strict=True):
        assert hypotheses
        if template is not None:
            assert all(_follows(template, h.token_ids) for h in hypotheses)
            assert all(np.isfinite(h.score) for h in hypotheses)


@pytest.mark.parametrize(("lam", "held"), [(0.0, False), (2.0, False), (2.0, True), (6.0, True)])
def test_compiled_search_follows_templates_as_search_py_does(peaked_bundle, sentences, lam, held):
    """A batch with and without templates, a forced prefix on some, pieces rewarded (with
    `held`: the native outputs' own n-grams, which the templates hold, so that only a
    template's next token is rewarded for them): the compiled search keeps, closes and ranks
    the same hypotheses, bit for bit."""
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences)
    templates = _templates(bundle, inputs)
    native = bundle.translator.translate_batch(inputs, beam_size=2, max_decoding_length=12)
    pieces = [r.hypotheses[0] for r in native] if held else [["▁x", "y"]] * len(inputs)
    rewards = rewards_for(bundle, pieces, clipped=held)
    prefixes = [[9] if i % 2 else [] for i in range(len(inputs))]
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    options = SearchOptions(
        beam_size=4, max_length=MAX_LENGTH, lam=lam, num_hypotheses=2, reward_repeats=not held
    )
    caps = [MAX_LENGTH] * len(inputs)
    expected = python_beam_search(decoder, inputs, options, rewards, caps, prefixes, templates)
    closed = compiled.compiled_search(
        decoder, batch_of(inputs, rewards, caps, prefixes, templates), options
    )
    assert [_finalize(sentence, options) for sentence in closed] == expected
    for template, prefix, best in zip(templates, prefixes, expected, strict=True):
        if template is not None:
            assert _follows(template, best[0].token_ids[len(prefix) :])


WORDY = [
    "Open the spreadsheet and save the document.",
    "Select the paragraph formatting options.",
]


def _without_long_word(bundle, inputs):  # type: ignore[no-untyped-def]
    """Per sentence: the demo model's own output with its first word of three or more pieces
    dropped and a gap of one token left in its place, so that the model, writing that word
    again, runs out of gap in the middle of it."""
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    templates = []
    for result in bundle.translator.translate_batch(inputs, beam_size=4):
        tokens = result.hypotheses[0]
        starts = [i for i, t in enumerate(tokens) if t.startswith("▁")] + [len(tokens)]
        begin, end = next((a, b) for a, b in itertools.pairwise(starts) if b - a >= 3)
        kept = [index[t] for t in tokens[:begin] + tokens[end:]]
        gaps = [0] * (len(kept) + 1)
        gaps[begin] = 1
        templates.append(TargetTemplate(tuple(kept), tuple(gaps)))
    return templates


@pytest.mark.parametrize("lam", [0.0, 2.0])
def test_compiled_search_finishes_words_past_a_gap_as_search_py_does(lam):
    """Templates whose spent gap may finish a word (the vocabulary's continuation tokens, four
    tokens of overrun), with and without the template's next words forbidden in the gap, no
    piece glued to a kept word and a token owed in it: both searches keep, close and rank the
    same hypotheses, and the word the gap begins is written whole ("Tabellenkalkulation", not
    "Tabellen öffnen")."""
    bundle = Bundle.load(BUNDLED_MODEL, intra_threads=1)
    vocabulary = bundle.vocabularies.target
    inputs = model_inputs(bundle, WORDY)
    variants = template_variants(vocabulary, _without_long_word(bundle, inputs))
    rewards = rewards_for(bundle, [["▁Datei"]] * len(inputs))
    decoder = CT2StepDecoder(bundle.translator, vocabulary)
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=lam, num_hypotheses=2)
    caps = [MAX_LENGTH] * len(inputs)
    prefixes: list[list[int]] = [[] for _ in inputs]
    outputs = {}
    for name, templates in variants.items():
        expected = python_beam_search(decoder, inputs, options, rewards, caps, prefixes, templates)
        closed = compiled.compiled_search(
            decoder, batch_of(inputs, rewards, caps, prefixes, templates), options
        )
        assert [_finalize(sentence, options) for sentence in closed] == expected, name
        outputs[name] = [
            bundle.decode_target([vocabulary[t] for t in best[0].token_ids]) for best in expected
        ]
    assert "Tabellenkalkulation" in outputs["finishing"][0]
    assert "Tabellenkalkulation" not in outputs["plain"][0]


@pytest.mark.skipif(not compiled.available(), reason="the fused engine was not built")
def test_the_fused_engine_decodes_a_closed_template_to_the_template(sentences):
    """A template without gaps leaves one output: the fused engine returns it, scored as the
    model scores it, and a sentence decodes the same alone and beside others."""
    bundle = Bundle.load(BUNDLED_MODEL, intra_threads=1)
    decoder = fused_engine.FusedDecoder(bundle.path)
    inputs = model_inputs(bundle, sentences)
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    target = [index[t] for t in bundle.encode_target("Speichern Sie das Dokument.")]
    closed = TargetTemplate(tuple(target), (0,) * (len(target) + 1))
    open_end = TargetTemplate(tuple(target[:2]), (0, 0, 6))
    templates = [closed, None, open_end] + [None] * (len(inputs) - 3)
    options = SearchOptions(beam_size=5, max_length=40, lam=0.0)
    found = beam_search(decoder, inputs, options, templates=templates)
    assert list(found[0][0].token_ids) == target
    teacher = decoder.score(inputs[0], target)
    assert found[0][0].log_prob == pytest.approx(float(teacher.sum()), abs=1e-3)
    assert _follows(open_end, found[2][0].token_ids)
    native = bundle.translator.translate_batch(inputs[1:2], beam_size=5, max_decoding_length=40)
    assert [bundle.vocabularies.target[i] for i in found[1][0].token_ids] == native[0].hypotheses[0]
    alone = beam_search(decoder, inputs[2:3], options, templates=[open_end])
    assert alone[0] == found[2]


def test_a_template_shorter_than_min_length_is_refused(peaked_bundle, sentences):
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences[:1])
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    with pytest.raises(InvalidInput, match="min_length"):
        python_beam_search(
            decoder,
            inputs,
            SearchOptions(beam_size=2, max_length=10, min_length=3),
            templates=[TargetTemplate((9,), (0, 4))],
        )


@pytest.mark.parametrize("search", ["python", "compiled"])
def test_a_template_without_gaps_is_the_output_and_dead_rows_never_close(
    peaked_bundle, sentences, search
):
    """With no gap, one output is allowed and the beam's other rows are dead (-inf): they
    never close, so the search ends with the template, scored as the model scores it (with
    min_length 0: else the first step's softmax is taken without </s>)."""
    bundle = peaked_bundle
    inputs = model_inputs(bundle, sentences[:2])
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    target = [index[t] for t in bundle.encode_target("Öffnen Sie das Menü Tabelle.")]
    template = TargetTemplate(tuple(target), (0,) * (len(target) + 1))
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    options = SearchOptions(
        beam_size=4, max_length=MAX_LENGTH, lam=0.0, min_length=0, num_hypotheses=4
    )
    if search == "python":
        found = python_beam_search(decoder, inputs, options, templates=[template, None])
    else:
        closed = compiled.compiled_search(
            decoder,
            batch_of(inputs, [None, None], [MAX_LENGTH] * 2, [[], []], [template, None]),
            options,
        )
        found = [_finalize(sentence, options) for sentence in closed]
    assert [list(h.token_ids) for h in found[0]] == [target]  # the one output, no dead row
    expected = teacher_forced(decoder, inputs[0], target)
    assert found[0][0].log_prob == pytest.approx(float(expected.sum()), abs=1e-3)


def test_a_piece_the_template_holds_rewards_only_its_next_token():
    """In a gap, writing the template's own words again earns nothing; the template's next
    token keeps its reward."""
    from tm_guide.decoding.rewards import PieceReward

    template = TargetTemplate((5, 6, 7), (0, 2, 0, 0))
    table = PieceReward({(6,): 1.0, (5, 6): 1.0, (8,): 1.0, (5, 8): 0.5, (7,): 1.0})
    history = [[5]]  # in the gap before 6
    plain = table.step_dense(history)[0]
    held = table.step_dense(history, held=[(template.grams(4), template.next_token((1, 0)))])[0]
    slot = {int(t): i for i, t in enumerate(table.rewarded_ids)}
    assert plain[slot[6]] == held[slot[6]] == 2.0  # the next token, both pieces
    assert plain[slot[7]] == 1.0 and held[slot[7]] == 0.0  # held: later in the template
    assert plain[slot[8]] == held[slot[8]] == 1.5  # not the template's: rewarded in the gap
    assert template.next_token((3, 0)) == -1
    # the pieces reward the next token once the gap before it holds a free token, or where
    # there is no gap: leaving a gap empty earns nothing
    assert template.rewarded_next((0, 0)) == 5  # no gap before 5
    assert template.rewarded_next((1, 0)) == -1  # the gap before 6 is still empty
    assert template.rewarded_next((1, 1)) == 6
    assert template.rewarded_next((2, 0)) == 7


REPAIRS = [  # (source, TM target, the target's word to leave out: a gap of 3 there)
    (
        "Copies the selected object to the clipboard.",
        "Kopiert die ausgewählte Zeile in die Zwischenablage.",
        "▁Zeile",
    ),
    (
        "Data represents the array of data in the sample.",
        "Daten ist die Matrix der Daten aus der Stichprobe.",
        "▁ist",
    ),
    ("Deletes the selected object.", "Löscht die ausgewählte Zeile.", "▁Zeile"),
]


def _run_pieces(index, tokens, cut):  # type: ignore[no-untyped-def]
    """Every n-gram (n <= 4) of the runs before and after position `cut`, each limited to its
    count there (clipped pieces)."""
    from collections import Counter

    from tm_guide.decoding.rewards import PieceReward

    grams = Counter(
        tuple(run[i : i + n])
        for run in (tokens[:cut], tokens[cut + 1 :])
        for i in range(len(run))
        for n in range(1, 5)
        if i + n <= len(run)
    )
    return PieceReward.from_tokens(dict.fromkeys(grams, 1.0), index, limits=grams)


@pytest.mark.parametrize("search", ["python", "compiled"])
def test_held_pieces_reward_no_free_token_in_any_search(search):
    """The TM target's pieces on either side of the left-out word rewarded, as Algorithm 1
    collects them (lambda 6, clipped): without the rule a gap is filled with the template's own
    later words; with it both searches agree, bit for bit, and no gap says a template word."""
    from unittest import mock

    from tm_guide.decoding import rewards as reward_module

    bundle = Bundle.load(BUNDLED_MODEL, intra_threads=1)
    index = {t: i for i, t in enumerate(bundle.vocabularies.target)}
    inputs = model_inputs(bundle, [source for source, _, _ in REPAIRS])
    templates, targets = [], []
    for _, target, word in REPAIRS:
        tokens = bundle.encode_target(target)
        cut = tokens.index(word)
        kept = tokens[:cut] + tokens[cut + 1 :]
        gaps = [0] * (len(kept) + 1)
        gaps[cut] = 3
        templates.append(TargetTemplate.from_tokens(kept, gaps, index))
        targets.append(tokens)
    rewards = [
        _run_pieces(index, tokens, tokens.index(word))
        for tokens, (_, _, word) in zip(targets, REPAIRS, strict=True)
    ]
    decoder = CT2StepDecoder(bundle.translator, bundle.vocabularies.target)
    options = SearchOptions(beam_size=4, max_length=40, lam=6.0, reward_repeats=False)
    caps = [40] * len(inputs)

    def run(which):  # type: ignore[no-untyped-def]
        if which == "python":
            return python_beam_search(decoder, inputs, options, rewards, caps, None, templates)
        closed = compiled.compiled_search(
            decoder, batch_of(inputs, rewards, caps, [[]] * len(inputs), templates), options
        )
        return [_finalize(sentence, options) for sentence in closed]

    found = run(search)
    assert found == run("python")
    with mock.patch.object(reward_module.PieceReward, "_without_held", lambda s, c, d, h: d):
        stuffed = run("python")
    assert stuffed != found  # the rule changes what the gaps hold
    for template, best in zip(templates, found, strict=True):
        assert _follows(template, best[0].token_ids)
        kept = template.tokens
        assert len(best[0].token_ids) - len(kept) <= 3
        which = template.follow(best[0].token_ids)
        free = [t for t, k in zip(best[0].token_ids, which, strict=True) if k is None]
        assert not set(free) & set(kept)
