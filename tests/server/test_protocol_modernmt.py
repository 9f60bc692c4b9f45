"""ModernMT's API under /modernmt, spoken by its own client (`modernmt`) and as Weblate sends it.

The official client has its host hard-coded (`https://api.modernmt.com`, in the name-mangled
attribute `_ModernMT__base_url`, with no constructor argument or environment variable for it):
setting that attribute is the only way to point it elsewhere, so the tests do. It sends every
request as a POST with `X-HTTP-Method-Override` and a JSON body; Weblate sends plain GET, POST
(a form) and DELETE requests with the parameters in the query string, and uploads glossaries as
a multipart CSV. Both run against one real server with the bundled demo model (en->de).
"""

from __future__ import annotations

import gzip
import os
import signal
import time
import uuid
from typing import Any

import pytest
import requests
from modernmt import ModernMT, ModernMTException
from server_scenarios import GLOSSARY_SOURCE, GLOSSARY_TARGET, QUERY, TM_TARGET, TMX

from tm_guide.config import BUNDLED_MODEL


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(model=BUNDLED_MODEL, threads=4)


@pytest.fixture(scope="module")
def memories(server) -> dict[str, int]:
    return server.create_memories("docs", "other")


@pytest.fixture(scope="module")
def keys(server, memories) -> dict[str, str]:
    return {
        "admin": server.client.token,
        "docs": server.create_key("mmt-docs", "docs:write"),
        "reader": server.create_key("mmt-reader", "docs:read"),
    }


def mmt(server, key: str) -> ModernMT:
    client = ModernMT(key)
    client._ModernMT__base_url = server.url(
        "/modernmt"
    )  # the only way to point it elsewhere (see above)
    return client


def weblate(server, method: str, path: str, key: str | None, **kw: Any) -> requests.Response:
    """A request as Weblate's ModernMT service sends it (its headers, no method override)."""
    headers = {"MMT-Platform": "Weblate", "MMT-PlatformVersion": "5.0"}
    if key is not None:
        headers["MMT-ApiKey"] = key
    return requests.request(
        method, server.url("/modernmt" + path), headers=headers, timeout=60, **kw
    )


def data(reply: requests.Response) -> Any:
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == 200 and set(body) == {"status", "data"}, body
    return body["data"]


def assert_error(reply: requests.Response, status: int, kind: str, says: str) -> None:
    assert reply.status_code == status, reply.text
    assert reply.headers["Content-Type"].startswith("application/json")
    body = reply.json()
    assert body == {"status": status, "error": {"type": kind, "message": body["error"]["message"]}}
    assert says.lower() in body["error"]["message"].lower(), body


def segment_count(server, memory_id: int) -> int:
    return data(weblate(server, "GET", f"/memories/{memory_id}", server.client.token))["segments"]


def test_added_content_guides_the_next_translation(server, memories, keys) -> None:
    """A confirmed segment added through /memories/{id}/content is aligned at once: the next
    translation hinted at its memory is /v1/suggest's guided text, built from its pieces."""
    client = mmt(server, keys["docs"])
    before = client.translate("en", "de", QUERY, hints=[memories["docs"]])
    assert "Fenster" not in before.translation and before.characters == len(QUERY)
    assert not hasattr(before, "detectedLanguage")  # the source was given

    job = client.memories.add(memories["docs"], "en", "de-DE", QUERY, TM_TARGET, tuid="u1")
    assert (job.memory, job.size, job.progress) == (memories["docs"], 1, 1.0)
    status = client.memories.get_import_status(job.id)
    assert vars(status) == vars(job)

    after = client.translate("en", "de", [QUERY, ""], hints=memories["docs"])
    assert [a.billedCharacters for a in after] == [len(QUERY), 0]
    assert "Fenster" in after[0].translation and "verlassen" in after[0].translation
    assert after[1].translation == ""
    suggested = server.client.post("/v1/suggest", {"source": QUERY, "memories": ["docs"]})
    assert after[0].translation == suggested.json["results"][0]["translation"]["text"]

    # no hints, no source: the key's readable memories guide; the alternative is the unguided
    # translation (what came before the add)
    alt = client.translate(None, "de", QUERY, options={"alt_translations": 1, "priority": "high"})
    assert alt.translation == after[0].translation
    assert alt.detectedLanguage == "en" and alt.altTranslations == [before.translation]

    # without hints (above) the key's readable memory `docs` guided; hints name the memories
    plain = mmt(server, keys["admin"]).translate("en", "de", QUERY, hints=[memories["other"]])
    assert plain.translation == before.translation


def test_replace_by_tuid_and_tmx_import(server, memories, keys) -> None:
    client = mmt(server, keys["admin"])
    created = client.memories.create("tmx-import", description="from a TMX")
    job = client.memories.replace(created.id, "t1", "en", "de", "Open it.", "Öffne es.")
    assert job.size == 1
    tmx = gzip.compress(TMX.encode("utf-8"))
    job = client.memories.import_tmx(created.id, tmx, compression="gzip")
    assert (job.memory, job.size, job.progress) == (created.id, 2, 1.0)  # aligned within
    assert vars(client.memories.get_import_status(job.id)) == vars(job)  # TM_GUIDE_UPLOAD_WAIT_S
    # the TMX's t1 replaced the unit added under that tuid; t3 has no German side
    assert segment_count(server, created.id) == 2


def test_languages_in_both_spellings(server, keys) -> None:
    assert mmt(server, keys["reader"]).list_supported_languages() == {"en": ["de"]}
    assert data(weblate(server, "GET", "/languages", keys["reader"])) == {"en": ["de"]}


def test_memories_with_the_official_client(server, memories, keys) -> None:
    client = mmt(server, keys["admin"])
    created = client.memories.create("client-made", description="made by the client")
    assert created.name == "client-made" and created.description == "made by the client"
    again = client.memories.create("client-made")
    assert vars(again) == vars(created)  # a name that exists gives back that memory
    assert vars(client.memories.get(created.id)) == vars(created)
    listed = {m.name: m.id for m in client.memories.list()}
    assert listed["client-made"] == created.id and listed["docs"] == memories["docs"]
    # a key sees only what it may read
    assert [m.name for m in mmt(server, keys["reader"]).memories.list()] == ["docs"]
    assert vars(client.memories.delete(created.id)) == vars(created)
    with pytest.raises(ModernMTException) as raised:
        client.memories.get(created.id)
    assert (raised.value.status, raised.value.type) == (404, "NotFoundException")


def test_weblate_glossary_flow(server, keys) -> None:
    """Weblate creates a memory per glossary (form POST, same name again returns it), uploads a
    CSV with a language header, translates with `glossaries`, and deletes stale ones."""
    admin = keys["admin"]
    name = "weblate:1:en:de:0123abcd"
    created = data(weblate(server, "POST", "/memories", admin, data={"name": name}))
    assert data(weblate(server, "POST", "/memories", admin, data={"name": name})) == created
    listed = data(weblate(server, "GET", "/memories", admin))
    entry = next(m for m in listed if m["name"] == name)
    assert entry["id"] == created["id"] and entry["creationDate"].endswith("+00:00")

    csv_text = f'en,de\n"{GLOSSARY_SOURCE}","{GLOSSARY_TARGET}"\n\nprint,drucken\n'
    job = data(
        weblate(
            server,
            "POST",
            f"/memories/{created['id']}/glossary",
            admin,
            data={"type": "unidirectional"},
            files={"csv": ("glossary.csv", csv_text.encode("utf-8"))},
        )
    )
    assert (job["memory"], job["size"], job["progress"]) == (created["id"], 2, 1.0)
    assert segment_count(server, created["id"]) == 2

    params = {"q": GLOSSARY_SOURCE, "source": "en", "target": "de"}
    translated = data(
        weblate(server, "GET", "/translate", admin, params={**params, "glossaries": created["id"]})
    )
    assert translated["translation"] == GLOSSARY_TARGET
    assert "detectedLanguage" not in translated

    deleted = data(weblate(server, "DELETE", f"/memories/{created['id']}", admin))
    assert deleted["id"] == created["id"]
    assert_error(
        weblate(server, "DELETE", f"/memories/{created['id']}", admin),
        404,
        "NotFoundException",
        "does not exist",
    )


def test_an_equivalent_glossary_with_tuids_from_the_official_client(server, tmp_path, keys) -> None:
    client = mmt(server, keys["admin"])
    created = client.memories.create("equivalent")
    path = tmp_path / "terms.csv"
    path.write_text("fr,tuid,de-DE,en\nfichier,t1,Datei,file\n,t2,Fenster,window\n")
    job = client.memories.import_glossary(created.id, str(path), "equivalent")
    assert job.size == 2
    job = client.memories.add_to_glossary(
        created.id, [{"term": "file", "language": "en"}, {"term": "Akte", "language": "de"}],
        "unidirectional", "t1",
    )  # fmt: skip
    assert job.size == 1
    assert segment_count(server, created.id) == 2  # t1 replaced


def test_bad_input_changes_nothing(server, memories, keys) -> None:
    """Wrong languages, missing texts and bad CSV files are 400s that store nothing."""
    docs, key = memories["docs"], keys["docs"]
    before = segment_count(server, docs)
    content = {"source": "en", "target": "de", "sentence": "Hi", "translation": "Hallo"}
    cases = [
        ("content", {**content, "source": "fr"}, "memory"),
        ("content", {**content, "target": "en"}, "memory"),
        ("content", {**content, "source": "??"}, "BCP 47 tag"),
        ("content", {**content, "sentence": " "}, "white space"),
        ("content", {k: v for k, v in content.items() if k != "translation"}, "translation"),
        ("content", {**content, "translation": 5}, "string"),
        ("content", {**content, "translation": "x" * 2001}, "limit"),
        (
            "glossary",
            {"type": "unidirectional", "terms": [{"term": "a", "language": "en"}]},
            "at least 2",
        ),
        ("glossary", {"type": "both", "terms": [{"term": "a", "language": "en"}] * 2}, "type"),
    ]
    for route, body, says in cases:
        reply = requests.post(
            server.url(f"/modernmt/memories/{docs}/{route}"),
            json=body,
            headers={"MMT-ApiKey": key},
            timeout=60,
        )
        assert_error(reply, 400, "ValidationException", says)
    bad_files = [
        ("de,en\na,b\n", "unidirectional", "line 1"),
        ("en,de\na,b\nc,d,e\n", "unidirectional", "line 3"),
        ('en,de\na,b\n"c,d\n', "unidirectional", "line 3"),
        ("en,xx!\na,b\n", "unidirectional", "line 1"),
        ("fr,de\na,b\n", "equivalent", "no en column"),
        ("", "unidirectional", "empty"),
        ("en,de\n\xff\n", "unidirectional", "UTF-8"),
    ]
    for text, kind, says in bad_files:
        reply = weblate(
            server,
            "POST",
            f"/memories/{docs}/glossary",
            key,
            data={"type": kind},
            files={"csv": ("g.csv", text.encode("latin-1"))},
        )
        assert_error(reply, 400, "ValidationException", says)
    broken_tmx = weblate(
        server, "POST", f"/memories/{docs}/content", key, files={"tmx": ("x.tmx", b"<tmx")}
    )
    assert_error(broken_tmx, 400, "ValidationException", "tmx")
    assert segment_count(server, docs) == before


@pytest.mark.parametrize(
    ("params", "key", "status", "kind", "says"),
    [
        ({"q": "Hi", "target": "de"}, None, 401, "AuthenticationException", "MMT-ApiKey"),
        ({"q": "Hi", "target": "de"}, "wrong", 401, "AuthenticationException", "invalid"),
        ({"target": "de"}, "docs", 400, "ValidationException", "'q'"),
        ({"q": "Hi"}, "docs", 400, "ValidationException", "'target'"),
        ({"q": "Hi", "target": "fr"}, "docs", 400, "UnsupportedLanguageException", "fr"),
        ({"q": "Hi", "source": "??", "target": "de"}, "docs", 400, "ValidationException", "tag"),
        ({"q": "Hi", "target": "de", "alt_translations": "99"}, "docs", 400, "Validation", "alt"),
        ({"q": "Hi", "target": "de", "hints": "999"}, "docs", 404, "NotFoundException", "999"),
        # outside the key's scope: answered as a memory that does not exist, without its name
        ({"q": "Hi", "target": "de", "hints": "OTHER"}, "docs", 404, "NotFound", "not exist"),
        ({"q": "Hi", "target": "de", "hints": "docs"}, "docs", 404, "NotFound", "docs"),
        ({"q": "x" * 2001, "target": "de"}, "docs", 400, "ValidationException", "limit"),
    ],
)
def test_translate_errors_are_modernmt_envelopes(
    server, memories, keys, params, key, status, kind, says
) -> None:
    if params.get("hints") == "OTHER":
        params = {**params, "hints": str(memories["other"])}
    reply = weblate(server, "GET", "/translate", keys.get(key, key), params=params)
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["status"] == status and set(body["error"]) == {"type", "message"}
    assert (
        body["error"]["type"].startswith(kind) and says.lower() in body["error"]["message"].lower()
    )
    assert "other" not in body["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "kind", "says"),
    [
        (b"{", 400, "ValidationException", "malformed JSON"),
        ([1], 400, "ValidationException", "JSON object"),
        ({"q": 5, "target": "de"}, 400, "ValidationException", "'q'"),
        ({"q": [], "target": "de"}, 400, "ValidationException", "'q'"),
        ({"q": "a", "target": 1}, 400, "ValidationException", "string"),
        ({"q": "a", "target": "de", "hints": [True]}, 400, "ValidationException", "hints"),
        ({"q": "a", "target": "de", "alt_translations": 1.5}, 400, "ValidationException", "alt"),
        ({"q": "a" * 300_000, "target": "de"}, 413, "PayloadTooLargeException", "larger"),
    ],
)
def test_json_bodies_the_official_client_way(server, keys, body, status, kind, says) -> None:
    """POST with `X-HTTP-Method-Override: GET` and a JSON body, as the official client sends."""
    headers = {"MMT-ApiKey": keys["docs"], "X-HTTP-Method-Override": "GET"}
    if isinstance(body, bytes):
        headers["Content-Type"] = "application/json"
        kw: dict[str, Any] = {"data": body}
    else:
        kw = {"json": body}
    reply = requests.post(server.url("/modernmt/translate"), headers=headers, timeout=60, **kw)
    assert_error(reply, status, kind, says)


def test_rights_routes_and_methods(server, memories, keys) -> None:
    docs, reader = memories["docs"], keys["reader"]
    content = {"source": "en", "target": "de", "sentence": "Hi", "translation": "Hallo"}
    client = mmt(server, reader)
    with pytest.raises(ModernMTException) as raised:
        client.memories.add(docs, **content)
    assert (raised.value.status, raised.value.type) == (403, "ForbiddenException")
    with pytest.raises(ModernMTException) as raised:
        client.memories.create("not-allowed")
    assert (raised.value.status, raised.value.type) == (403, "ForbiddenException")
    with pytest.raises(ModernMTException) as raised:
        mmt(server, keys["docs"]).memories.delete(docs)  # deleting needs write on every memory
    assert raised.value.status == 403
    with pytest.raises(ModernMTException) as raised:
        mmt(server, "wrong").memories.list()
    assert (raised.value.status, raised.value.type) == (401, "AuthenticationException")
    for method, path, status, kind, says in [
        # outside the scope and missing are answered alike, naming only the id asked for
        ("GET", f"/memories/{memories['other']}", 404, "NotFoundException", "not exist"),
        ("GET", "/memories/123456", 404, "NotFoundException", "123456"),
        ("GET", "/memories/docs", 404, "NotFoundException", "not exist"),  # ids only
        ("GET", "/import-jobs/not-a-job", 404, "NotFoundException", "not-a-job"),
        ("GET", "/nothing", 404, "NotFoundException", "endpoint"),
        ("GET", "", 404, "NotFoundException", "endpoint"),
        ("DELETE", "/translate", 405, "MethodNotAllowedException", "allowed"),
        ("PUT", f"/memories/{docs}", 405, "MethodNotAllowedException", "allowed"),
    ]:
        assert_error(weblate(server, method, path, reader), status, kind, says)
    assert data(weblate(server, "GET", f"/memories/{docs}", reader))["name"] == "docs"


def test_memory_names_and_ids_are_never_confused(server, memories) -> None:
    """/v1 finds a memory by name, ModernMT by id, and neither falls back on the other: a key
    scoped to the name "N" never reaches the memory whose id is N, and creating a memory named
    "N" makes a new memory."""
    admin = server.client
    secret = admin.post(
        "/v1/memories", {"name": "secret-ids", "source_lang": "en", "target_lang": "de"}
    ).json
    id_text = str(secret["id"])
    scoped = admin.with_token(server.create_key("by-id", f"{id_text}:write"))
    for method, path, body in [
        ("GET", f"/v1/memories/{id_text}", None),
        ("GET", f"/v1/memories/{id_text}/export", None),
        ("POST", f"/v1/memories/{id_text}/segments", {"source": "a", "target": "b"}),
    ]:
        reply = scoped.request(method, path, body)
        assert reply.status in (403, 404), (path, reply.status, reply.body)
        assert b"secret-ids" not in reply.body
    assert admin.get(f"/v1/memories/{id_text}").status == 404
    # ModernMT's create of a name that is some memory's id makes a new memory of that name
    created = data(weblate(server, "POST", "/memories", admin.token, data={"name": id_text}))
    assert created["name"] == id_text and created["id"] != secret["id"]
    assert data(weblate(server, "GET", f"/memories/{id_text}", admin.token))["name"] == "secret-ids"
    assert admin.get(f"/v1/memories/{id_text}").json["id"] == created["id"]
    # now the scoped key reaches the memory named so, and only that one
    assert scoped.get(f"/v1/memories/{id_text}").json["id"] == created["id"]


def test_memory_create_checks_the_whole_body_first(server, memories, keys) -> None:
    """An existing name is answered with that memory only after the body passed its checks."""
    for fields in ({"name": "docs", "description": "bad\x01"}, {"name": "docs", "external_id": ""}):
        reply = weblate(server, "POST", "/memories", keys["admin"], data=fields)
        if "description" in fields:
            assert_error(reply, 400, "ValidationException", "description")
        else:
            assert data(reply)["id"] == memories["docs"]
    # a name is kept as sent or refused, never trimmed into another name
    for name in ("ab\n", "\tab", " docs "):
        reply = weblate(server, "POST", "/memories", keys["admin"], data={"name": name})
        assert_error(reply, 400, "ValidationException", "whitespace")
    names = [m["name"] for m in data(weblate(server, "GET", "/memories", keys["admin"]))]
    assert "ab" not in names and "tab" not in names


def tmx_of(units: int) -> bytes:
    body = "".join(
        f'<tu tuid="b{i}"><tuv xml:lang="en"><seg>Click OK to close the dialog number {i}.</seg>'
        f'</tuv><tuv xml:lang="de"><seg>Klicken Sie auf OK, um Dialog {i} zu schließen.</seg>'
        "</tuv></tu>"
        for i in range(units)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><tmx version="1.4"><header srclang="en" '
        'datatype="plaintext" segtype="sentence" adminlang="en" creationtool="t" '
        f'creationtoolversion="1" o-tmf="t"/><body>{body}</body></tmx>'
    ).encode()


def stats(server, memory: str) -> tuple[int, int]:
    """(segments, analysed) of `tm-guide stats`."""
    done = server.cli("stats", memory)
    assert done.returncode == 0, done.stderr
    fields = done.stdout.splitlines()[1].split()
    return int(fields[4]), int(fields[5])  # NAME en -> de SEGMENTS ANALYSED ...


@pytest.fixture(scope="module")
def background_server(start_server):
    """A server whose uploads answer at once (TM_GUIDE_UPLOAD_WAIT_S=0), before their
    alignment ends."""
    return start_server(model=BUNDLED_MODEL, threads=4, extra_env={"TM_GUIDE_UPLOAD_WAIT_S": "0"})


def poll_until_done(client: ModernMT, job_id: str, timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            job = client.memories.get_import_status(job_id)
            if job.progress == 1.0:
                return job
        except (OSError, requests.ConnectionError):  # a worker restarting
            pass
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_a_tmx_upload_answers_before_its_alignment_and_reports_it(background_server) -> None:
    """The upload is stored within its request; its alignment is an import job whose progress
    the official client polls until 1.0, by which time every segment is aligned. The job is
    the /v1 one, under the same id."""
    server = background_server
    client = mmt(server, server.client.token)
    created = client.memories.create("uploaded")
    job = client.memories.import_tmx(created.id, gzip.compress(tmx_of(300)), compression="gzip")
    assert (job.memory, job.size) == (created.id, 300) and job.progress < 1.0
    assert stats(server, "uploaded")[0] == 300  # stored before the answer
    done = poll_until_done(client, job.id)
    assert (done.id, done.memory, done.size) == (job.id, created.id, 300)
    assert stats(server, "uploaded") == (300, 300)
    record = server.client.get(f"/v1/jobs/{uuid.UUID(job.id).hex}").json
    assert (record["status"], record["committed"], record["result"]["aligned"]) == (
        "succeeded",
        "all",
        300,
    )


def test_an_upload_whose_worker_dies_while_aligning_is_resumed(background_server) -> None:
    """kill -9 of the worker right after the upload answered: the next worker takes the job up
    again, its progress reaches 1.0, and every stored segment ends aligned."""
    server = background_server
    client = mmt(server, server.client.token)
    created = client.memories.create("killed")
    job = client.memories.import_tmx(created.id, gzip.compress(tmx_of(3000)), compression="gzip")
    assert job.progress < 1.0
    state = server.client.get(f"/v1/jobs/{uuid.UUID(job.id).hex}").json
    assert state["phase"] == "aligning" and state["status"] in ("queued", "running"), state
    os.kill(state["worker"]["pid"], signal.SIGKILL)
    done = poll_until_done(client, job.id, timeout_s=300)
    assert done.size == 3000
    record = server.client.get(f"/v1/jobs/{uuid.UUID(job.id).hex}").json
    assert record["result"]["resumed"] is True and record["status"] == "succeeded", record
    assert stats(server, "killed") == (3000, 3000)
