"""LibreTranslate's API, spoken by its own client (libretranslatepy) and as Weblate sends it."""

from __future__ import annotations

import json
import urllib.error
from urllib.parse import urlencode

import pytest
from libretranslatepy import LibreTranslateAPI
from server_scenarios import add_segment, create_memory

# Words from the tiny model's vocabulary (tests/conftest.py), so that pieces are real subwords.
TM_SOURCE = "Click open the menu file save window dialog."
TM_TARGET = "Klicken öffnen das menü datei speichern fenster dialog."


@pytest.fixture(scope="module")
def server(start_server, tiny_bundle_dir):
    server = start_server(
        model=tiny_bundle_dir,
        threads=4,
        extra_env={"TM_GUIDE_LAMBDA": "5"},
    )
    create_memory(server.client, "docs")
    create_memory(server.client, "empty")
    add_segment(server.client, "docs", TM_SOURCE, TM_TARGET)
    return server


@pytest.fixture(scope="module")
def keys(server) -> dict[str, str]:
    return {
        "docs": server.create_key("lt-docs", "docs:read"),
        "empty": server.create_key("lt-empty", "empty:read"),
    }


def lt(server, key: str | None) -> LibreTranslateAPI:
    return LibreTranslateAPI(f"http://127.0.0.1:{server.client.port}/libretranslate/", key)


def suggested(server, memory: str, unguided: bool = False, mt: bool = False) -> str:
    reply = server.client.post(
        "/v1/suggest", {"source": TM_SOURCE, "memories": [memory], "options": {"unguided": True}}
    )
    assert reply.status == 200, reply.body
    translation = reply.json["results"][0]["translation"]
    if unguided:
        return translation["unguided"]
    return translation["mt_text"] if mt else translation["text"]


def test_the_key_scope_decides_which_memories_guide(server, keys) -> None:
    """The official client gets /v1/suggest's guided text with the key that reads `docs`, and the
    unguided text with a key whose only memory holds nothing similar."""
    guided = lt(server, keys["docs"]).translate(TM_SOURCE, "en", "de")
    plain = lt(server, keys["empty"]).translate(TM_SOURCE, "en", "de")
    assert guided == suggested(server, "docs")
    assert plain == suggested(server, "docs", unguided=True)
    assert guided != plain


def test_languages_list_the_model_pair(server) -> None:
    assert lt(server, None).languages() == [
        {"code": "en", "name": "English", "targets": ["de"]},
        {"code": "de", "name": "German", "targets": []},
    ]


def test_weblate_shape_a_list_with_alternatives_and_auto_source(server, keys) -> None:
    reply = server.client.with_token(None).post(
        "/libretranslate/translate",
        {
            "q": [TM_SOURCE, "", "Open the menu."],
            "source": "auto",
            "target": "de",
            "api_key": keys["docs"],
            "alternatives": 2,
        },
    )
    assert reply.status == 200, reply.body
    body = reply.json
    # TM_SOURCE is in the memory verbatim: its target is the text, as /v1/suggest gives it, and
    # the guided translation comes first among the alternatives
    assert body["translatedText"][0] == suggested(server, "docs") == TM_TARGET
    assert body["translatedText"][1] == ""
    assert body["alternatives"][0][0] == suggested(server, "docs", mt=True)
    assert TM_TARGET not in body["alternatives"][0]
    assert body["detectedLanguage"] == [{"confidence": 100.0, "language": "en"}] * 3


def test_html_keeps_tags_and_translates_between_them(server, keys) -> None:
    reply = server.client.with_token(None).post(
        "/libretranslate/translate",
        {
            "q": f'<p class="x">{TM_SOURCE}</p><br/><b> &amp; </b>',
            "source": "en",
            "target": "de",
            "format": "html",
            "api_key": keys["docs"],
        },
    )
    assert reply.status == 200, reply.body
    text = reply.json["translatedText"]
    assert text == f'<p class="x">{suggested(server, "docs")}</p><br/><b> &amp; </b>'


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"q": "Hi", "source": "en", "target": "de"}, 403, "API key"),
        ({"q": "Hi", "source": "en", "target": "de", "api_key": "wrong"}, 403, "invalid"),
        ({"source": "en", "target": "de", "api_key": "KEY"}, 400, "'q' is required"),
        ({"q": 5, "source": "en", "target": "de", "api_key": "KEY"}, 400, "'q'"),
        ({"q": [], "source": "en", "target": "de", "api_key": "KEY"}, 400, "'q'"),
        ({"q": "Hi", "source": "en", "api_key": "KEY"}, 400, "'target' is required"),
        ({"q": "Hi", "source": "en", "target": "fr", "api_key": "KEY"}, 400, "not supported"),
        ({"q": "Hi", "source": "en", "target": "??", "api_key": "KEY"}, 400, "BCP 47 tag"),
        (
            {"q": "Hi", "source": "en", "target": "de", "format": "pdf", "api_key": "KEY"},
            400,
            "format",
        ),
        (
            {"q": "Hi", "source": "en", "target": "de", "alternatives": 9, "api_key": "KEY"},
            400,
            "alternatives",
        ),
        ({"q": "x" * 3000, "source": "en", "target": "de", "api_key": "KEY"}, 400, "limit"),
    ],
)
def test_bad_requests_get_libretranslate_errors(server, keys, body, status, says) -> None:
    """Checked against the OpenAPI document's LibreTranslateRequest, as /v1's bodies are."""
    if body.get("api_key") == "KEY":
        body = {**body, "api_key": keys["docs"]}
    reply = server.client.with_token(None).post("/libretranslate/translate", body)
    assert reply.status == status, reply.body
    assert set(reply.json) == {"error"} and says.lower() in reply.json["error"].lower()


def test_malformed_json_unknown_routes_and_methods_are_libretranslate_errors(server) -> None:
    anonymous = server.client.with_token(None)
    broken = anonymous.post(
        "/libretranslate/translate", raw=b"{", headers={"Content-Type": "application/json"}
    )
    assert broken.status == 400 and "malformed JSON" in broken.json["error"]
    assert anonymous.get("/libretranslate/nothing").json == {"error": "no such endpoint"}
    assert anonymous.get("/libretranslate/translate").status == 405
    assert set(anonymous.get("/libretranslate/translate").json) == {"error"}


def test_the_client_raises_on_a_wrong_key(server) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        lt(server, "wrong").translate("Hello", "en", "de")
    assert raised.value.code == 403
    assert "error" in json.loads(raised.value.read())


def test_a_form_is_checked_against_the_document_with_its_numbers_read(server, keys) -> None:
    """A form's `alternatives=2` is the integer the document allows; `alternatives=9` is out of
    its range and `alternatives=two` no integer, each a LibreTranslate error naming the field."""
    form = {"q": "Click OK.", "source": "en", "target": "de", "api_key": keys["docs"]}
    anonymous = server.client.with_token(None)

    def send(alternatives: str):  # type: ignore[no-untyped-def]
        return anonymous.post(
            "/libretranslate/translate",
            raw=urlencode({**form, "alternatives": alternatives}).encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )

    good = send("2")
    assert good.status == 200 and isinstance(good.json["alternatives"], list), good.body
    unset = send("")  # a form's empty field is no field: no alternatives
    assert unset.status == 200 and "alternatives" not in unset.json, unset.body
    for bad, says in (("9", "between 0 and 3"), ("two", "an integer")):
        reply = send(bad)
        assert reply.status == 400 and says in reply.json["error"], reply.body
        assert "'alternatives'" in reply.json["error"]
