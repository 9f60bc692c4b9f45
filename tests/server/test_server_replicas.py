"""Several servers over one PostgreSQL database, each with its own index directory (the
deployment docs/deployment.md describes): what one writes, the others serve at once, as a match,
a concordance hit and guided pieces; a replica started later builds its index from the database."""

from __future__ import annotations

import pytest
from server_scenarios import add_segment, create_memory

pytestmark = pytest.mark.postgres

TM_SOURCE = "Click open the menu file save window dialog."
TM_TARGET = "Klicken öffnen das menü datei speichern fenster dialog."  # tiny-model words
QUERY = "Click open the menu file print window dialog."


def guided(client, source: str, memory: str) -> dict:
    reply = client.post(
        "/v1/suggest",
        {"source": source, "memories": [memory], "options": {"lambda": 5.0, "beam_size": 4}},
    )
    assert reply.status == 200, reply.body
    return reply.json["results"][0]


def pieces_from(result: dict) -> set[int]:
    translation = result["translation"]
    return {ref["id"] for piece in translation["pieces_used"] for ref in piece["segments"]}


def test_what_one_replica_writes_the_others_serve(start_server, pg_database_url, tiny_bundle_dir):
    first = start_server(db_url=pg_database_url, model=tiny_bundle_dir, threads=4)
    token = first.create_key("replicas", "*:write")
    second = start_server(db_url=pg_database_url, model=tiny_bundle_dir, threads=4, admin=False)
    a, b = first.client, second.client.with_token(token)
    assert first.env["TM_GUIDE_INDEX_DIR"] != second.env["TM_GUIDE_INDEX_DIR"]

    create_memory(a, "shared")
    on_a = add_segment(a, "shared", TM_SOURCE, TM_TARGET)["segment"]["id"]
    exact = guided(b, TM_SOURCE, "shared")
    assert exact["matches"][0] == {**exact["matches"][0], "segment_id": on_a, "match": 100}
    assert on_a in pieces_from(guided(b, QUERY, "shared"))

    on_b = add_segment(b, "shared", "Select table cell text page.", "Tabelle Zelle Text Seite.")
    found = a.get("/v1/memories/shared/concordance?q=Zelle&side=target").json["segments"]
    assert [s["id"] for s in found] == [on_b["segment"]["id"]]

    third = start_server(db_url=pg_database_url, model=tiny_bundle_dir, threads=4, admin=False)
    c = third.client.with_token(token)
    late = guided(c, TM_SOURCE, "shared")  # its index was built from the database at start
    assert late["matches"][0]["segment_id"] == on_a and late["matches"][0]["match"] == 100
