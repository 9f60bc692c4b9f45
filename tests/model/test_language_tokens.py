"""A multilingual model's language tokens: found by each family's shape, matched to memory tags."""

from __future__ import annotations

import pytest

from tm_guide.errors import InvalidInput
from tm_guide.model.language_tokens import find_language_tokens, token_for

M2M100 = "M2M100ForConditionalGeneration"
MBART = "MBartForConditionalGeneration"


def test_each_familys_token_shape_is_read_as_a_language_tag() -> None:
    vocabulary = ["__de__", "__en__", "▁Die", "deu_Latn", "zho_Hant", "de_DE", "__init__"]
    assert find_language_tokens(M2M100, vocabulary) == {
        "__de__": "de",
        "__en__": "en",
        "deu_Latn": "de-Latn",  # NLLB is an M2M100 model with FLORES codes
        "zho_Hant": "zh-Hant",
    }
    assert find_language_tokens(MBART, ["de_DE", "en_XX", "pt_XX", "▁de"]) == {
        "de_DE": "de-DE",
        "en_XX": "en-XX",
        "pt_XX": "pt-XX",
    }
    assert find_language_tokens("MarianMTModel", vocabulary) == {}


def test_a_memory_tag_finds_the_token_of_its_language_and_script() -> None:
    nllb = find_language_tokens(M2M100, ["deu_Latn", "zho_Hans", "zho_Hant", "srp_Cyrl"])
    assert token_for(nllb, "de-AT") == "deu_Latn"
    assert token_for(nllb, "zh-TW") == "zho_Hant"
    assert token_for(nllb, "zh-CN") == "zho_Hans"
    mbart = find_language_tokens(MBART, ["de_DE", "pt_XX", "en_XX"])
    assert token_for(mbart, "pt-BR") == "pt_XX"
    assert token_for(mbart, "de") == "de_DE"


def test_a_language_without_a_token_is_refused_naming_the_field() -> None:
    tokens = find_language_tokens(M2M100, ["__de__", "__en__"])
    with pytest.raises(InvalidInput) as refused:
        token_for(tokens, "tlh", field="source_lang")
    assert refused.value.field == "source_lang" and "'tlh'" in refused.value.message
