"""Suggestions with a real (tiny, random-weight) model: a segment added over HTTP feeds the
very next suggestion with its translation pieces."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from rapidfuzz.distance import Levenshtein
from server_scenarios import add_segment, create_memory, wait_for_job

from tm_guide.server.jobs import JobBoard, process_start_time
from tm_guide.text.placeholders import protected

# Words from the tiny model's vocabulary (tests/conftest.py), so that pieces are real subwords.
TM_SOURCE = "Click open the menu file save window dialog."
TM_TARGET = "Klicken öffnen das menü datei speichern fenster dialog."
QUERY = "Click open the menu file print window dialog."


@pytest.fixture(scope="module")
def server(start_server, tiny_bundle_dir):
    return start_server(model=tiny_bundle_dir, threads=4)


def test_ready_once_the_model_is_loaded(server) -> None:
    ready = server.client.get("/ready")
    assert ready.status == 200, ready.body
    assert ready.json["checks"] == {"database": "ok", "model": "ok"}
    assert ready.json["index_repairs"] == []  # every index current
    engine = ready.json["engine"]  # the registry's choice for this float32 model, and why
    assert engine["precision"] == "float32" and engine["engine"] in ("torch", "ct2")
    assert engine["reason"] and engine["device"] == "cpu"


def test_added_segment_gives_pieces_to_the_next_suggestion(server) -> None:
    client = server.client
    create_memory(client, "live")
    add_segment(
        client, "live", "Select table cell text page.", "Auswählen tabelle zelle text seite."
    )
    added = add_segment(client, "live", TM_SOURCE, TM_TARGET)
    # answered once committed and indexed; the word alignment follows (or the suggestion that
    # retrieves the segment first makes it), so the next suggestion uses its pieces either way
    segment_id = added["segment"]["id"]

    reply = client.post(
        "/v1/suggest",
        {
            "source": QUERY,
            "memories": ["live"],
            "options": {"lambda": 5.0, "unguided": True, "beam_size": 4},
        },
    )
    assert reply.status == 200, reply.body
    body = reply.json
    result = body["results"][0]
    assert result["matches"][0]["segment_id"] == segment_id
    assert 50 <= result["matches"][0]["match"] < 100
    translation = result["translation"]
    assert translation["text"] and translation["unguided"] is not None
    provenance = {ref["id"] for piece in translation["pieces_used"] for ref in piece["segments"]}
    assert segment_id in provenance, translation
    used = " ".join(piece["text"] for piece in translation["pieces_used"])
    # where each piece sits (None: only a space, or a repeat the text writes once), and how
    # close its source
    assert any(piece["span"] is not None for piece in translation["pieces_used"]), translation
    for piece in translation["pieces_used"]:
        if piece["span"] is not None:
            start, end = piece["span"]
            assert translation["mt_text"][start:end] == piece["text"], piece
        for ref in piece["segments"]:
            assert 0.0 < ref["similarity"] <= 1.0, ref
    assert any(word in used.lower() for word in ("fenster", "dialog", "menü", "datei"))
    assert body["model"]["name"] == "tiny-en-de"
    assert body["memories"] == [
        {"name": "live", "revision": added["memory"]["revision"], "penalty": 0}
    ]
    for stage in ("retrieval", "pieces", "decoding"):
        assert stage in result["timings_ms"]


def test_added_segments_are_aligned_after_the_answer(server) -> None:
    client = server.client
    create_memory(client, "later")
    ids = [
        add_segment(client, "later", f"Open the dialog {i}.", f"Öffnen Sie den Dialog {i}.")[
            "segment"
        ]["id"]
        for i in range(3)
    ]
    deadline = time.monotonic() + 30
    pending = set(ids)
    while pending and time.monotonic() < deadline:
        for segment_id in list(pending):
            shown = client.get(f"/v1/memories/later/segments/{segment_id}")
            assert shown.status == 200, shown.body
            if shown.json["aligned"]:
                pending.discard(segment_id)
        time.sleep(0.05)
    assert not pending, "the background aligner did not align the added segments"
    metrics = client.get("/metrics").body.decode("utf-8")
    assert 'tm_guide_deferred_alignments_total{outcome="aligned"}' in metrics


def test_batch_suggestion_translates_every_segment(server) -> None:
    client = server.client
    create_memory(client, "batch")
    add_segment(client, "batch", TM_SOURCE, TM_TARGET)
    reply = client.post(
        "/v1/suggest",
        {
            "segments": [QUERY, {"source": "Open the menu file."}, {"source": TM_SOURCE}],
            "memories": ["batch"],
        },
    )
    assert reply.status == 200, reply.body
    results = reply.json["results"]
    assert [r["source"] for r in results] == [QUERY, "Open the menu file.", TM_SOURCE]
    assert all(r["translation"]["text"] for r in results)
    assert results[2]["matches"][0]["match"] == 100


def test_memory_in_another_language_pair_than_the_model_is_422(server) -> None:
    client = server.client
    create_memory(client, "french", "en", "fr")
    add_segment(client, "french", "Open the menu.", "Ouvrez le menu.")
    reply = client.post("/v1/suggest", {"source": "Open the menu.", "memories": ["french"]})
    assert reply.status == 422 and reply.json["field"] == "memories"
    matches_only = client.post(
        "/v1/suggest",
        {"source": "Open the menu.", "memories": ["french"], "options": {"translate": False}},
    )
    assert (
        matches_only.status == 200 and matches_only.json["results"][0]["matches"][0]["match"] == 100
    )


def test_a_verbatim_match_gives_the_tm_target_with_the_guided_translation_beside_it(server) -> None:
    """As in CAT tools, a source the memory holds verbatim (100, or 101 with the same context)
    is suggested as its TM target; the guided translation stays in mt_text. A penalty that
    brings the match under 100, or exact_match_target false, leaves the guided translation."""
    client = server.client
    create_memory(client, "verbatim")
    source = "Select table cell text page."
    in_context = add_segment(client, "verbatim", source, "Zelle im Kontext.", context="menu:table")
    older = add_segment(client, "verbatim", source, "Alte Zielzeile.")
    newer = add_segment(client, "verbatim", source, "Tabellenzelle auswählen.")  # among 100s

    def ask(memories, **options):
        reply = client.post(
            "/v1/suggest", {"source": source, "memories": memories, "options": options}
        )
        assert reply.status == 200, reply.body
        return reply.json["results"][0]["translation"]

    plain = ask(["verbatim"])
    # without a context, three 100s that disagree: the one closest to the guided translation,
    # the newest on a tie
    expected = max(
        (in_context, older, newer),
        key=lambda seg: (
            Levenshtein.normalized_similarity(seg["segment"]["target"], plain["mt_text"]),
            seg["segment"]["id"],
        ),
    )
    assert (plain["origin"], plain["text"]) == ("tm", expected["segment"]["target"])
    assert plain["tm_match"] == {
        "segment_id": expected["segment"]["id"],
        "memory": "verbatim",
        "match": 100,
    }
    assert plain["mt_text"] and older["segment"]["id"] < newer["segment"]["id"]

    reply = client.post(
        "/v1/suggest",
        {"source": source, "context": "menu:table", "memories": ["verbatim"]},
    )
    assert reply.status == 200, reply.body
    translation = reply.json["results"][0]["translation"]
    assert translation["text"] == "Zelle im Kontext." and translation["tm_match"]["match"] == 101
    assert translation["tm_match"]["segment_id"] == in_context["segment"]["id"]

    penalised = ask([{"name": "verbatim", "penalty": 1}])
    assert penalised["origin"] == "mt" and penalised["tm_match"] is None
    assert penalised["text"] == penalised["mt_text"] == plain["mt_text"]
    off = ask(["verbatim"], exact_match_target=False)
    assert off["origin"] == "mt" and off["text"] == plain["mt_text"]


def test_a_close_match_is_repaired_on_request_and_named_in_the_answer(server) -> None:
    """options.repair: from that similarity the best match's target is repaired rather than
    guided, and the translation names the segment; "off" leaves the guided translation; a
    threshold outside (0, 1] is refused naming the option."""
    client = server.client
    create_memory(client, "close")
    added = add_segment(client, "close", TM_SOURCE, TM_TARGET)

    def ask(**options):
        return client.post(
            "/v1/suggest",
            {"source": QUERY, "memories": ["close"], "options": {"lambda": 5.0, **options}},
        )

    repaired = ask(repair="0.5:1:1")
    assert repaired.status == 200, repaired.body
    translation = repaired.json["results"][0]["translation"]
    named = translation["repaired"]
    assert named["segment_id"] == added["segment"]["id"] and named["memory"] == "close"
    assert 0.5 <= named["similarity"] < 1.0
    for piece in translation["pieces_used"]:  # spans follow the text as written
        if not piece["text"].strip():  # a lone "▁" of the TM target writes no character
            assert piece["span"] is None, piece
            continue
        start, end = piece["span"]
        assert translation["mt_text"][start:end].strip()
    guided = ask(repair="off").json["results"][0]["translation"]
    assert guided["repaired"] is None
    for bad in ("0", "1.5", "0.7:1", "sometimes"):
        refused = ask(repair=bad)
        assert refused.status == 400, (bad, refused.body)
        assert refused.json["field"] == "options.repair", refused.body


def test_the_served_candidate_of_a_close_match_is_chosen_and_named(server) -> None:
    """options.choice: the match, the repaired match, the guided and the unguided translation
    are scored by the model; the answer names the one served, with every score and bias. A
    bias that outweighs every score serves the match's target as it is; a bad spec is refused
    naming the option."""
    client = server.client
    create_memory(client, "chosen")
    add_segment(client, "chosen", TM_SOURCE, TM_TARGET)

    def ask(**options):
        return client.post(
            "/v1/suggest",
            {"source": QUERY, "memories": ["chosen"], "options": {"lambda": 5.0, **options}},
        )

    trusted = ask(repair="0.5", choice="0.5:100:0:0")
    assert trusted.status == 200, trusted.body
    translation = trusted.json["results"][0]["translation"]
    chosen = translation["chosen"]
    assert chosen["kind"] == "match" and translation["mt_text"] == TM_TARGET
    assert set(chosen["scores"]) == {"match", "repaired", "guided", "unguided"}
    assert all(score < 0 for score in chosen["scores"].values())
    assert chosen["biases"] == {"match": 100.0, "repaired": 0.0, "guided": 0.0, "unguided": 0.0}
    assert translation["repaired"] is None  # the text is not the repair
    plain = ask(repair="0.5", choice="off").json["results"][0]["translation"]
    assert plain["chosen"] is None and plain["repaired"] is not None
    for bad in ("0.5", "0:0:0:0", "0.5:x:0:0", "0.5:1:2"):
        refused = ask(choice=bad)
        assert refused.status == 400, (bad, refused.body)
        assert refused.json["field"] == "options.choice", refused.body


def analysed(server, memory: str) -> tuple[int, int]:
    """(segments, analysed) of `tm-guide stats`."""
    done = server.cli("stats", memory)
    assert done.returncode == 0, done.stderr
    fields = done.stdout.splitlines()[1].split()
    return int(fields[4]), int(fields[5])  # NAME en -> de SEGMENTS ANALYSED ...


def test_an_alignment_cut_short_by_a_crash_is_resumed(server, tmp_path) -> None:
    """An import whose worker was killed while it aligned what it had stored (its records
    committed, most of them unaligned) is taken up again by the worker gunicorn starts next:
    the job ends succeeded, and every segment is aligned. The crash is a real kill -9 of the
    worker; the job record is the one such a crash leaves."""
    tsv = tmp_path / "crash.tsv"
    tsv.write_text(
        "".join(f"{TM_SOURCE[:-1]} {i}.\t{TM_TARGET[:-1]} {i}.\n" for i in range(40)),
        encoding="utf-8",
    )
    done = server.cli("import", "crash", str(tsv), "-q", "--create", "en", "de")
    assert done.returncode == 0, done.stderr
    assert analysed(server, "crash") == (40, 0)
    board = JobBoard(Path(server.env["TM_GUIDE_JOBS_DIR"]))
    job_id = board.new_job("import", "crash", "admin")
    worker_pid = int(
        subprocess.run(
            ["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True
        ).stdout.split()[0]
    )
    worker = {"host": socket.gethostname(), "pid": worker_pid}
    worker["started"] = process_start_time(worker_pid)
    board.update(job_id, status="running", phase="aligning", worker=worker)
    assert server.client.get(f"/v1/jobs/{job_id}").json["status"] == "running"  # alive so far
    os.kill(worker_pid, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while True:
        try:
            job = server.client.get(f"/v1/jobs/{job_id}").json
            if job["status"] == "succeeded":
                break
        except OSError:  # the new worker is starting
            pass
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    assert job["result"]["resumed"] is True and job["committed"] == "all", job
    assert analysed(server, "crash") == (40, 40)


def test_an_import_job_reports_the_stages_of_its_alignment(server) -> None:
    """Once the records are stored, the job's progress follows the alignment's stages instead
    of staying at the file's 1.0."""
    create_memory(server.client, "staged")
    units = "".join(
        f'<tu><tuv xml:lang="en"><seg>{TM_SOURCE[:-1]} {i}.</seg></tuv>'
        f'<tuv xml:lang="de"><seg>{TM_TARGET[:-1]} {i}.</seg></tuv></tu>'
        for i in range(30)
    )
    tmx = (
        '<?xml version="1.0"?><tmx version="1.4"><header srclang="en" datatype="plaintext" '
        'segtype="sentence" adminlang="en" creationtool="t" creationtoolversion="1" o-tmf="t"/>'
        f"<body>{units}</body></tmx>"
    ).encode()
    started = server.client.post(
        "/v1/memories/staged/imports", raw=tmx, headers={"Content-Type": "application/xml"}
    )
    assert started.status == 202, started.body
    job = wait_for_job(server.client, started.json["status_url"])
    assert job["status"] == "succeeded" and job["result"]["aligned"] == 30, job
    progress = job["progress"]
    assert progress["records_read"] == 30
    assert (progress["stage"], progress["done"], progress["total"]) == ("storing", 30, 30)
    assert analysed(server, "staged") == (30, 30)


def test_non_translatables_come_back_exactly_once(server) -> None:
    """The tiny model garbles what it never saw in training; every placeholder, tag and URL
    still comes back exactly once (placed by the model, by the model again with all of them
    masked when it lost one, or kept in order between translated runs when it lost one even
    so), and the segment says which way."""
    create_memory(server.client, "marks")
    add_segment(server.client, "marks", TM_SOURCE, TM_TARGET)
    sources = [
        "Click open the menu %s file save window dialog.",
        "Click {0} open the <b>menu</b> file %(name)s save window dialog %d.",
        "Click open http://example.org/a/b the menu [X15X] file save [X3X] window dialog.",
        "<i>Click open the menu file save window dialog.</i>",
    ]
    reply = server.client.post(
        "/v1/suggest", {"segments": sources, "memories": ["marks"], "options": {"lambda": 1.0}}
    )
    assert reply.status == 200, reply.body
    ways = []
    for source, result in zip(sources, reply.json["results"], strict=True):
        translation = result["translation"]
        for token in protected(source):
            assert translation["text"].count(token) == source.count(token), translation["text"]
        ways.append(translation["non_translatables"])
    assert set(ways) <= {"model", "masked", "aligned", "runs"}, ways
    assert {"masked", "aligned", "runs"} & set(ways), ways
    enclosed = reply.json["results"][3]["translation"]
    assert enclosed["text"].startswith("<i>") and enclosed["text"].endswith("</i>")


def test_a_sentence_held_verbatim_inside_a_longer_segment_takes_its_tm_target(server) -> None:
    """Each sentence of a multi-sentence or enclosed segment that a memory holds verbatim is
    the TM target, as a CAT tool would insert it; the rest is translated."""
    create_memory(server.client, "inside")
    add_segment(server.client, "inside", TM_SOURCE, TM_TARGET)
    source = f"  {TM_SOURCE} Click open the menu file.\n<b>{TM_SOURCE}</b>\n"
    reply = server.client.post("/v1/suggest", {"source": source, "memories": ["inside"]})
    assert reply.status == 200, reply.body
    translation = reply.json["results"][0]["translation"]
    lines = translation["text"].split("\n")
    assert lines[0].startswith(f"  {TM_TARGET} ") and lines[1] == f"<b>{TM_TARGET}</b>"
    assert lines[2] == "" and translation["sentences"] == 3 and translation["origin"] == "mt"


LONG_SOURCE = (
    "When the document is opened for the first time after the upgrade, the program converts "
    "every style that the old version stored in the file; it keeps the names the user gave "
    "them, and it writes the converted styles back only when the document is saved again."
)


def test_a_long_sentence_is_translated_by_clauses_unless_the_memory_holds_it(server) -> None:
    """A sentence of more than 30 words goes to the model clause by clause (the demo model
    drops content from longer ones); one the memory holds a close match of stays whole, so
    that the match can be repaired (a clause matches no TM sentence)."""
    client = server.client
    create_memory(client, "long")

    def ask():
        reply = client.post(
            "/v1/suggest",
            {
                "source": LONG_SOURCE,
                "memories": ["long"],
                "options": {"lambda": 5.0, "repair": "0.5"},
            },
        )
        assert reply.status == 200, reply.body
        return reply.json["results"][0]["translation"]

    split = ask()
    assert split["sentences"] == 2 and split["repaired"] is None
    add_segment(
        client,
        "long",
        LONG_SOURCE.replace("first time", "second time"),
        "Wenn das Dokument nach der Aktualisierung zum zweiten Mal geöffnet wird, wandelt das"
        " Programm jede Vorlage um, die die alte Version in der Datei gespeichert hat; es behält"
        " die Namen, die der Benutzer ihnen gab, und schreibt die umgewandelten Vorlagen erst"
        " zurück, wenn das Dokument erneut gespeichert wird.",
    )
    assert ask()["sentences"] == 1
