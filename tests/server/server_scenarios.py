"""Scenarios run against both backends (SQLite and PostgreSQL servers)."""

from __future__ import annotations

import threading
import time
from typing import Any

from server_client import Client

TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence" adminlang="en"
 creationtool="test" creationtoolversion="1" o-tmf="test"/>
<body>
<tu tuid="t1"><tuv xml:lang="en"><seg>Open the file menu.</seg></tuv>
  <tuv xml:lang="de"><seg>Öffnen Sie das Menü Datei.</seg></tuv></tu>
<tu tuid="t2"><tuv xml:lang="en"><seg>Save the document &amp; close it.</seg></tuv>
  <tuv xml:lang="de-DE"><seg>Speichern Sie das Dokument &amp; schließen Sie es.</seg></tuv></tu>
<tu tuid="t3"><tuv xml:lang="en"><seg>Only English here.</seg></tuv></tu>
</body></tmx>
"""

# A query for the bundled demo model (en->de), which says "Klicken Sie auf OK, um den Dialog zu
# schließen."; the TM target's words (Fenster, verlassen) are not what it produces unguided, so
# they show that the segment's pieces guided a translation.
QUERY = "Click OK to close the dialog."
TM_TARGET = "Klicken Sie auf OK, um das Fenster zu verlassen."
GLOSSARY_SOURCE = "Close the dialog."
GLOSSARY_TARGET = "Schließen Sie das Fenster."

BOMB = """<?xml version="1.0"?>
<!DOCTYPE tmx [
 <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
]>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence" adminlang="en"
 creationtool="x" creationtoolversion="1" o-tmf="x"/><body>
<tu><tuv xml:lang="en"><seg>Good unit.</seg></tuv>
  <tuv xml:lang="de"><seg>Gute Einheit.</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>&d;</seg></tuv><tuv xml:lang="de"><seg>&d;</seg></tuv></tu>
</body></tmx>
"""


def create_memory(
    client: Client, name: str, source_lang: str = "en", target_lang: str = "de"
) -> dict[str, Any]:
    reply = client.post(
        "/v1/memories", {"name": name, "source_lang": source_lang, "target_lang": target_lang}
    )
    assert reply.status == 201, reply.body
    return reply.json


def add_segment(
    client: Client, memory: str, source: str, target: str, **extra: Any
) -> dict[str, Any]:
    reply = client.post(
        f"/v1/memories/{memory}/segments", {"source": source, "target": target, **extra}
    )
    assert reply.status == 201, reply.body
    return reply.json


def concurrent_writers(client: Client, memory: str, threads: int = 8, per_thread: int = 25) -> None:
    """threads x per_thread distinct adds, all adding one shared pair: none lost, none doubled."""
    before = client.get(f"/v1/memories/{memory}").json["segment_count"]
    failures: list[str] = []
    ids: list[int] = []
    lock = threading.Lock()

    def writer(t: int) -> None:
        for i in range(per_thread):
            for source, target in (
                (f"Writer {t} adds sentence number {i}.", f"Schreiber {t} fügt Satz {i} hinzu."),
                (
                    "The shared sentence every writer adds.",
                    "Der gemeinsame Satz, den jeder hinzufügt.",
                ),
            ):
                reply = client.post(
                    f"/v1/memories/{memory}/segments", {"source": source, "target": target}
                )
                if reply.status != 201:
                    with lock:
                        failures.append(f"{reply.status} {reply.body[:200]!r}")
                    continue
                if source.startswith("Writer"):
                    with lock:
                        ids.append(reply.json["segment"]["id"])

    workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert failures == []
    assert len(set(ids)) == threads * per_thread
    after = client.get(f"/v1/memories/{memory}").json["segment_count"]
    assert after == before + threads * per_thread + 1
    found = client.get(
        f"/v1/memories/{memory}/concordance?q=shared+sentence+every+writer&limit=500"
    ).json["segments"]
    assert len([s for s in found if s["source"] == "The shared sentence every writer adds."]) == 1


def wait_for_job(client: Client, status_url: str, timeout_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(status_url).json
        if job["status"] in ("succeeded", "failed", "interrupted"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


def nul_in_paths_and_queries(client: Client, memory: str) -> None:
    """A NUL (which PostgreSQL cannot hold) or another character no TM stores, in a path or a
    query: a 400 or 404 naming nothing of the server, never a 500; nothing is stored."""
    before = client.get(f"/v1/memories/{memory}").json
    for method, path, body in [
        ("PUT", f"/v1/memories/{memory}/segments/by-tuid/a%00b", {"source": "a", "target": "b"}),
        ("GET", f"/v1/memories/{memory}/concordance?q=a%00b", None),
        ("GET", "/v1/memories/a%00b", None),
        ("GET", "/tmserver/en/de/unit/a%00b", None),
        ("POST", f"/v1/memories/{memory}/segments", {"source": "a", "target": "b", "tuid": "\0"}),
        (
            "POST",
            "/v1/suggest",
            {"source": "a\0b", "memories": [memory], "options": {"translate": False}},
        ),
    ]:
        reply = client.request(method, path, body)
        lookup = method == "GET" or path == "/v1/suggest"
        allowed = (200, 400, 404) if lookup else (400, 404, 405)  # a lookup may find nothing
        assert reply.status in allowed, (method, path, reply.status, reply.body[:300])
        assert b"Traceback" not in reply.body
    assert client.get(f"/v1/memories/{memory}").json == before
