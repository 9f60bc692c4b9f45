"""Byte-fallback pieces only in valid UTF-8 order, in the Python search and the compiled one
alike: a lead byte admits only its continuation bytes, a stray continuation byte never comes,
and nothing is closed half-way through a character."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tm_guide.decoding.ct2_engine import CT2StepDecoder
from tm_guide.decoding.search import SearchOptions, beam_search, python_beam_search
from tm_guide.decoding.utf8 import Utf8Rule

MAX_LENGTH = 12


def test_the_rule_reads_the_state_off_the_last_pieces() -> None:
    ids = list(range(256))  # piece i is byte i
    rule = Utf8Rule(ids, 300)
    assert rule.pending([0x41]) == (0, 0, 0)
    assert rule.pending([0xC3]) == (1, 0x80, 0xBF)
    assert rule.pending([0xE0]) == (2, 0xA0, 0xBF)  # no overlong form
    assert rule.pending([0xED, 0x80]) == (1, 0x80, 0xBF)
    assert rule.pending([0xED]) == (2, 0x80, 0x9F)  # no surrogate
    assert rule.pending([0xF0, 0x90, 0x80]) == (1, 0x80, 0xBF)
    assert rule.pending([0xE2, 0x82, 0xAC]) == (0, 0, 0)  # "€" is whole
    assert rule.pending([299]) == (0, 0, 0)  # not a byte piece
    log_probs = np.zeros(300, dtype=np.float32)
    rule.mask([0xC3], log_probs, last_step=False)
    assert np.isfinite(log_probs).nonzero()[0].tolist() == list(range(0x80, 0xC0))
    log_probs = np.zeros(300, dtype=np.float32)
    rule.mask([0x41], log_probs, last_step=True)
    dead = set(np.isinf(log_probs).nonzero()[0].tolist())
    assert dead == set(range(0x80, 0xC0)) | {0xC0, 0xC1} | set(range(0xF5, 0x100)) | set(
        range(0xC2, 0xF5)
    )
    assert Utf8Rule.for_vocabulary([-1] * 256, 300) is None


class PretendBytes(CT2StepDecoder):
    """The tiny model's decoder, some of whose pieces are declared byte pieces: what the model
    prefers is then an invalid UTF-8 sequence, which the rule must not let through."""

    declared: dict[int, int] = {}

    @property
    def byte_ids(self) -> list[int]:
        ids = [-1] * 256
        for token, byte in self.declared.items():
            ids[byte] = token
        return ids


def _valid(tokens: list[int], declared: dict[int, int]) -> bool:
    data = bytes(declared[t] for t in tokens if t in declared)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("beam", [1, 4])
def test_both_searches_keep_declared_bytes_valid_and_agree(tiny_bundle, sentences, beam) -> None:
    inputs = [tiny_bundle.source_input(tiny_bundle.encode_source(s)) for s in sentences]
    plain = CT2StepDecoder(tiny_bundle.translator, tiny_bundle.vocabularies.target)
    options = SearchOptions(beam_size=beam, max_length=MAX_LENGTH, lam=0)
    native = python_beam_search(plain, inputs, options)
    first, second = native[0][0].token_ids[0], native[0][0].token_ids[1]
    spare = next(
        t for t in range(plain.vocab_size) if t not in (first, second, plain.end_id, 0, 1, 2)
    )
    # the model's own first two pieces become a lead byte then a byte that cannot follow it
    PretendBytes.declared = {first: 0xC3, second: 0x41, spare: 0xA9}
    assert not _valid([first, second], PretendBytes.declared)
    decoder = PretendBytes(tiny_bundle.translator, tiny_bundle.vocabularies.target)
    reference = python_beam_search(decoder, inputs, options)
    compiled = beam_search(decoder, inputs, options)
    for ours, theirs in zip(reference, compiled, strict=True):
        assert [h.token_ids for h in ours] == [h.token_ids for h in theirs]
        assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-5)
        for hypothesis in ours:
            assert _valid(list(hypothesis.token_ids), PretendBytes.declared)
    assert reference[0][0].token_ids[:2] != (first, second)  # the model's choice was refused


def test_an_invalid_output_of_ctranslate2s_own_search_is_searched_again(
    tiny_bundle, sentences
) -> None:
    """A sentence without TM pieces goes to CTranslate2's own search, which takes no per-step
    rule: where its output is not valid UTF-8, the engine's own search redoes it at lambda 0
    under the rule, and that is what the sentence gets."""
    from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions

    plain = CT2StepDecoder(tiny_bundle.translator, tiny_bundle.vocabularies.target)
    inputs = [tiny_bundle.source_input(tiny_bundle.encode_source(s)) for s in sentences[:1]]
    options = SearchOptions(beam_size=4, max_length=MAX_LENGTH, lam=0)
    first, second = python_beam_search(plain, inputs, options)[0][0].token_ids[:2]
    spare = next(
        t for t in range(plain.vocab_size) if t not in (first, second, plain.end_id, 0, 1, 2)
    )
    declared = {first: 0xC3, second: 0x41, spare: 0xA9}

    class Declared(PretendBytes):
        pass

    Declared.declared = declared
    ids = [-1] * 256
    for token, byte in declared.items():
        ids[byte] = token

    class DeclaredTranslator(GuidedTranslator):
        def utf8_rule(self) -> Utf8Rule | None:
            return Utf8Rule(ids, plain.vocab_size)

        def step_decoder(self, engine, options):  # type: ignore[no-untyped-def]
            return Declared(tiny_bundle.translator, tiny_bundle.vocabularies.target)

    translator = DeclaredTranslator(tiny_bundle)
    translate = TranslateOptions(search=SearchOptions(beam_size=4, max_length=MAX_LENGTH))
    (result,) = translator.translate(sentences[:1], translate)
    assert not result.guided  # no pieces: CTranslate2's own search, then the redo
    expected = python_beam_search(
        Declared(tiny_bundle.translator, tiny_bundle.vocabularies.target),
        inputs,
        replace(translate.search, lam=0.0),
    )[0][0]
    produced = [translator.token_to_id[t] for t in result.tokens]
    assert produced == [t for t in expected.token_ids if t != plain.end_id]
    assert _valid(produced, declared) and produced[:2] != [first, second]
