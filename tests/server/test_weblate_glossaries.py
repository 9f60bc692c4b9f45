"""Weblate's glossary handling and a cross-protocol flow, with Weblate's own machinery classes.

`tests/server/test_weblate_machinery.py` covers each service's settings check, language
negotiation and translation path; these tests cover what it leaves out:

- the project glossary Weblate uploads to ModernMT and DeepL (`get_glossary_id`: list, create,
  replace a stale one, use its id when translating; `delete_oldest_glossary`), which needs the
  harness's `get_glossary_tsv` stand-in to return a glossary and a unit whose project has an id;
- a segment confirmed through tm-guide's own API (`POST /v1/memories/{name}/segments`) guiding
  Weblate's LibreTranslate service and coming back as a 100 match from its tmserver service.
"""

from __future__ import annotations

import sys
import types

import pytest
import weblate_harness
from server_scenarios import QUERY, TM_TARGET, add_segment, create_memory

from tm_guide.config import BUNDLED_MODEL

PROJECT_ID = 7


pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture(scope="module")
def server(start_server):
    server = start_server(model=BUNDLED_MODEL, threads=4)
    create_memory(server.client, "confirmed")
    create_memory(server.client, "v1")
    return server


@pytest.fixture(scope="module")
def glossary_token(server) -> str:
    """Weblate's glossary upload creates memories, which needs write on every memory."""
    return server.create_key("weblate-glossaries", "*:write")


@pytest.fixture
def glossary(monkeypatch):
    """Set the project's glossary (TSV, as Weblate's `get_glossary_tsv` gives it)."""
    module = sys.modules["weblate.glossary.models"]

    def set_glossary(tsv: str) -> None:
        monkeypatch.setattr(module, "get_glossary_tsv", lambda translation: tsv)

    return set_glossary


def base(server) -> str:
    return f"http://127.0.0.1:{server.client.port}"


def project_unit() -> types.SimpleNamespace:
    unit = weblate_harness.unit()
    unit.translation.component.project = types.SimpleNamespace(id=PROJECT_ID)
    return unit


def service(weblate, server, token: str, kind: str):
    if kind == "ModernMT":
        return weblate.ModernMT({"url": f"{base(server)}/modernmt/", "key": token}), "en", "de"
    return weblate.DeepL({"url": f"{base(server)}/deepl/v2/", "key": token}), "EN", "DE"


def weblate_glossaries(svc) -> dict[str, str]:
    return {name: i for name, i in svc.list_glossaries().items() if name.startswith("weblate:")}


@pytest.mark.parametrize("kind", ["ModernMT", "DeepL"])
def test_weblate_uploads_replaces_and_deletes_its_project_glossary(
    weblate, server, glossary_token, glossary, kind
) -> None:
    svc, source, target = service(weblate, server, glossary_token, kind)
    assert svc.get_languages(weblate.Language("en"), weblate.Language("de")) == (source, target)
    prefix = f"weblate:{PROJECT_ID}:{source}:{target}:"

    glossary("dialog\tFenster\n")
    found = svc._translate(source, target, [(QUERY, project_unit())], threshold=75)
    assert found[QUERY][0]["text"]
    first = weblate_glossaries(svc)
    assert [name for name in first if name.startswith(prefix)] != [], first

    weblate_harness.clear_cache()
    glossary("dialog\tFenster\nclose\tverlassen\n")
    found = svc._translate(source, target, [(QUERY, project_unit())], threshold=75)
    assert found[QUERY][0]["text"]
    second = [name for name in weblate_glossaries(svc) if name.startswith(prefix)]
    assert len(second) == 1 and second[0] not in first, (first, second)  # the stale one is gone

    svc.delete_oldest_glossary()
    svc.delete_oldest_glossary()
    assert weblate_glossaries(svc) == {}


def test_a_project_glossary_keeps_modernmt_guided_by_the_memories(
    weblate, server, glossary_token, glossary
) -> None:
    add_segment(server.client, "confirmed", QUERY, TM_TARGET)
    svc, source, target = service(weblate, server, glossary_token, "ModernMT")
    glossary("")
    without = svc._translate(source, target, [(QUERY, project_unit())], threshold=75)
    assert "verlassen" in without[QUERY][0]["text"]
    weblate_harness.clear_cache()
    glossary("button\tSchaltfläche\n")
    with_glossary = svc._translate(source, target, [(QUERY, project_unit())], threshold=75)
    assert "verlassen" in with_glossary[QUERY][0]["text"]


def test_a_segment_added_through_the_v1_api_guides_libretranslate_and_matches_in_tmserver(
    weblate, server
) -> None:
    token = server.create_key("weblate-v1", "v1:read")
    libre = weblate.LibreTranslate({"url": f"{base(server)}/libretranslate/", "key": token})
    tmserver = weblate.TMServer({"url": f"{base(server)}/tmserver/key/{token}"})
    unit = weblate_harness.unit()
    assert tmserver._translate("en", "de", [(QUERY, unit)], threshold=75)[QUERY] == []
    before = libre._translate("en", "de", [(QUERY, unit)], threshold=75)[QUERY][0]["text"]

    add_segment(server.client, "v1", QUERY, TM_TARGET)

    weblate_harness.clear_cache()  # Weblate would otherwise answer from its cache
    matches = tmserver._translate("en", "de", [(QUERY, unit)], threshold=75)[QUERY]
    assert [(m["text"], m["quality"]) for m in matches] == [(TM_TARGET, 100)]
    after = libre._translate("en", "de", [(QUERY, unit)], threshold=75)[QUERY][0]["text"]
    assert "Fenster" in after and "Fenster" not in before, (before, after)
    reply = server.client.post("/v1/suggest", {"source": QUERY, "memories": ["v1"]})
    assert after == reply.json["results"][0]["translation"]["text"]
