"""DeepL's API under /deepl, spoken by its own client (`deepl`) and as Weblate sends it.

The official client takes the server as `server_url` and resolves `v2/translate` against it, so
the URL ends with a slash. Everything runs against one real server with the bundled demo model
(en->de), which decodes slowly here: the translate calls are few, and every error case is one
that fails before anything is decoded.
"""

from __future__ import annotations

import re
from typing import Any

import deepl
import pytest
import requests
from server_scenarios import (
    GLOSSARY_SOURCE,
    GLOSSARY_TARGET,
    QUERY,
    TM_TARGET,
    add_segment,
    create_memory,
)

from tm_guide.config import BUNDLED_MODEL


@pytest.fixture(scope="module")
def server(start_server):
    server = start_server(model=BUNDLED_MODEL, threads=4)
    server.create_memories("docs", "other")
    return server


@pytest.fixture(scope="module")
def keys(server) -> dict[str, str]:
    return {
        "admin": server.client.token,
        "docs": server.create_key("deepl-docs", "docs:read"),
        "other": server.create_key("deepl-other", "other:read"),
    }


def translator(server, key: str) -> deepl.Translator:
    return deepl.Translator(key, server_url=server.url("/deepl/"))


def both_ways(
    server, keys, name: str, entries: dict[str, str], text: str
) -> tuple[deepl.GlossaryInfo, str, str]:
    """DeepL's own client creates glossary `name` and translates `text` without it and with
    it: (the glossary, the plain translation, the one with the glossary)."""
    client = translator(server, keys["admin"])
    glossary = client.create_glossary(name, source_lang="EN", target_lang="DE", entries=entries)
    plain = client.translate_text(text, source_lang="EN", target_lang="DE").text
    guided = client.translate_text(text, source_lang="EN", target_lang="DE", glossary=glossary).text
    return glossary, plain, guided


def weblate(server, method: str, path: str, key: str | None, **kw: Any) -> requests.Response:
    """A request as Weblate's DeepL service sends it (API URL `.../deepl/v2`)."""
    headers = {"Authorization": f"DeepL-Auth-Key {key}"} if key is not None else {}
    return requests.request(
        method, server.url(f"/deepl/v2/{path}"), headers=headers, timeout=120, **kw
    )


def assert_error(reply: requests.Response, status: int, says: str) -> None:
    assert reply.status_code == status, reply.text
    assert reply.headers["Content-Type"].startswith("application/json")
    body = reply.json()
    assert set(body) == {"message"} and says.lower() in body["message"].lower(), body


def test_the_key_scope_feeds_the_pieces_and_usage_counts(server, keys) -> None:
    """A segment added to `docs` guides the next translation for the key that reads `docs`
    (/v1/suggest's guided text, with the segment's words), not for the key scoped to `other`;
    usage grows by the characters sent."""
    docs = translator(server, keys["docs"])
    assert docs.get_usage().character.count == 0
    assert docs.get_usage().character.limit == 1_000_000_000_000

    before = docs.translate_text(QUERY, target_lang="DE")
    assert before.detected_source_lang == "EN" and before.billed_characters == len(QUERY)
    assert "Fenster" not in before.text

    add_segment(server.client, "docs", QUERY, TM_TARGET)
    after = docs.translate_text([QUERY, "   "], source_lang="en", target_lang="de-DE")
    assert "Fenster" in after[0].text and "verlassen" in after[0].text
    assert after[1].text == "   " and after[1].billed_characters == 3
    suggested = server.client.post("/v1/suggest", {"source": QUERY, "memories": ["docs"]})
    assert after[0].text == suggested.json["results"][0]["translation"]["text"]
    assert docs.get_usage().character.count == 2 * len(QUERY) + 3

    # the key scoped to `other` (empty) gets the unguided text; a legacy form request with
    # `auth_key` and the `text` field repeated
    legacy = requests.post(
        server.url("/deepl/v2/translate"),
        data={"auth_key": keys["other"], "text": [QUERY, ""], "target_lang": "DE"},
        timeout=120,
    )
    assert legacy.status_code == 200, legacy.text
    assert legacy.json() == {
        "translations": [
            {"detected_source_language": "EN", "text": before.text},
            {"detected_source_language": "EN", "text": ""},
        ]
    }
    assert translator(server, keys["other"]).get_usage().character.count == len(QUERY)
    assert docs.get_usage().character.count == 2 * len(QUERY) + 3  # per key


def test_xml_tags_are_kept_and_ignored_tags_kept_whole(server, keys) -> None:
    results = translator(server, keys["admin"]).translate_text(
        ['Open <x id="1"></x> the file', 'Open <x id="2">the file</x> &amp; <b>save</b>'],
        target_lang="DE",
        tag_handling="xml",
        ignore_tags="x",
        formality="default",
        split_sentences="nonewlines",
        preserve_formatting=True,
        context="A menu entry.",
        model_type="prefer_quality_optimized",
    )
    first, second = (r.text for r in results)
    assert [r.model_type_used for r in results] == ["quality_optimized"] * 2
    assert '<x id="1"></x>' in first and first.count("<") == 2 and "Open" not in first
    assert '<x id="2">the file</x>' in second and "&amp;" in second
    assert "<b>" in second and "</b>" in second and "save" not in second


def test_languages(server, keys) -> None:
    client = translator(server, keys["docs"])
    assert [(lang.code, lang.name) for lang in client.get_source_languages()] == [("EN", "English")]
    targets = client.get_target_languages()
    assert [(t.code, t.name, t.supports_formality) for t in targets] == [("DE", "German", False)]
    # Weblate asks with the type in the query string
    for kind, expected in (("source", "EN"), ("target", "DE")):
        reply = weblate(server, "GET", "languages", keys["docs"], params={"type": kind})
        assert reply.status_code == 200 and reply.json()[0]["language"] == expected


def test_weblate_glossary_flow(server, keys) -> None:
    """Weblate asks for the glossary pairs, lists glossaries, creates its own (a memory here),
    translates with its id, and deletes stale ones; a key that may not create memories is offered
    no pair, so Weblate never tries."""
    admin = keys["admin"]
    pairs = weblate(server, "GET", "glossary-language-pairs", admin).json()
    assert pairs == {"supported_languages": [{"source_lang": "en", "target_lang": "de"}]}
    reader_pairs = weblate(server, "GET", "glossary-language-pairs", keys["docs"]).json()
    assert reader_pairs == {"supported_languages": []}
    assert weblate(server, "GET", "glossaries", admin).json() == {"glossaries": []}

    name = "weblate:1:EN:DE:0123abcd"
    tsv = f"{GLOSSARY_SOURCE}\t{GLOSSARY_TARGET}\nprint\tdrucken\n"
    body = {"name": name, "source_lang": "EN", "target_lang": "DE", "entries": tsv}
    created = weblate(server, "POST", "glossaries", admin, json={**body, "entries_format": "tsv"})
    assert created.status_code == 201, created.text
    info = created.json()
    assert (info["name"], info["entry_count"], info["ready"]) == (name, 2, True)
    listed = weblate(server, "GET", "glossaries", admin).json()["glossaries"]
    assert [g["glossary_id"] for g in listed] == [info["glossary_id"]]
    # the glossary is a memory of the model's pair
    assert server.client.get(f"/v1/memories/{name}").json["segment_count"] == 2

    client = translator(server, admin)
    assert client.get_glossary(info["glossary_id"]).entry_count == 2
    assert client.get_glossary_entries(info["glossary_id"]) == {
        GLOSSARY_SOURCE: GLOSSARY_TARGET,
        "print": "drucken",
    }

    translated = weblate(
        server,
        "POST",
        "translate",
        admin,
        json={
            "text": [GLOSSARY_SOURCE],
            "source_lang": "EN",
            "target_lang": "DE",
            "formality": "default",
            "tag_handling": "xml",
            "ignore_tags": ["x"],
            "glossary_id": info["glossary_id"],
        },
    )
    assert translated.status_code == 200, translated.text
    assert translated.json()["translations"][0]["text"] == GLOSSARY_TARGET

    gone = weblate(server, "DELETE", f"glossaries/{info['glossary_id']}", admin)
    assert gone.status_code == 204
    assert_error(weblate(server, "DELETE", f"glossaries/{info['glossary_id']}", admin), 404, "not")
    assert server.client.get(f"/v1/memories/{name}").status == 404
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_glossary(info["glossary_id"])


def test_glossary_errors_change_nothing(server, keys) -> None:
    good = {"name": "g", "source_lang": "EN", "target_lang": "DE", "entries": "a\tb"}
    cases = [
        (keys["docs"], good, 403, "write access"),
        (keys["admin"], {**good, "entries": "a b"}, 400, "line 1"),
        (keys["admin"], {**good, "entries": "a\tb\nc\t \n"}, 400, "line 2"),
        (keys["admin"], {**good, "entries": ""}, 400, "entries"),
        (keys["admin"], {**good, "entries_format": "xlsx"}, 400, "entries_format"),
        (keys["admin"], {**good, "entries_format": "csv", "entries": 'a,"b'}, 400, "csv"),
        (keys["admin"], {**good, "entries_format": "csv", "entries": "a,b,fr,de"}, 400, "fr"),
        (keys["admin"], {**good, "target_lang": "FR"}, 400, "not supported"),
        (keys["admin"], {**good, "name": "docs"}, 400, "not a DeepL glossary"),
        (keys["admin"], {k: v for k, v in good.items() if k != "name"}, 400, "'name'"),
    ]
    for key, body, status, says in cases:
        assert_error(weblate(server, "POST", "glossaries", key, json=body), status, says)
    names = [m["name"] for m in server.client.get("/v1/memories").json["memories"]]
    assert "g" not in names
    assert server.client.get("/v1/memories/docs").json["description"] == ""


def test_the_client_raises_deepl_exceptions(server, keys) -> None:
    with pytest.raises(deepl.AuthorizationException) as raised:
        translator(server, "wrong").translate_text("Hello", target_lang="DE")
    assert raised.value.http_status_code == 403 and "invalid" in str(raised.value)
    with pytest.raises(deepl.DeepLException) as raised:
        translator(server, keys["docs"]).translate_text("Hello", target_lang="FR")
    assert raised.value.http_status_code == 400
    assert "target language 'FR' is not supported" in str(raised.value)
    with pytest.raises(deepl.DeepLException) as raised:
        translator(server, keys["docs"]).translate_text(
            "Hello", source_lang="EN", target_lang="DE", glossary="nope"
        )
    assert raised.value.http_status_code == 404


@pytest.mark.parametrize(
    ("body", "key", "status", "says"),
    [
        ({"text": ["Hi"], "target_lang": "DE"}, None, 403, "DeepL-Auth-Key"),
        ({"text": ["Hi"], "target_lang": "DE"}, "wrong", 403, "invalid"),
        ({"target_lang": "DE"}, "docs", 400, "'text'"),
        ({"text": 5, "target_lang": "DE"}, "docs", 400, "'text'"),
        ({"text": [], "target_lang": "DE"}, "docs", 400, "'text'"),
        ({"text": [1], "target_lang": "DE"}, "docs", 400, "'text[0]'"),
        ({"text": ["x" * 2001], "target_lang": "DE"}, "docs", 400, "limit"),
        ({"text": ["Hi"]}, "docs", 400, "'target_lang'"),
        ({"text": ["Hi"], "target_lang": 5}, "docs", 400, "string"),
        ({"text": ["Hi"], "target_lang": "??"}, "docs", 400, "language tag"),
        ({"text": ["Hi"], "target_lang": "ZH-HANS"}, "docs", 400, "not supported"),
        ({"text": ["Hi"], "source_lang": "FR", "target_lang": "DE"}, "docs", 400, "source"),
        ({"text": ["Hi"], "target_lang": "DE", "tag_handling": "pdf"}, "docs", 400, "tag_hand"),
        ({"text": ["Hi"], "target_lang": "DE", "formality": "rude"}, "docs", 400, "formality"),
        # DE has no formality here: DeepL refuses more/less for such a target
        ({"text": ["Hi"], "target_lang": "DE", "formality": "more"}, "docs", 400, "target_lang"),
        ({"text": ["Hi"], "target_lang": "DE", "formality": "LESS"}, "docs", 400, "formality"),
        ({"text": ["Hi"], "target_lang": "DE", "model_type": "fast"}, "docs", 400, "model_type"),
        ({"text": ["Hi"], "target_lang": "DE", "ignore_tags": [1]}, "docs", 400, "ignore_tags"),
        ({"text": ["Hi"], "target_lang": "DE", "ignore_tags": "<x>"}, "docs", 400, "tag name"),
        (
            {"text": ["Hi"], "target_lang": "DE", "show_billed_characters": "maybe"},
            "docs",
            400,
            "'true', 'false'",
        ),
        ({"text": ["Hi"], "target_lang": "DE", "glossary_id": "nope"}, "docs", 404, "nope"),
        ({"text": ["x" * 300_000], "target_lang": "DE"}, "docs", 413, "larger"),
    ],
)
def test_bad_translate_requests_get_deepl_errors(server, keys, body, key, status, says) -> None:
    reply = weblate(server, "POST", "translate", keys.get(key, key), json=body)
    assert_error(reply, status, says)


def test_malformed_bodies_wrong_auth_routes_and_methods(server, keys) -> None:
    key = keys["docs"]
    usage = translator(server, key).get_usage().character.count
    headers = {"Authorization": f"DeepL-Auth-Key {key}", "Content-Type": "application/json"}
    for raw, says in ((b"{", "malformed JSON"), (b"[1]", "JSON object"), (b"\xff", "UTF-8")):
        reply = requests.post(
            server.url("/deepl/v2/translate"), data=raw, headers=headers, timeout=60
        )
        assert_error(reply, 400, says)
    bearer = requests.post(
        server.url("/deepl/v2/translate"),
        json={"text": ["Hi"], "target_lang": "DE"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )
    assert_error(bearer, 403, "DeepL-Auth-Key")
    assert_error(weblate(server, "GET", "languages", None), 403, "DeepL-Auth-Key")
    assert_error(weblate(server, "GET", "usage", "wrong"), 403, "invalid")
    assert_error(weblate(server, "GET", "languages", key, params={"type": "x"}), 400, "type")
    assert_error(weblate(server, "GET", "translate", key), 405, "allowed")
    assert_error(weblate(server, "PUT", "glossaries", key), 405, "allowed")
    assert_error(weblate(server, "GET", "nothing", key), 404, "no such endpoint")
    assert_error(requests.get(server.url("/deepl/"), timeout=60), 404, "no such endpoint")
    assert_error(weblate(server, "GET", "glossaries/nope", key), 404, "nope")
    assert translator(server, key).get_usage().character.count == usage


def test_a_translation_that_cannot_meet_its_deadline_is_answered_from_the_memory(
    start_server,
) -> None:
    """With a 1 ms deadline a translation is not decoded at all (still queued when its deadline
    came; with a speed measured, predicted to miss it): the answer comes at once from the
    memory (the TM target of a close match, else the source), and says so in
    X-TM-Guide-Degraded and the metrics. The lookup in the memory may run late here (a busy
    test machine takes longer than the default 50 ms past the deadline)."""
    server = start_server(
        model=BUNDLED_MODEL,
        threads=4,
        extra_env={"TM_GUIDE_DEEPL_DEADLINE_MS": "1", "TM_GUIDE_TM_ONLY_GRACE_MS": "60000"},
    )
    create_memory(server.client, "docs")
    add_segment(server.client, "docs", QUERY, TM_TARGET)
    url = f"http://127.0.0.1:{server.client.port}/deepl/v2/translate"
    headers = {"Authorization": f"DeepL-Auth-Key {server.client.token}"}
    far = "The weather in the mountains changes quickly."

    def ask(texts: list[str]) -> requests.Response:
        reply = requests.post(
            url, json={"text": texts, "target_lang": "DE"}, headers=headers, timeout=60
        )
        assert reply.status_code == 200, reply.text
        return reply

    first = ask([far])
    assert first.headers["X-TM-Guide-Degraded"] == "tm-only"
    assert first.json()["translations"][0]["text"] == far
    close = QUERY.replace("OK", "Cancel")
    second = ask([close, far])
    assert second.headers["X-TM-Guide-Degraded"] == "tm-only"
    texts = [t["text"] for t in second.json()["translations"]]
    assert texts == [TM_TARGET, far]  # the close match's target; nothing close: the source
    metrics = requests.get(f"http://127.0.0.1:{server.client.port}/metrics", timeout=30).text
    assert 'tm_guide_degraded_requests_total{level="tm-only"} 2.0' in metrics


def test_a_glossary_term_is_used_and_reported(server, keys) -> None:
    """DeepL's own client creates a glossary (file -> Akte) and translates with it: the
    translation holds the term where the model wrote "Datei" without it; the answer says how
    many terms applied in X-TM-Guide-Glossary-Terms, and /v1 lists them."""
    text = "Move the folder to the file."
    glossary, plain, guided = both_ways(server, keys, "cat-terms", {"file": "Akte"}, text)
    assert "Akte" not in plain and "Akte" in guided, (plain, guided)
    raw = requests.post(
        f"http://127.0.0.1:{server.client.port}/deepl/v2/translate",
        json={"text": [text], "target_lang": "DE", "glossary_id": glossary.glossary_id},
        headers={"Authorization": f"DeepL-Auth-Key {keys['admin']}"},
        timeout=60,
    )
    assert raw.headers["X-TM-Guide-Glossary-Terms"] == "1/1"
    v1 = server.client.post(
        "/v1/suggest", {"source": text, "memories": ["docs"], "glossaries": ["cat-terms"]}
    )
    assert v1.status == 200, v1.body
    translation = v1.json["results"][0]["translation"]
    assert translation["glossary"] == [{"source": "file", "target": "Akte", "applied": True}]
    assert translation["text"] == guided


def test_a_term_left_untranslated_is_put_in_and_code_is_left_alone(server, keys) -> None:
    """Where the model copies the source term ("Iraq"), the glossary's target replaces it; a
    term that occurs only as code (an option, "--list") does not apply, and the option stays
    as it is."""
    client = translator(server, keys["admin"])
    glossary = client.create_glossary(
        "region-terms",
        source_lang="EN",
        target_lang="DE",
        entries={"iraq": "Irak", "latin": "Lateinisch", "list": "Liste"},
    )
    region = "Kurdish (Iraq, Latin Alt-Q)"
    plain = client.translate_text(region, source_lang="EN", target_lang="DE").text
    guided = client.translate_text(
        region, source_lang="EN", target_lang="DE", glossary=glossary
    ).text
    assert "Iraq" in plain and "Latin" in plain, plain
    assert guided == plain.replace("Iraq", "Irak").replace("Latin", "Lateinisch"), guided

    option = "--name-only is only applicable to --list or --get-regexp"
    v1 = server.client.post(
        "/v1/suggest", {"source": option, "memories": ["docs"], "glossaries": ["region-terms"]}
    )
    assert v1.status == 200, v1.body
    translation = v1.json["results"][0]["translation"]
    assert translation["glossary"] == [] and "--list" in translation["text"], translation


def test_choices_are_read_in_any_case_as_deepl_reads_them(server, keys) -> None:
    """The document checks the arguments; the choices it marks x-case-insensitive (tag_handling,
    formality, model_type, a form's booleans) are read in any case, as DeepL reads them."""
    reply = requests.post(
        f"http://127.0.0.1:{server.client.port}/deepl/v2/translate",
        data={
            "text": "<b>Hi</b>",
            "target_lang": "de",
            "tag_handling": "XML",
            "show_billed_characters": "TRUE",
            "model_type": "Latency_Optimized",
        },
        headers={"Authorization": f"DeepL-Auth-Key {keys['docs']}"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    translation = reply.json()["translations"][0]
    assert translation["billed_characters"] == len("<b>Hi</b>")
    assert translation["model_type_used"] == "latency_optimized"
    assert translation["text"].startswith("<b>") and translation["text"].endswith("</b>")


def test_characters_the_normalizer_changed_come_back(server, keys) -> None:
    """The model reads "m²" as "m2", "…" as "...", "™" as "TM" and a no-break space as a space,
    and writes them so; the translator gets the source's characters, guided by a memory or
    not."""
    client = translator(server, keys["admin"])
    texts = [
        "The room is 10\u00a0m² large.",
        "Choose Save As… to save the file.",
        "LibreOffice™ is free.",
    ]
    plain = [r.text for r in client.translate_text(texts, source_lang="EN", target_lang="DE")]
    assert "10\u00a0m²" in plain[0] and "m2" not in plain[0], plain
    assert "…" in plain[1] and "..." not in plain[1], plain
    assert "LibreOffice™" in plain[2] and "TM" not in plain[2], plain
    create_memory(server.client, "symbols")
    add_segment(
        server.client,
        "symbols",
        "Choose Save As… to save the document.",
        "Wählen Sie Speichern unter…, um das Dokument zu speichern.",
    )
    suggested = server.client.post(
        "/v1/suggest", {"source": texts[1], "memories": ["symbols"]}
    ).json["results"][0]["translation"]
    assert "…" in suggested["text"] and "..." not in suggested["text"], suggested


def test_a_term_that_does_not_inflect_must_stand_as_written(server) -> None:
    """The same entry (document -> Dokument) in two glossaries, one saying in its `inflect` prop
    that the term does not inflect: "des Dokuments" holds the term for the one; for the other the
    search is asked again, held to write the term, and writes it as the glossary does."""
    create_memory(server.client, "inflecting")
    create_memory(server.client, "exact")
    add_segment(server.client, "inflecting", "document", "Dokument")
    add_segment(server.client, "exact", "document", "Dokument", props={"inflect": "no"})
    text = "Enter the name of the document."
    found = {}
    for glossary in ("inflecting", "exact"):
        reply = server.client.post(
            "/v1/suggest", {"source": text, "memories": ["docs"], "glossaries": [glossary]}
        )
        assert reply.status == 200, reply.body
        translation = reply.json["results"][0]["translation"]
        found[glossary] = (translation["text"], translation["glossary"][0]["applied"])
    assert "Dokuments" in found["inflecting"][0] and found["inflecting"][1], found
    exact_text, exact_applied = found["exact"]
    assert exact_applied and re.search(r"Dokument(?!\w)", exact_text), found
    assert "Dokuments" not in exact_text, found


def test_a_term_the_model_leaves_out_is_forced_in(server, keys) -> None:
    """The model writes no word for "count" here, so there is none to swap; the search under a
    template of the term must write "Anzahl", and does, placeholders kept."""
    text = "could not set compression worker count to %d: %s"
    _, plain, guided = both_ways(server, keys, "count-terms", {"count": "Anzahl"}, text)
    assert "Anzahl" not in plain, plain
    assert "Anzahl" in guided and "%d" in guided and "%s" in guided, guided
