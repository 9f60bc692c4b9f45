"""The HTTP API on a real gunicorn server with SQLite: memories, segments, auth, errors, jobs."""

from __future__ import annotations

import json

import pytest
from server_client import Client, path_quote
from server_scenarios import (
    BOMB,
    TMX,
    add_segment,
    concurrent_writers,
    create_memory,
    nul_in_paths_and_queries,
    wait_for_job,
)

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(start_server):
    return start_server()


@pytest.fixture(scope="module")
def client(server) -> Client:
    create_memory(server.client, "docs")
    add_segment(
        server.client,
        "docs",
        "Click the Save button to store the file.",
        "Klicken Sie auf Speichern, um die Datei zu sichern.",
        tuid="save-1",
        context="toolbar",
    )
    return server.client


def test_memory_lifecycle_shows_size_languages_and_revision(client: Client) -> None:
    created = create_memory(client, "lifecycle", "en", "fr")
    assert (created["source_lang"], created["target_lang"], created["segment_count"]) == (
        "en",
        "fr",
        0,
    )
    add_segment(client, "lifecycle", "Hello world.", "Bonjour le monde.")
    shown = client.get("/v1/memories/lifecycle").json
    assert shown["segment_count"] == 1 and shown["revision"] > created["revision"]
    assert "lifecycle" in [m["name"] for m in client.get("/v1/memories").json["memories"]]
    assert (
        client.post(
            "/v1/memories", {"name": "lifecycle", "source_lang": "en", "target_lang": "fr"}
        ).status
        == 409
    )
    assert client.request("DELETE", "/v1/memories/lifecycle").status == 204
    assert client.get("/v1/memories/lifecycle").status == 404


def test_segment_update_by_tuid_delete_and_concordance(client: Client) -> None:
    create_memory(client, "edits")
    add_segment(client, "edits", "Insert a new table.", "Fügen Sie eine Tabelle ein.", tuid="u1")
    reply = client.request(
        "PUT",
        "/v1/memories/edits/segments/by-tuid/u1",
        {"source": "Insert a new table.", "target": "Fügen Sie eine neue Tabelle ein."},
    )
    assert reply.status == 200, reply.body
    assert reply.json["memory"]["segment_count"] == 1
    hits = client.get("/v1/memories/edits/concordance?q=neue+Tabelle&side=target").json["segments"]
    assert [h["target"] for h in hits] == ["Fügen Sie eine neue Tabelle ein."]
    segment_id = hits[0]["id"]
    assert client.get(f"/v1/memories/edits/segments/{segment_id}").json["tuid"] == "u1"
    assert client.request("DELETE", f"/v1/memories/edits/segments/{segment_id}").status == 204
    assert client.get(f"/v1/memories/edits/segments/{segment_id}").status == 404
    assert client.get("/v1/memories/edits").json["segment_count"] == 0


def test_duplicate_pair_is_merged_not_stored_twice(client: Client) -> None:
    create_memory(client, "dups")
    a = add_segment(client, "dups", "Print the page.", "Drucken Sie die Seite.")
    b = add_segment(client, "dups", "Print the page.", "Drucken Sie die Seite.")
    assert a["segment"]["id"] == b["segment"]["id"]
    assert b["memory"]["segment_count"] == 1


def test_matches_only_suggestion_shows_cat_percentages(client: Client) -> None:
    reply = client.post(
        "/v1/suggest",
        {
            "segments": [
                {"source": "Click the Save button to store the file.", "context": "toolbar"},
                {"source": "Click the Save button to store the file."},
                {"source": "Click the Save button to store the document."},
            ],
            "memories": ["docs"],
            "options": {"translate": False},
        },
    )
    assert reply.status == 200, reply.body
    best = [r["matches"][0]["match"] for r in reply.json["results"]]
    assert best[0] == 101 and best[1] == 100 and 50 <= best[2] < 100
    match = reply.json["results"][0]["matches"][0]
    assert match["tuid"] == "save-1" and match["target"].startswith("Klicken Sie")
    assert match["created_at"] is not None
    penalised = client.post(
        "/v1/suggest",
        {
            "source": "Click the Save button to store the file.",
            "memories": [{"name": "docs", "penalty": 7}],
            "options": {"translate": False},
        },
    ).json
    assert penalised["results"][0]["matches"][0]["match"] == 93
    assert penalised["memories"][0]["revision"] >= 1


def test_tmserver_endpoint_answers_like_amagama(client: Client) -> None:
    text = path_quote("Click the Save button to store the file.")
    reply = client.get(f"/tmserver/en/de_DE/unit/{text}")
    assert reply.status == 200, reply.body
    units = reply.json
    assert units[0]["source"] == "Click the Save button to store the file."
    assert units[0]["quality"] == 100 and set(units[0]) == {
        "source",
        "target",
        "context",
        "quality",
        "rank",
    }
    assert client.get(f"/tmserver/en/fr/unit/{text}").json == []


def test_auth_requires_a_valid_key_with_the_right_scope(server, client: Client) -> None:
    anonymous = client.with_token(None)
    assert anonymous.get("/v1/memories/docs").status == 401
    assert anonymous.get("/v1/memories/docs").json["error"] == "unauthorized"
    assert client.with_token("not-a-real-token").get("/v1/memories/docs").status == 401
    assert anonymous.get("/tmserver/en/de/unit/Hello").status == 401

    reader = server.create_key("reader", "docs:read")
    as_reader = client.with_token(reader)
    assert as_reader.get("/v1/memories/docs").status == 200
    x_key = Client(client.host, client.port).get("/v1/memories/docs", headers={"X-API-Key": reader})
    assert x_key.status == 200
    denied = as_reader.post("/v1/memories/docs/segments", {"source": "A", "target": "B"})
    assert denied.status == 403 and denied.json["error"] == "forbidden"
    assert as_reader.get("/v1/memories/dups").status == 403
    assert (
        as_reader.post(
            "/v1/memories", {"name": "x", "source_lang": "en", "target_lang": "de"}
        ).status
        == 403
    )
    assert [m["name"] for m in as_reader.get("/v1/memories").json["memories"]] == ["docs"]

    writer = server.create_key("writer", "docs:write")
    assert (
        client.with_token(writer)
        .post(
            "/v1/memories/docs/segments",
            {"source": "Writers may add.", "target": "Schreiber dürfen."},
        )
        .status
        == 201
    )
    revoked = server.create_key("short-lived", "docs:read")
    assert server.cli("keys", "revoke", "short-lived").returncode == 0
    assert client.with_token(revoked).get("/v1/memories/docs").status == 401
    listed = server.cli("keys", "list").stdout
    assert "reader\tdocs:read" in listed and revoked not in listed


def test_bad_inputs_get_json_errors_naming_the_problem(client: Client) -> None:
    malformed = client.post(
        "/v1/suggest", raw=b'{"source": "x",', headers={"Content-Type": "application/json"}
    )
    assert malformed.status == 400 and "malformed JSON" in malformed.json["message"]

    wrong_type = client.post("/v1/memories/docs/segments", {"source": 5, "target": "x"})
    assert wrong_type.status == 400 and wrong_type.json["field"] == "source"
    nested = client.post(
        "/v1/suggest", {"segments": [{"source": "ok"}, {"source": ["no"]}], "memories": ["docs"]}
    )
    assert nested.status == 400 and nested.json["field"] == "segments[1].source"
    option = client.post(
        "/v1/suggest", {"source": "x", "memories": ["docs"], "options": {"beam_size": "5"}}
    )
    assert option.status == 400 and option.json["field"] == "options.beam_size"
    misplaced = client.post("/v1/suggest", {"source": "x", "memories": ["docs"], "unguided": True})
    assert misplaced.status == 400 and misplaced.json["field"] == "unguided"
    misspelt = client.post(
        "/v1/suggest", {"source": "x", "memories": ["docs"], "options": {"lamda": 1.0}}
    )
    assert misspelt.status == 400 and misspelt.json["field"] == "options.lamda"

    assert client.post("/v1/memories/nope/segments", {"source": "a", "target": "b"}).status == 404
    unknown = client.post(
        "/v1/suggest", {"source": "x", "memories": ["nope"], "options": {"translate": False}}
    )
    assert unknown.status == 404 and unknown.json["error"] == "not_found"

    huge = client.post(
        "/v1/memories/docs/segments",
        raw=b'{"source": "' + b"a" * 400_000 + b'"}',
        headers={"Content-Type": "application/json"},
    )
    assert huge.status == 413 and huge.json["error"] == "payload_too_large"
    too_long = client.post("/v1/memories/docs/segments", {"source": "a" * 5000, "target": "b"})
    assert too_long.status == 400 and too_long.json["field"] == "source"
    batch = client.post("/v1/suggest", {"segments": ["x"] * 65, "memories": ["docs"]})
    assert batch.status == 400 and batch.json["field"] == "segments"

    bad_utf8 = client.post(
        "/v1/memories/docs/segments",
        raw=b'{"source": "\xff\xfe", "target": "b"}',
        headers={"Content-Type": "application/json"},
    )
    assert bad_utf8.status == 400 and "UTF-8" in bad_utf8.json["message"]

    assert client.get("/v1/no-such-thing").json["error"] == "not_found"
    wrong_method = client.request("PATCH", "/v1/memories/docs")
    assert wrong_method.status == 405 and wrong_method.json["error"] == "method_not_allowed"
    for reply in (malformed, wrong_type, huge, bad_utf8, wrong_method):
        assert b"Traceback" not in reply.body
        assert reply.headers["content-type"].startswith("application/json")
    assert client.get("/v1/memories/docs").json["segment_count"] >= 1


def test_tmx_import_job_reports_progress_counts_and_exports(client: Client) -> None:
    create_memory(client, "imported")
    started = client.post(
        "/v1/memories/imported/imports",
        raw=TMX.encode(),
        headers={"Content-Type": "application/xml"},
    )
    assert started.status == 202, started.body
    job = wait_for_job(client, started.headers["location"])
    assert job["status"] == "succeeded", job
    assert job["result"]["added"] == 2 and job["result"]["skipped"] == 1
    assert job["progress"]["fraction"] == 1.0 and job["progress"]["records_read"] == 2
    exported = client.get("/v1/memories/imported/export")
    assert exported.status == 200
    assert b"Speichern Sie das Dokument &amp; schlie\xc3\x9fen Sie es." in exported.body
    assert exported.body.count(b"<tu ") + exported.body.count(b"<tu>") == 2


def test_xliff_import_job_stores_the_confirmed_units_with_warnings(client: Client) -> None:
    """An XLIFF file from a CAT tool (here translate-toolkit's po2xliff) through the same job."""
    from pathlib import Path

    create_memory(client, "from-xliff")
    data = (Path(__file__).parents[1] / "formats" / "data" / "po2xliff.xlf").read_bytes()
    started = client.post(
        "/v1/memories/from-xliff/imports?format=xliff",
        raw=data,
        headers={"Content-Type": "application/xliff+xml"},
    )
    assert started.status == 202, started.body
    job = wait_for_job(client, started.headers["location"])
    assert job["status"] == "succeeded" and job["format"] == "xliff", job
    assert job["result"]["added"] == 2 and job["result"]["skipped"] == 3
    assert job["result"]["warnings"] == ["en-US text imported as the memory's en"]
    found = client.get("/v1/memories/from-xliff/concordance?q=Dokument&side=target")
    assert [s["source"] for s in found.json["segments"]] == ["Save the document."]


def test_entity_bomb_import_fails_and_leaves_the_memory_unchanged(client: Client) -> None:
    create_memory(client, "bombed")
    add_segment(client, "bombed", "Already here.", "Schon da.")
    before = client.get("/v1/memories/bombed").json
    started = client.post("/v1/memories/bombed/imports", raw=BOMB.encode())
    assert started.status == 202
    job = wait_for_job(client, started.headers["location"])
    assert job["status"] == "failed" and job["error"]["error"] == "import_format_error"
    assert "entit" in job["error"]["message"].lower()
    after = client.get("/v1/memories/bombed").json
    assert (after["segment_count"], after["revision"]) == (
        before["segment_count"],
        before["revision"],
    )


def test_concurrent_writers_lose_and_duplicate_nothing(client: Client) -> None:
    create_memory(client, "busy")
    concurrent_writers(client, "busy")


def test_health_metrics_and_readiness_without_a_model(client: Client) -> None:
    assert client.get("/health").json == {"status": "ok"}
    ready = client.get("/ready")
    assert ready.status == 503 and ready.json["checks"]["database"] == "ok"
    assert "model" in ready.json["checks"] and ready.json["checks"]["model"].startswith("error")
    assert "/" not in ready.body.decode()  # no path of the server's
    # a translation without a model: 503, in each protocol's shape, naming no path
    token = client.token or ""
    for path, body, headers in [
        ("/v1/suggest", {"source": "Open the file.", "memories": ["docs"]}, {}),
        (
            "/libretranslate/translate",
            {"q": "Open the file.", "source": "en", "target": "de", "api_key": token},
            {"X-API-Key": token},
        ),
        (
            "/deepl/v2/translate",
            {"text": ["Open the file."], "target_lang": "DE"},
            {"Authorization": f"DeepL-Auth-Key {token}"},
        ),
    ]:
        reply = client.post(path, body, headers=headers)
        assert reply.status == 503, (path, reply.status, reply.body)
        assert reply.headers.get("retry-after") and b"no-model" not in reply.body
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.body.decode()
    assert (
        'tm_guide_http_requests_total{endpoint="/v1/memories/<name>/segments",method="POST",status="201"}'
        in text
    )
    assert "tm_guide_http_request_duration_seconds_bucket" in text


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/memories/docs/segments", {"source": "a\ud800", "target": "b"}, "source"),
        ("/libretranslate/translate", {"q": ["ok", "\udfff"], "target": "de"}, "q[1]"),
        ("/deepl/v2/translate", {"text": ["\ud800"], "target_lang": "DE"}, "text[0]"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_its_field(client: Client, path, body, field) -> None:
    """JSON can spell half a UTF-16 pair; it is refused before anything tries to encode it."""
    before = client.get("/v1/memories/docs").json
    reply = client.post(path, raw=json.dumps(body).encode(), headers=JSON)
    assert reply.status == 400, reply.body
    assert f"'{field}'" in reply.body.decode()
    assert client.get("/v1/memories/docs").json == before


@pytest.mark.parametrize("text", ["a\u0000b", "tab\tok\u0007bell", "\ufffe"])
def test_text_xml_cannot_hold_is_refused_and_nothing_is_stored(client: Client, text) -> None:
    """Stored, such a segment would make every later TMX export of the memory fail."""
    before = client.get("/v1/memories/docs").json
    reply = client.post("/v1/memories/docs/segments", {"source": "Fine", "target": text})
    assert reply.status == 400 and reply.json["field"] == "target", reply.body
    assert "U+" in reply.json["message"]
    assert client.get("/v1/memories/docs").json == before
    assert client.get("/v1/memories/docs/export").status == 200


HOSTILE_BODIES = {
    "nested 5k": b'{"source": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
    "nested 100k": b'{"q": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "nested 40 objects": b'{"a": ' + b'{"a": ' * 40 + b"1" + b"}" * 41,
    "5,000-digit integer": b'{"source": "a", "target": "b", "n": ' + b"9" * 5_000 + b"}",
    "NaN": b'{"source": "a", "target": "b", "options": {"lambda": NaN}}',
    "Infinity": b'{"q": "a", "target": "de", "alt_translations": -Infinity}',
}
JSON_PATHS = [
    "/v1/suggest",
    "/v1/memories/docs/segments",
    "/libretranslate/translate",
    "/modernmt/translate",
    "/deepl/v2/translate",
]


@pytest.mark.parametrize("path", JSON_PATHS)
def test_hostile_json_is_a_400_in_the_protocols_shape(client: Client, path) -> None:
    """Deep nesting, huge integers and NaN are refused as bad input, not a 500, on /v1 and on
    every MT protocol, in that protocol's error shape; nothing is stored."""
    before = client.get("/v1/memories/docs").json
    for name, body in HOSTILE_BODIES.items():
        headers = {**JSON, "MMT-ApiKey": client.token or "", "X-API-Key": client.token or ""}
        reply = client.post(path, raw=body, headers=headers)
        assert reply.status == 400, (path, name, reply.status, reply.body[:300])
        text = reply.body.decode()
        assert "Traceback" not in text and "/tmp" not in text, text
    assert client.get("/v1/memories/docs").json == before


def test_nul_in_paths_is_refused(client: Client) -> None:
    nul_in_paths_and_queries(client, "docs")
