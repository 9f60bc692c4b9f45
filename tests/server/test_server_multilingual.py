"""A multilingual model behind the server: each suggestion is translated into its memories'
target language (the model's language token forced first, never shown), whatever pair the
model was converted for; a pair the model has no tokens for is 422."""

from __future__ import annotations

import math

import pytest
from model_families import build_checkpoint, convert
from server_scenarios import add_segment, create_memory

from tm_guide.model import Bundle
from tm_guide.server.translation import MAX_LENGTH_RATIO

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def m2m100_bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("m2m100")
    return convert(build_checkpoint("m2m100", root / "hf"), root / "bundle", "int8")


@pytest.fixture(scope="module")
def server(start_server, m2m100_bundle):
    server = start_server(model=m2m100_bundle, threads=2)
    for name, target in (("to-de", "de"), ("to-fr", "fr"), ("to-klingon", "tlh")):
        create_memory(server.client, name, "en", target)
    add_segment(server.client, "to-fr", "Save the table.", "Enregistrez le tableau.")
    return server


def _native(bundle: Bundle, text: str, target_lang: str) -> str:
    """CTranslate2's own translation of `text` into `target_lang`, capped as the server caps, as
    a translator gets it (Bundle.set_right)."""
    source = bundle.source_input(bundle.encode_source(text))
    prefix = bundle.target_prefix(target_lang)
    cap = math.ceil(MAX_LENGTH_RATIO * len(source)) + 10 + len(prefix)
    output = bundle.translator.translate_batch(
        [source], beam_size=5, max_decoding_length=cap, target_prefix=[prefix]
    )[0]
    return bundle.set_right(text, bundle.decode_target(output.hypotheses[0]))[-1].text


@pytest.mark.parametrize(("memory", "target"), [("to-fr", "fr"), ("to-de", "de")])
def test_a_suggestion_is_translated_into_its_memorys_language(
    server, m2m100_bundle, memory, target
) -> None:
    bundle = Bundle.load(m2m100_bundle)
    text = "Print the sheet and close it."
    reply = server.client.post(
        "/v1/suggest", {"source": text, "memories": [memory], "options": {"lambda": 0}}
    )
    assert reply.status == 200, reply.body
    translation = reply.json["results"][0]["translation"]
    assert translation["mt_text"] == _native(bundle, text, target)
    assert "__" not in translation["mt_text"]


def test_the_two_targets_differ_and_the_card_pair_is_not_forced(server) -> None:
    text = "Print the sheet and close it."
    texts = {
        memory: server.client.post(
            "/v1/suggest", {"source": text, "memories": [memory], "options": {"lambda": 0}}
        ).json["results"][0]["translation"]["mt_text"]
        for memory in ("to-fr", "to-de")
    }
    assert texts["to-fr"] != texts["to-de"]


def test_a_pair_the_model_has_no_token_for_is_unprocessable(server) -> None:
    reply = server.client.post(
        "/v1/suggest", {"source": "Open the file.", "memories": ["to-klingon"]}
    )
    assert reply.status == 422, reply.body
    assert reply.json["field"] == "memories"
    assert "language tokens" in reply.json["message"]
    matches_only = server.client.post(
        "/v1/suggest",
        {"source": "Open the file.", "memories": ["to-klingon"], "options": {"translate": False}},
    )
    assert matches_only.status == 200


def test_the_mt_protocols_translate_into_any_language_the_model_has(server, m2m100_bundle) -> None:
    """DeepL (and the other protocols, which share the code) into French from a model converted
    for en->de; a language it has no token for is DeepL's 400."""
    bundle = Bundle.load(m2m100_bundle)
    headers = {"Authorization": f"DeepL-Auth-Key {server.client.token}"}
    text = "Print the sheet and close it."
    reply = server.client.post(
        "/deepl/v2/translate", {"text": [text], "target_lang": "FR"}, headers=headers
    )
    assert reply.status == 200, reply.body
    assert reply.json["translations"][0]["text"] == _native(bundle, text, "fr")
    refused = server.client.post(
        "/deepl/v2/translate", {"text": [text], "target_lang": "TLH"}, headers=headers
    )
    assert refused.status == 400, refused.body
