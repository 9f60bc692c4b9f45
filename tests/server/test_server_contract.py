"""Every operation of the OpenAPI document sent to the real server as documented, and every
response checked against the document with openapi-core (status, content type, body schema).

For each operation: the request it is for, and the failures it documents, derived the same way
everywhere: no key (401, or 403 where the protocol says so), a key without the right (403), a
resource that does not exist (404), a body or query the document refuses (400), a body over the
size limit (413); then the conflicts and protocol-specific cases. Each call also expects a
status, so the server cannot answer something else the document happens to allow. A documented
status that no call here produces fails the test unless UNREACHABLE says why.

schemathesis (test_server_fuzzing.py) sends generated requests; this module sends the documented
ones and proves every documented answer exists and matches its schema.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import yaml
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse
from server_client import Reply
from server_scenarios import add_segment, create_memory, wait_for_job

from tm_guide.config import BUNDLED_MODEL

BODY_LIMIT = 256 * 1024  # TM_GUIDE_MAX_BODY_BYTES in server_env
IMPORT_LIMIT = 300 * 1024
MISSING = {"name": "no-such-memory", "segment_id": "999999", "tuid": "no-such-tuid"}
MISSING |= {"job_id": "00000000-0000-4000-8000-000000000000", "memory_id": "999999"}
MISSING |= {"glossary_id": "00000000-0000-4000-8000-000000000001", "filename": "no-such.js"}

# (METHOD, path template, status): why no request here can produce it
UNREACHABLE = {
    ("GET", "/ready", "503"): "a server that answers requests here is ready; "
    "test_server_api checks /ready before the model loads",
    ("POST", "/v1/jobs/{job_id}/retry", "202"): "only an import interrupted by a dying worker can "
    "be retried; test_server_jobs kills one",
    ("GET", "/modernmt/import-jobs/{job_id}", "409"): "only an upload whose alignment failed "
    "in the store; one cut short by a dying worker is resumed when the next worker starts "
    "(test_protocol_modernmt kills one)",
    ("POST", "/libretranslate/translate", "404"): "only a memory named by "
    "TM_GUIDE_LIBRETRANSLATE_MEMORIES can be missing; test_protocol_libretranslate sets one",
}
for _path, _methods in {
    "/libretranslate/translate": ["POST"],
    "/libretranslate/languages": ["GET"],
    "/modernmt/translate": ["GET", "POST"],
    "/modernmt/translate/languages": ["GET"],
    "/modernmt/languages": ["GET"],
    "/deepl/v2/translate": ["POST"],
}.items():
    for _method in _methods:
        UNREACHABLE[(_method, _path, "500")] = "a fault of the server itself (its error shape is "
        "the protocol's, as every other error's)"
for _method, _path in [
    ("POST", "/v1/suggest"),
    ("POST", "/libretranslate/translate"),
    ("GET", "/modernmt/translate"),
    ("POST", "/modernmt/translate"),
    ("POST", "/deepl/v2/translate"),
]:
    UNREACHABLE[(_method, _path, "503")] = "needs a server without its model or database "
    "(test_server_api's server has no model and gets it)"


@dataclass(frozen=True)
class Call:
    """One request: a documented operation with its path parameters, query and body."""

    method: str
    template: str
    params: dict[str, str] = field(default_factory=dict)
    query: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    form: dict[str, Any] | None = None
    raw: bytes | None = None
    content_type: str | None = None
    key: str = "admin"  # admin, reader, other, wrong or none
    headers: dict[str, str] = field(default_factory=dict)

    def path(self) -> str:
        path = self.template
        for name, value in self.params.items():
            path = path.replace("{" + name + "}", quote(str(value), safe=""))
        return path + (f"?{urlencode(self.query, doseq=True)}" if self.query else "")


class Contract:
    """Sends calls, checks each answer against the document, records what was seen."""

    def __init__(self, server, keys: dict[str, str | None]) -> None:
        self.server = server
        self.keys = keys
        self.document = server.client.get("/v1/openapi.json").json
        yaml_reader = {"application/yaml": lambda data: yaml.safe_load(data)}
        self.api = OpenAPI.from_dict(
            self.document, config=Config(extra_media_type_deserializers=yaml_reader)
        )
        self.seen: set[tuple[str, str, str]] = set()

    def documented(self, method: str, template: str) -> set[str]:
        return set(self.document["paths"][template][method.lower()]["responses"])

    def send(self, call: Call, expected: int) -> Reply:
        headers, call = self._credentials(call)
        body = call.raw
        content_type = call.content_type
        if call.json is not None:
            body, content_type = json.dumps(call.json).encode(), "application/json"
        elif call.form is not None:
            body = urlencode(call.form, doseq=True).encode()
            content_type = "application/x-www-form-urlencoded"
        if content_type:
            headers["Content-Type"] = content_type
        client = self.server.client.with_token(None)
        reply = client.request(call.method, call.path(), raw=body, headers=headers)
        assert reply.status == expected, (call, reply.status, reply.body[:500])
        self._check(call, reply, body, content_type or "application/json")
        return reply

    def _credentials(self, call: Call) -> tuple[dict[str, str], Call]:
        headers = dict(call.headers)
        key = self.keys[call.key]
        if key is None:
            return headers, call
        template = call.template
        if template.startswith("/modernmt/"):
            headers["MMT-ApiKey"] = key
        elif template.startswith("/deepl/"):
            headers["Authorization"] = f"DeepL-Auth-Key {key}"
        elif template.startswith("/libretranslate/translate"):
            if call.json is not None and isinstance(call.json, dict):
                call = replace(call, json={**call.json, "api_key": key})
        elif template.startswith("/tmserver/key/"):
            call = replace(call, params={**call.params, "token": key})
        else:
            headers["Authorization"] = f"Bearer {key}"
        return headers, call

    def _check(self, call: Call, reply: Reply, body: bytes | None, content_type: str) -> None:
        status = str(reply.status)
        assert status in self.documented(call.method, call.template), (call, status)
        request = MockRequest(
            f"http://127.0.0.1:{self.server.client.port}",
            call.method.lower(),
            call.path().split("?")[0],
            path_pattern=call.template,
            args=call.query,
            view_args=call.params,
            data=body,
            content_type=content_type,
        )
        response_type = reply.headers.get("content-type", "").split(";")[0]
        data: Any = reply.body
        if "json" not in response_type:  # a text or file body is a string to its schema
            data = reply.body.decode("utf-8")
        response = MockResponse(
            data, status_code=reply.status, headers={}, content_type=response_type
        )
        if reply.status == 204:
            assert reply.body == b""
        else:
            try:
                self.api.validate_response(request, response)
            except Exception as exc:  # name the fields the document and the answer disagree on
                cause = exc.__cause__
                faults = [
                    f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
                    for e in getattr(cause, "schema_errors", ())
                ]
                raise AssertionError(
                    f"{call.method} {call.template} {status}: {faults or str(exc)[:500]}"
                ) from None
        self.seen.add((call.method, call.template, status))


# ---- the documented requests -------------------------------------------------------------------

SEGMENT = {
    "source": "Click the Save button.",
    "target": "Klicken Sie auf die Schaltfläche Speichern.",
}
TMX = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4"><header srclang="en" '
    b'datatype="plaintext" segtype="sentence" adminlang="en" o-tmf="t" creationtool="t" '
    b'creationtoolversion="1"/><body><tu><tuv xml:lang="en"><seg>Open the file.</seg></tuv>'
    b'<tuv xml:lang="de"><seg>Datei \xc3\xb6ffnen.</seg></tuv></tu></body></tmx>'
)


def documented_calls(ids: dict[str, str]) -> list[tuple[Call, dict[int, Any]]]:
    """(the call, {status: variant}) for every operation; a variant is the call that must get
    that status (None: derive it: no key, a key without the right, a missing resource)."""
    mem = {"name": "contract"}
    seg = {**mem, "segment_id": ids["segment_id"]}
    mmt = {"memory_id": ids["mmt_id"]}
    glossary = {"glossary_id": ids["glossary_id"]}
    tm = {"source_lang": "en", "target_lang": "de", "text": "Click the Save button."}
    huge = "x" * (BODY_LIMIT + 1)
    return [
        (Call("GET", "/health"), {}),
        (Call("GET", "/ready"), {}),
        (Call("GET", "/metrics"), {}),
        (Call("GET", "/ui/"), {}),
        (Call("GET", "/ui/static/{filename}", {"filename": "console.js"}), {404: None}),
        (Call("GET", "/v1/openapi.json"), {}),
        (Call("GET", "/v1/openapi.yaml"), {}),
        (
            Call("POST", "/v1/suggest", json={"source": "Click Save.", "memories": ["contract"]}),
            {
                400: Call("POST", "/v1/suggest", json={"source": "Click Save."}),
                401: None,
                403: None,
                404: Call("POST", "/v1/suggest", json={"source": "a", "memories": ["no-such"]}),
                413: Call("POST", "/v1/suggest", json={"source": huge, "memories": ["x"]}),
                422: Call("POST", "/v1/suggest", json={"source": "a", "memories": ["contract-fr"]}),
            },
        ),
        (Call("GET", "/v1/memories"), {401: None}),
        (
            Call(
                "POST",
                "/v1/memories",
                json={"name": "made", "source_lang": "en", "target_lang": "de"},
            ),
            {
                400: Call("POST", "/v1/memories", json={"name": "bad name", "source_lang": "en"}),
                401: None,
                403: Call(
                    "POST",
                    "/v1/memories",
                    json={"name": "m2", "source_lang": "en", "target_lang": "de"},
                    key="reader",
                ),
                409: Call(
                    "POST",
                    "/v1/memories",
                    json={"name": "contract", "source_lang": "en", "target_lang": "de"},
                ),
            },
        ),
        (Call("GET", "/v1/memories/{name}", mem), {401: None, 403: None, 404: None}),
        (
            Call("DELETE", "/v1/memories/{name}", {"name": "made"}),
            {
                401: None,
                403: replace(Call("DELETE", "/v1/memories/{name}", mem), key="reader"),
                404: None,
            },
        ),
        (
            Call("POST", "/v1/memories/{name}/segments", mem, json=SEGMENT),
            {
                400: Call("POST", "/v1/memories/{name}/segments", mem, json={"source": "x"}),
                401: None,
                403: None,
                404: None,
                413: Call(
                    "POST",
                    "/v1/memories/{name}/segments",
                    mem,
                    json={"source": huge, "target": "x"},
                ),
            },
        ),
        (
            Call(
                "PUT",
                "/v1/memories/{name}/segments/by-tuid/{tuid}",
                {**mem, "tuid": "t-1"},
                json=SEGMENT,
            ),
            {
                400: Call(
                    "PUT",
                    "/v1/memories/{name}/segments/by-tuid/{tuid}",
                    {**mem, "tuid": "t-1"},
                    json={**SEGMENT, "tuid": "t-1"},
                ),
                401: None,
                403: None,
                404: None,
            },
        ),
        (
            Call("GET", "/v1/memories/{name}/segments/{segment_id}", seg),
            {401: None, 403: None, 404: None},
        ),
        (
            Call(
                "DELETE",
                "/v1/memories/{name}/segments/{segment_id}",
                {**mem, "segment_id": ids["doomed_id"]},
            ),
            {401: None, 403: None, 404: None},
        ),
        (
            Call("GET", "/v1/memories/{name}/concordance", mem, query={"q": "Save"}),
            {
                400: Call(
                    "GET", "/v1/memories/{name}/concordance", mem, query={"q": "Save", "limit": 0}
                ),
                401: None,
                403: None,
                404: None,
                # a query of 2,000 characters of a 4-byte script is 24,000 bytes, percent-encoded
                414: Call(
                    "GET", "/v1/memories/{name}/concordance", mem, query={"q": "\U0001f600" * 800}
                ),
            },
        ),
        (
            Call(
                "POST",
                "/v1/memories/{name}/imports",
                mem,
                raw=TMX,
                content_type="application/x-tmx+xml",
            ),
            {
                400: Call(
                    "POST",
                    "/v1/memories/{name}/imports",
                    mem,
                    query={"format": "pdf"},
                    raw=TMX,
                    content_type="application/x-tmx+xml",
                ),
                401: None,
                403: None,
                404: None,
                413: Call(
                    "POST",
                    "/v1/memories/{name}/imports",
                    mem,
                    raw=b"x" * (IMPORT_LIMIT + 1),
                    content_type="application/x-tmx+xml",
                ),
            },
        ),
        (
            Call("GET", "/v1/jobs/{job_id}", {"job_id": ids["job_id"]}),
            {401: None, 403: None, 404: None},
        ),
        (
            Call("POST", "/v1/jobs/{job_id}/retry", {"job_id": ids["job_id"]}),
            {
                409: Call("POST", "/v1/jobs/{job_id}/retry", {"job_id": ids["job_id"]}),
                401: None,
                403: replace(
                    Call("POST", "/v1/jobs/{job_id}/retry", {"job_id": ids["job_id"]}), key="reader"
                ),
                404: None,
            },
        ),
        (Call("GET", "/v1/memories/{name}/export", mem), {401: None, 403: None, 404: None}),
        (
            Call("GET", "/tmserver/{source_lang}/{target_lang}/unit/{text}", tm),
            {
                400: Call(
                    "GET",
                    "/tmserver/{source_lang}/{target_lang}/unit/{text}",
                    {**tm, "source_lang": "e!"},
                ),
                401: None,
                414: Call(
                    "GET",
                    "/tmserver/{source_lang}/{target_lang}/unit/{text}",
                    {**tm, "text": "x" * 9000},
                ),
            },
        ),
        (
            Call("GET", "/tmserver/key/{token}/{source_lang}/{target_lang}/unit/{text}", tm),
            {
                400: Call(
                    "GET",
                    "/tmserver/key/{token}/{source_lang}/{target_lang}/unit/{text}",
                    {**tm, "source_lang": "e!"},
                ),
                401: None,
                414: Call(
                    "GET",
                    "/tmserver/key/{token}/{source_lang}/{target_lang}/unit/{text}",
                    {**tm, "text": "x" * 9000},
                ),
            },
        ),
        (
            Call(
                "POST",
                "/libretranslate/translate",
                json={"q": "Click Save.", "source": "en", "target": "de"},
            ),
            {
                400: Call(
                    "POST", "/libretranslate/translate", json={"q": "Click Save.", "source": "en"}
                ),
                403: None,
                413: Call(
                    "POST",
                    "/libretranslate/translate",
                    json={"q": huge, "source": "en", "target": "de"},
                ),
            },
        ),
        (Call("GET", "/libretranslate/languages", key="none"), {}),
        (
            Call(
                "GET",
                "/modernmt/translate",
                query={"q": "Click Save.", "source": "en", "target": "de"},
            ),
            {
                400: Call("GET", "/modernmt/translate", query={"q": "Click Save.", "source": "en"}),
                401: None,
                404: Call(
                    "GET",
                    "/modernmt/translate",
                    query={"q": "a", "target": "de", "hints": "999999"},
                ),
                # a GET with a body, as ModernMT's clients send one
                413: Call("GET", "/modernmt/translate", json={"q": huge, "target": "de"}),
            },
        ),
        (
            Call(
                "POST",
                "/modernmt/translate",
                json={"q": ["Click Save."], "source": "en", "target": "de"},
            ),
            {
                400: Call("POST", "/modernmt/translate", json={"q": ["Click Save."]}),
                401: None,
                404: Call(
                    "POST",
                    "/modernmt/translate",
                    json={"q": "a", "target": "de", "hints": "999999"},
                ),
                413: Call("POST", "/modernmt/translate", json={"q": huge, "target": "de"}),
            },
        ),
        (Call("GET", "/modernmt/translate/languages"), {401: None}),
        (Call("GET", "/modernmt/languages"), {401: None}),
        (
            Call("GET", "/modernmt/translate/detect", query={"q": "Click Save."}),
            {400: Call("GET", "/modernmt/translate/detect"), 401: None},
        ),
        (Call("GET", "/modernmt/memories"), {401: None}),
        (
            Call("POST", "/modernmt/memories", json={"name": "mmt-made"}),
            {
                400: Call("POST", "/modernmt/memories", json={"description": "no name"}),
                401: None,
                403: Call("POST", "/modernmt/memories", json={"name": "mmt-2"}, key="reader"),
            },
        ),
        (Call("GET", "/modernmt/memories/{memory_id}", mmt), {401: None, 404: None}),
        (
            Call("DELETE", "/modernmt/memories/{memory_id}", {"memory_id": ids["mmt_doomed"]}),
            {
                401: None,
                403: replace(Call("DELETE", "/modernmt/memories/{memory_id}", mmt), key="reader"),
                404: None,
            },
        ),
        (
            Call(
                "POST",
                "/modernmt/memories/{memory_id}/content",
                mmt,
                json={
                    "source": "en",
                    "target": "de",
                    "sentence": "Close it.",
                    "translation": "Schließen.",
                },
            ),
            {
                400: Call(
                    "POST",
                    "/modernmt/memories/{memory_id}/content",
                    mmt,
                    json={"source": "en", "target": "de", "sentence": "Close it."},
                ),
                401: None,
                403: None,
                404: None,
                413: Call(
                    "POST",
                    "/modernmt/memories/{memory_id}/content",
                    mmt,
                    json={"source": "en", "target": "de", "sentence": huge, "translation": "x"},
                ),
            },
        ),
        (
            Call(
                "PUT",
                "/modernmt/memories/{memory_id}/content",
                mmt,
                json={
                    "source": "en",
                    "target": "de",
                    "sentence": "Close it.",
                    "translation": "Schließen Sie es.",
                    "tuid": "mmt-1",
                },
            ),
            {
                400: Call(
                    "PUT",
                    "/modernmt/memories/{memory_id}/content",
                    mmt,
                    json={
                        "source": "en",
                        "target": "de",
                        "sentence": "Close it.",
                        "translation": "x",
                    },
                ),
                401: None,
                403: None,
                404: None,
            },
        ),
        (
            Call(
                "POST",
                "/modernmt/memories/{memory_id}/glossary",
                mmt,
                json={
                    "type": "unidirectional",
                    "terms": [
                        {"term": "file", "language": "en"},
                        {"term": "Datei", "language": "de"},
                    ],
                },
            ),
            {
                400: Call(
                    "POST",
                    "/modernmt/memories/{memory_id}/glossary",
                    mmt,
                    json={"type": "unidirectional", "terms": []},
                ),
                401: None,
                403: None,
                404: None,
                413: Call(
                    "POST",
                    "/modernmt/memories/{memory_id}/glossary",
                    mmt,
                    json={"type": "unidirectional", "terms": [{"term": huge, "language": "en"}]},
                ),
            },
        ),
        (
            Call(
                "PUT",
                "/modernmt/memories/{memory_id}/glossary",
                mmt,
                json={
                    "type": "unidirectional",
                    "tuid": "g-1",
                    "terms": [
                        {"term": "folder", "language": "en"},
                        {"term": "Ordner", "language": "de"},
                    ],
                },
            ),
            {
                400: Call(
                    "PUT",
                    "/modernmt/memories/{memory_id}/glossary",
                    mmt,
                    json={
                        "type": "unidirectional",
                        "terms": [{"term": "a", "language": "en"}, {"term": "b", "language": "de"}],
                    },
                ),
                401: None,
                403: None,
                404: None,
            },
        ),
        (
            Call("GET", "/modernmt/import-jobs/{job_id}", {"job_id": ids["mmt_job"]}),
            {401: None, 404: None},
        ),
        (
            Call(
                "POST",
                "/deepl/v2/translate",
                form={"text": ["Click Save.", "Open the file."], "target_lang": "DE"},
            ),
            {
                400: Call("POST", "/deepl/v2/translate", form={"text": "Click Save."}),
                403: None,
                404: Call(
                    "POST",
                    "/deepl/v2/translate",
                    json={
                        "text": ["a"],
                        "target_lang": "DE",
                        "glossary_id": MISSING["glossary_id"],
                    },
                ),
                413: Call(
                    "POST", "/deepl/v2/translate", json={"text": [huge], "target_lang": "DE"}
                ),
            },
        ),
        (
            Call("GET", "/deepl/v2/languages", query={"type": "target"}),
            {400: Call("GET", "/deepl/v2/languages", query={"type": "both"}), 403: None},
        ),
        (
            Call("POST", "/deepl/v2/languages", form={"type": "source"}),
            {400: Call("POST", "/deepl/v2/languages", form={"type": "both"}), 403: None},
        ),
        (Call("GET", "/deepl/v2/usage"), {403: None}),
        (Call("POST", "/deepl/v2/usage"), {403: None}),
        (Call("GET", "/deepl/v2/glossary-language-pairs"), {403: None}),
        (Call("GET", "/deepl/v2/glossaries"), {403: None}),
        (
            Call(
                "POST",
                "/deepl/v2/glossaries",
                json={
                    "name": "g2",
                    "source_lang": "en",
                    "target_lang": "de",
                    "entries": "file\tDatei",
                },
            ),
            {
                400: Call(
                    "POST",
                    "/deepl/v2/glossaries",
                    json={
                        "name": "g3",
                        "source_lang": "en",
                        "target_lang": "de",
                        "entries": "no tab here",
                    },
                ),
                403: Call(
                    "POST",
                    "/deepl/v2/glossaries",
                    json={
                        "name": "g4",
                        "source_lang": "en",
                        "target_lang": "de",
                        "entries": "a\tb",
                    },
                    key="reader",
                ),
                413: Call(
                    "POST",
                    "/deepl/v2/glossaries",
                    json={"name": "g5", "source_lang": "en", "target_lang": "de", "entries": huge},
                ),
            },
        ),
        (Call("GET", "/deepl/v2/glossaries/{glossary_id}", glossary), {403: None, 404: None}),
        (
            Call(
                "DELETE",
                "/deepl/v2/glossaries/{glossary_id}",
                {"glossary_id": ids["glossary_doomed"]},
            ),
            {
                403: replace(
                    Call("DELETE", "/deepl/v2/glossaries/{glossary_id}", glossary), key="reader"
                ),
                404: None,
            },
        ),
        (
            Call("GET", "/deepl/v2/glossaries/{glossary_id}/entries", glossary),
            {403: None, 404: None},
        ),
    ]


def derived(call: Call, status: int) -> Call:
    """The standard way to get `status` from `call`."""
    if status in (401, 403) and call.template.startswith(("/deepl/", "/libretranslate/")):
        return replace(call, key="wrong")  # DeepL and LibreTranslate answer any key fault 403
    if status == 401:
        return replace(call, key="none")
    if status == 403 and call.template.startswith("/modernmt/"):
        # ModernMT answers a memory the key cannot read as missing (404): a key that reads but
        # may not write gets its 403
        return replace(call, key="reader")
    if status == 403:
        return replace(call, key="other")
    if status == 404:
        return replace(call, params={k: MISSING.get(k, v) for k, v in call.params.items()})
    raise AssertionError(f"no standard way to get {status} from {call.method} {call.template}")


@pytest.fixture(scope="module")
def contract(start_server) -> Contract:
    server = start_server(
        model=BUNDLED_MODEL,
        threads=4,
        extra_env={"TM_GUIDE_MAX_IMPORT_BYTES": str(IMPORT_LIMIT)},
    )
    client = server.client
    create_memory(client, "contract")
    create_memory(client, "contract-fr", "en", "fr")
    create_memory(client, "elsewhere")
    add_segment(client, "contract", **SEGMENT, tuid="t-1")
    keys = {
        "admin": client.token,
        "reader": server.create_key("reader", "*:read"),
        "other": server.create_key("other", "elsewhere:read"),
        "wrong": "tmg_no_such_key",
        "none": None,
    }
    return Contract(server, keys)


def _setup_ids(contract: Contract) -> dict[str, str]:
    """Resources the documented calls act on, made through the API itself."""
    client = contract.server.client
    ids: dict[str, str] = {}
    ids["segment_id"] = str(
        add_segment(client, "contract", "Print the page.", "Seite drucken.")["segment"]["id"]
    )
    ids["doomed_id"] = str(
        add_segment(client, "contract", "Delete me.", "Lösch mich.")["segment"]["id"]
    )
    started = client.request(
        "POST",
        "/v1/memories/contract/imports",
        raw=TMX,
        headers={"Content-Type": "application/x-tmx+xml"},
    )
    assert started.status == 202, started.body
    ids["job_id"] = started.json["job"]["id"]
    assert wait_for_job(client, started.json["status_url"])["status"] == "succeeded"
    mmt = {
        m["name"]: m["id"]
        for m in client.get("/modernmt/memories", headers={"MMT-ApiKey": client.token}).json["data"]
    }
    ids["mmt_id"] = str(mmt["contract"])
    made = client.post(
        "/modernmt/memories", {"name": "mmt-doomed"}, headers={"MMT-ApiKey": client.token}
    )
    ids["mmt_doomed"] = str(made.json["data"]["id"])
    added = client.post(
        f"/modernmt/memories/{ids['mmt_id']}/content",
        {"source": "en", "target": "de", "sentence": "Save it.", "translation": "Speichern."},
        headers={"MMT-ApiKey": client.token},
    )
    ids["mmt_job"] = added.json["data"]["id"]
    deepl = {"Authorization": f"DeepL-Auth-Key {client.token}"}
    for key, name in (("glossary_id", "glossary"), ("glossary_doomed", "glossary-doomed")):
        glossary = {
            "name": name,
            "source_lang": "en",
            "target_lang": "de",
            "entries": "file\tDatei",
        }
        made = client.post("/deepl/v2/glossaries", glossary, headers=deepl)
        assert made.status == 201, made.body
        ids[key] = made.json["glossary_id"]
    return ids


def test_every_documented_response_is_produced_and_matches_the_document(contract) -> None:
    ids = _setup_ids(contract)
    for call, variants in documented_calls(ids):
        documented = contract.documented(call.method, call.template)
        # failures first: the success of a DELETE removes what they act on
        for status, variant in sorted(variants.items()):
            assert str(status) in documented, (call.template, status)
            contract.send(variant or derived(call, status), status)
        successes = sorted(int(s) for s in documented if s.startswith("2"))
        if (call.method, call.template, str(successes[0])) not in UNREACHABLE:
            contract.send(call, successes[0])
    undocumented_left = (
        {
            (method.upper(), template, status)
            for template, item in contract.document["paths"].items()
            for method, operation in item.items()
            if method != "parameters"
            for status in operation["responses"]
        }
        - contract.seen
        - set(UNREACHABLE)
    )
    assert not undocumented_left, sorted(undocumented_left)
    assert not set(UNREACHABLE) & contract.seen, "an UNREACHABLE status was produced: drop it"


def test_the_served_document_carries_the_configured_limits(start_server) -> None:
    server = start_server(
        threads=2,
        extra_env={"TM_GUIDE_MAX_SEGMENT_CHARS": "300", "TM_GUIDE_MAX_BATCH_SIZE": "8"},
    )
    document = server.client.get("/v1/openapi.json").json
    schemas = document["components"]["schemas"]
    assert schemas["SegmentText"]["maxLength"] == 300
    assert schemas["SuggestRequest"]["properties"]["segments"]["maxItems"] == 8
    create_memory(server.client, "limits")
    reply = server.client.post("/v1/memories/limits/segments", {"source": "x" * 301, "target": "y"})
    assert reply.status == 400 and reply.json["field"] == "source"
    assert "the limit is 300" in reply.json["message"]
    text = server.client.get("/v1/openapi.yaml").body.decode()
    assert re.search(r"maxLength: 300\b", text)
