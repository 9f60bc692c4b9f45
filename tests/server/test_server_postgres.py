"""The same server on PostgreSQL (a throwaway database): writes, concurrency, atomic imports."""

from __future__ import annotations

import pytest
from server_scenarios import (
    BOMB,
    TMX,
    add_segment,
    concurrent_writers,
    create_memory,
    nul_in_paths_and_queries,
    wait_for_job,
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def client(start_server, pg_database_url):
    return start_server(db_url=pg_database_url).client


def test_add_then_match_and_tmserver(client) -> None:
    create_memory(client, "pg")
    added = add_segment(
        client, "pg", "Insert a chart into the spreadsheet.", "Fügen Sie ein Diagramm ein."
    )
    reply = client.post(
        "/v1/suggest",
        {
            "source": "Insert a chart into the spreadsheet.",
            "memories": ["pg"],
            "options": {"translate": False},
        },
    )
    assert reply.status == 200, reply.body
    assert reply.json["results"][0]["matches"][0]["segment_id"] == added["segment"]["id"]
    units = client.get("/tmserver/en/de/unit/Insert%20a%20chart%20into%20the%20spreadsheet.").json
    assert units[0]["quality"] == 100


def test_nul_in_paths_is_refused_on_postgres(client) -> None:
    create_memory(client, "pg-nul")
    nul_in_paths_and_queries(client, "pg-nul")


def test_concurrent_writers_on_postgres(client) -> None:
    create_memory(client, "pg-busy")
    concurrent_writers(client, "pg-busy")


def test_import_is_atomic_on_postgres(client) -> None:
    create_memory(client, "pg-import")
    ok = wait_for_job(
        client, client.post("/v1/memories/pg-import/imports", raw=TMX.encode()).headers["location"]
    )
    assert ok["status"] == "succeeded" and ok["result"]["added"] == 2
    before = client.get("/v1/memories/pg-import").json
    bad = wait_for_job(
        client, client.post("/v1/memories/pg-import/imports", raw=BOMB.encode()).headers["location"]
    )
    assert bad["status"] == "failed"
    after = client.get("/v1/memories/pg-import").json
    assert (after["segment_count"], after["revision"]) == (
        before["segment_count"],
        before["revision"],
    )


def _count(metrics: str, prefix: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(prefix)
    )


def test_two_workers_report_the_whole_servers_metrics(start_server, pg_database_url) -> None:
    """With several workers /metrics sums every worker's values (prometheus_client's
    multiprocess mode), whichever worker answers."""
    server = start_server(
        db_url=pg_database_url, serve_args=("--workers", "2"), threads=4, admin=False
    )
    client = server.client
    health = 'tm_guide_http_requests_total{endpoint="/health"'
    before = _count(client.get("/metrics").body.decode(), health)  # the start-up probes
    for _ in range(40):
        assert client.get("/health").status == 200
    for _ in range(6):  # one new connection each: both workers answer some
        metrics = client.get("/metrics").body.decode()
        assert _count(metrics, health) == before + 40, metrics
    assert "tm_guide_http_request_duration_seconds_bucket" in metrics
