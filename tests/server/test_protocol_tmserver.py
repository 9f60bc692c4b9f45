"""The amaGama/tmserver endpoint on the texts and settings Weblate really sends it.

Weblate builds `{url}/{src}/{tgt}/unit/{quote(text[:500].replace("\\r", " "), safe="")}` and keeps
results whose `quality` (character-level, like amaGama) reaches 75; its setting is a URL alone, so
the key rides in the path.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from server_client import path_quote
from server_scenarios import add_segment, create_memory

MULTILINE = "Usage: cp [OPTION]... SOURCE DEST\n  or:  cp [OPTION]... SOURCE... DIRECTORY\n"
CJK = "文件" * 230  # 460 characters, 1,380 bytes of UTF-8, 4,140 percent-encoded
WIDE = "\U00020000\U00020001" * 250  # 500 characters outside the BMP: 6,000 encoded bytes


@pytest.fixture(scope="module")
def server(start_server):
    server = start_server(serve_args=("--access-log",))
    client = server.client
    create_memory(client, "cli")
    create_memory(client, "django", "en", "de-DE")
    create_memory(client, "other", "en", "de")
    create_memory(client, "zh-tw", "en", "zh-TW")
    create_memory(client, "zh-cn", "en", "zh-CN")
    for memory in ("cli", "django"):
        add_segment(client, memory, "Change password", "Passwort ändern")
    add_segment(client, "cli", MULTILINE, "Aufruf: cp [OPTION]... QUELLE ZIEL\n")
    add_segment(client, "cli", "/", "/")
    add_segment(client, "cli", "/usr/share/doc", "/usr/share/doc (de)")
    add_segment(client, "cli", "Path ends with a slash/", "Pfad endet mit Schrägstrich/")
    add_segment(client, "cli", WIDE, "wide")
    add_segment(client, "zh-cn", CJK, "简体")
    add_segment(client, "zh-tw", CJK, "繁體")
    add_segment(client, "other", "Secret other memory text", "Geheim")
    add_segment(client, "cli", "Open the file", "Öffnen Sie die Datei")
    add_segment(client, "cli", "Open the files", "Öffnen Sie die Dateien")
    add_segment(client, "django", "Open the filer", "Öffnen Sie den Filer")
    return server


@pytest.fixture(scope="module")
def reader(server) -> str:
    return server.create_key("weblate", "cli:read", "django:read", "zh-cn:read", "zh-tw:read")


def unit(client, text: str, src: str = "en", tgt: str = "de", query: str = "", key: str = ""):
    prefix = f"/tmserver/key/{key}" if key else "/tmserver"
    return client.with_token(None).get(f"{prefix}/{src}/{tgt}/unit/{path_quote(text)}{query}")


def test_a_key_in_the_path_reads_what_the_key_may_read(server, reader) -> None:
    units = unit(server.client, "Change Password", key=reader).json
    assert units == [
        {
            "source": "Change password",
            "target": "Passwort ändern",
            "context": "",
            "quality": 93,  # amaGama's character-level score, not a word-level 50
            "rank": units[0]["rank"],
        }
    ]
    assert unit(server.client, "Secret other memory text", key=reader).json == []
    bad = unit(server.client, "Change Password", key="not-a-key")
    assert bad.status == 401 and bad.json["error"] == "unauthorized"
    assert unit(server.client, "Change Password").status == 401


def test_the_key_is_redacted_from_the_access_log(server, reader) -> None:
    assert unit(server.client, "Change password", key=reader).status == 200
    # spelled as the server still reads it, and in the query strings of the MT protocols
    for path in (
        f"/tmserver/%6Bey/{reader}/en/de/unit/Change",
        f"/tmserver/key%2F{reader}/en/de/unit/Change",
        f"/libretranslate/translate?q=Hi&source=en&target=de&api_key={reader}",
        f"/deepl/v2/usage?auth_key={reader}",
    ):
        server.client.with_token(None).get(path)
    # gunicorn writes a request's line after its answer, each worker on its own: the lines come
    # in any order, so wait for all of them
    expected = ("api_key=<redacted>", "auth_key=<redacted>")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        log = server.log()
        if log.count("/tmserver/key/<redacted>/en/de/unit/") >= 3 and all(
            marker in log for marker in expected
        ):
            break
        time.sleep(0.1)
    assert log.count("/tmserver/key/<redacted>/en/de/unit/") >= 3
    assert "api_key=<redacted>" in log and "auth_key=<redacted>" in log
    assert reader not in log and reader[len("tmg_") :] not in log


@pytest.mark.parametrize(
    ("text", "target"),
    [
        (MULTILINE, "Aufruf: cp [OPTION]... QUELLE ZIEL\n"),
        ("/", "/"),
        ("/usr/share/doc", "/usr/share/doc (de)"),
        ("Path ends with a slash/", "Pfad endet mit Schrägstrich/"),
        (WIDE, "wide"),
    ],
    ids=["newlines", "lone-slash", "leading-slash", "trailing-slash", "500-wide-chars"],
)
def test_any_text_weblate_sends_is_found(server, reader, text: str, target: str) -> None:
    reply = unit(server.client, text[:500].replace("\r", " "), key=reader)
    assert reply.status == 200, reply.body
    assert reply.json[0]["target"] == target and reply.json[0]["quality"] == 100


def test_scripts_never_cross(server, reader) -> None:
    simplified = unit(server.client, CJK, "en", "zh_cn", key=reader).json
    traditional = unit(server.client, CJK, "en", "zh_tw", key=reader).json
    hant = unit(server.client, CJK, "en", "zh_hant", key=reader).json
    assert [u["target"] for u in simplified] == ["简体"]
    assert [u["target"] for u in traditional] == ["繁體"] == [u["target"] for u in hant]


def test_a_pair_in_several_memories_comes_back_once(server, reader) -> None:
    units = unit(server.client, "Change password", key=reader).json
    assert [u["target"] for u in units] == ["Passwort ändern"]
    assert units[0]["quality"] == 100


@pytest.mark.parametrize(
    ("query", "count"),
    [
        ("", 3),
        ("?max_candidates=0", 1),
        ("?max_candidates=-3", 1),
        ("?max_candidates=100000", 3),
        ("?max_candidates=many", 3),
        ("?min_similarity=1000", 1),
        ("?min_similarity=x", 3),
        ("?min_similarity=-50&max_candidates=2", 2),
    ],
)
def test_out_of_range_arguments_are_clamped_like_amagama(server, reader, query, count) -> None:
    """amaGama clamps instead of refusing; a value that is not a number is the default."""
    reply = unit(server.client, "Open the file", query=query, key=reader)
    assert reply.status == 200, reply.body
    assert [u["quality"] for u in reply.json] == [100, 92, 92][:count]
    assert reply.json[0]["target"] == "Öffnen Sie die Datei"


def test_bad_language_tags_are_a_json_400(server, reader) -> None:
    reply = unit(server.client, "Change password", "en", "!!", key=reader)
    assert reply.status == 400 and reply.json["field"] == "target_lang"


def test_the_http_servers_own_errors_are_json(server) -> None:
    """Errors gunicorn answers before the app sees the request (a request line over its limit,
    a malformed request line) come back as JSON with their status, not an HTML page."""
    reply = server.client.get("/tmserver/en/de/unit/" + "a" * 9000)
    assert reply.status == 414
    assert reply.headers["content-type"] == "application/json"
    assert reply.json["error"] == "uri_too_long" and reply.json["message"]
    with socket.create_connection(("127.0.0.1", server.client.port), timeout=30) as raw:
        raw.sendall(b"GET /v1/memories HTTP/9\r\n\r\n")
        answer = raw.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"application/json" in head
    assert json.loads(body)["error"] == "bad_request"


def slow_client(port: int, lines: int, pause_s: float, answers: list[bytes]) -> None:
    """A client that sends its request head a header line at a time, pausing between them."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
        raw.sendall(b"GET /health HTTP/1.1\r\nHost: slow\r\n")
        for i in range(lines):
            time.sleep(pause_s)
            raw.sendall(f"X-Slow-{i}: {'x' * 10}\r\n".encode())
        raw.sendall(b"Connection: close\r\n\r\n")
        answers.append(raw.recv(65536))


def test_slow_clients_hold_no_request_thread(server) -> None:
    """More clients than the server has threads (8 here), each sending its headers slowly for
    6 s, do not make a normal request wait: whole requests are read before a thread takes them.
    (The bound leaves room for a loaded test machine; alone, the worst wait is milliseconds.)"""
    answers: list[bytes] = []
    slow = [
        threading.Thread(target=slow_client, args=(server.client.port, 20, 0.3, answers))
        for _ in range(12)
    ]
    for thread in slow:
        thread.start()
    time.sleep(0.5)  # every slow client has sent its first line
    waits = []
    for _ in range(5):
        started = time.monotonic()
        assert server.client.get("/health").status == 200
        waits.append(time.monotonic() - started)
        time.sleep(0.2)
    for thread in slow:
        thread.join(60)
    # gunicorn's own threaded worker: a normal request waits for the slow clients (6 s)
    assert max(waits) < 2.0, waits
    assert len(answers) == 12 and all(a.startswith(b"HTTP/1.1 200") for a in answers)


def test_a_body_sent_in_pieces_and_a_kept_alive_connection_are_served(server, reader) -> None:
    """The request a thread takes is the whole one, whatever pieces it came in, and the next
    request on a kept-alive connection is read the same way."""
    body = json.dumps(
        {"source": "Change Password", "memories": ["cli"], "options": {"translate": False}}
    ).encode()
    head = (
        f"POST /v1/suggest HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {reader}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.client.port), timeout=60) as raw:
        for piece in (head[:20], head[20:] + body[:10], body[10:]):
            raw.sendall(piece)
            time.sleep(0.3)
        first = raw.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first[:300]
        raw.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n")  # the same connection, again slowly
        time.sleep(0.3)
        raw.sendall(b"Connection: close\r\n\r\n")
        second = b""
        while chunk := raw.recv(65536):
            second += chunk
    assert second.startswith(b"HTTP/1.1 200") and b'"ok"' in second
