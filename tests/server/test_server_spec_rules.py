"""Rules the OpenAPI document states and the fuzzer (test_server_fuzzing.py) found the server
breaking or leaving unsaid; each pinned here with a readable case."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from server_scenarios import add_segment, create_memory


@pytest.fixture(scope="module")
def server(start_server, tiny_bundle_dir):
    server = start_server(model=tiny_bundle_dir, threads=4)
    create_memory(server.client, "rules")
    return server


def test_a_memory_of_any_name_exports_with_a_content_disposition_for_it(server) -> None:
    """Memories made through ModernMT may have any name; the export's header carries an ASCII
    fallback and the UTF-8 name (RFC 6266) instead of failing with a 500."""
    token = server.client.token
    name = 'Prüfung "ü"'
    made = server.client.post("/modernmt/memories", {"name": name}, headers={"MMT-ApiKey": token})
    assert made.status == 200, made.body
    reply = server.client.get(f"/v1/memories/{quote(name, safe='')}/export")
    assert reply.status == 200, reply.body
    disposition = reply.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="Pr_fung ___.tmx"')
    assert "filename*=UTF-8''Pr%C3%BCfung%20%22%C3%BC%22.tmx" in disposition
    assert reply.body.startswith(b"<?xml")


def test_the_tuid_of_a_replacement_is_the_paths(server) -> None:
    add_segment(server.client, "rules", "Open the file.", "Öffnen Sie die Datei.", tuid="t-1")
    reply = server.client.request(
        "PUT",
        "/v1/memories/rules/segments/by-tuid/t-1",
        {"source": "Open the file.", "target": "Datei öffnen.", "tuid": "t-1"},
    )
    assert reply.status == 400 and reply.json["field"] == "tuid"
    reply = server.client.request(
        "PUT",
        "/v1/memories/rules/segments/by-tuid/t-1",
        {"source": "Open the file.", "target": "Datei öffnen."},
    )
    assert reply.status == 200, reply.body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"segments": ["Open."], "context": "menu", "memories": ["rules"]}, "context"),
        ({"source": "Open.", "memories": ["rules"], "target_lang": ""}, "target_lang"),
        ({"source": "Open.", "source_lang": "en", "target_lang": "x" * 36}, "target_lang"),
    ],
)
def test_suggest_refuses_what_its_document_refuses(server, body, field) -> None:
    reply = server.client.post("/v1/suggest", body)
    assert reply.status == 400, reply.body
    assert reply.json["field"] == field


def test_a_language_pair_without_readable_memories_is_not_found(server) -> None:
    reply = server.client.post(
        "/v1/suggest", {"source": "Open.", "source_lang": "fr", "target_lang": "it"}
    )
    assert reply.status == 404 and reply.json["field"] == "memories"


def test_a_language_tag_longer_than_rfc_5646s_limit_is_refused(server) -> None:
    long_tag = "de-" + "-".join(["abcdefgh"] * 4)  # 38 characters, well-formed
    reply = server.client.post(
        "/v1/memories", {"name": "long-tag", "source_lang": "en", "target_lang": long_tag}
    )
    assert reply.status == 400 and reply.json["field"] == "target_lang"


def test_an_old_segment_xml_cannot_carry_does_not_stop_the_export(server) -> None:
    """A segment stored before the store refused control characters (written here straight into
    the database) is left out of GET /export, which still answers the rest, says what it left out
    at the end of the file, and logs it; `tm-guide export` does the same and says so."""
    import sqlite3

    create_memory(server.client, "old-data")
    add_segment(server.client, "old-data", "Save the file.", "Datei speichern.")
    bad = add_segment(server.client, "old-data", "Print the page.", "Seite drucken.", tuid="old")
    database = server.env["TM_GUIDE_DB"].removeprefix("sqlite:///")
    with sqlite3.connect(database) as db:
        db.execute(
            "UPDATE segments SET source = ? WHERE id = ?", ("Print\x07", bad["segment"]["id"])
        )
    reply = server.client.get("/v1/memories/old-data/export")
    assert reply.status == 200, reply.body
    assert b"Datei speichern." in reply.body and b"Seite drucken." not in reply.body
    assert b"left 1 segment(s) out of this export" in reply.body
    assert "its source holds U+0007" in server.log()
    done = server.cli("export", "old-data", str(Path(database).with_name("old.tmx")))
    assert done.returncode == 0, done.stderr
    assert "U+0007" in done.stderr and "1 left out" in done.stdout


def test_a_tmserver_text_may_hold_the_replacement_character_itself(server) -> None:
    """U+FFFD sent as its UTF-8 bytes is text (the document's TmText is any string); only bytes
    that are no UTF-8 at all are refused."""
    token = server.client.token
    sent = server.client.get(f"/tmserver/key/{token}/en/de/unit/Open%EF%BF%BD%20file")
    assert sent.status == 200, sent.body
    broken = server.client.get(f"/tmserver/key/{token}/en/de/unit/Open%C3%28%20file")
    assert broken.status == 400 and broken.json["field"] == "text"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_segment_id_past_64_bits_is_not_found(server, method) -> None:
    """A path id no database id can be (2**63 and up) is a 404 like any missing segment,
    not the driver's overflow as a 500."""
    reply = server.client.request(method, "/v1/memories/rules/segments/226852434547361579008")
    assert reply.status == 404, reply.body
    assert reply.json["error"] == "not_found"
