"""Concurrent suggestion requests are decoded together (micro-batching), and each still gets its
own result: the one it gets when asked alone, with its own options; a bad request among them
fails alone."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from server_client import Client, Reply
from server_scenarios import add_segment, create_memory

from tm_guide.server.batching import DecodeBatcher

TM = [
    ("Click open the menu file save window dialog.", "Klicken öffnen das menü datei speichern."),
    ("Select table cell text page insert format.", "Auswählen tabelle zelle text seite einfügen."),
    (
        "Choose the button chart style paragraph font.",
        "Wählen schaltfläche diagramm vorlage absatz.",
    ),
    ("Print export import options settings view.", "Drucken exportieren optionen einstellungen."),
]
WORDS = tuple(
    [
        "click",
        "open",
        "the",
        "menu",
        "file",
        "save",
        "window",
        "dialog",
        "select",
        "table",
        "cell",
        "text",
        "page",
        "insert",
        "format",
        "tools",
        "edit",
        "view",
        "help",
        "document",
        "choose",
        "button",
        "chart",
        "style",
        "paragraph",
        "font",
        "column",
        "row",
    ]
)


def equal_length_queries(bundle: Any, count: int) -> list[str]:
    """Distinct queries of one source length in tokens. The output cap of an engine call follows
    its longest sentence (as for the segments of one request), and a random-weight model runs to
    the cap, so equal lengths are what make a shared call and a lone one comparable."""
    rng = random.Random(3)
    by_length: dict[int, list[str]] = {}
    while True:
        query = " ".join(rng.choice(WORDS) for _ in range(7)).capitalize() + "."
        same = by_length.setdefault(len(bundle.encode_source(query)), [])
        if query not in same:
            same.append(query)
        if len(same) == count:
            return same


def batch_histogram(client: Client) -> tuple[float, float]:
    """From /metrics: (decoded requests, requests whose engine call held one sentence only)."""
    calls = single = 0.0
    for line in client.get("/metrics").body.decode().splitlines():
        if line.startswith("tm_guide_decode_batch_sentences_count"):
            calls = float(line.rsplit(" ", 1)[1])
        elif line.startswith('tm_guide_decode_batch_sentences_bucket{le="1.0"}'):
            single = float(line.rsplit(" ", 1)[1])
    return calls, single


def together(client: Client, bodies: list[dict[str, Any]]) -> list[Reply]:
    """Send all bodies at once, one thread each."""
    replies: list[Reply | None] = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def send(i: int) -> None:
        start.wait()
        replies[i] = client.post("/v1/suggest", bodies[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r is not None for r in replies)
    return [r for r in replies if r is not None]


def submit_together(
    batcher: DecodeBatcher, jobs: dict[str, list[Any]], options: Any
) -> dict[str, Any]:
    """Submit every job (its prepared sentences) at once, one thread each, then close the
    batcher. Each job's result is its Decoded, or the exception it got back."""
    outcome: dict[str, Any] = {}
    start = threading.Barrier(len(jobs))

    def submit(name: str) -> None:
        start.wait()
        try:
            outcome[name] = batcher.translate(jobs[name], options)
        except Exception as exc:  # a job's own error comes back to it
            outcome[name] = exc

    threads = [threading.Thread(target=submit, args=(name,)) for name in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    batcher.close()
    return outcome


def own_result(reply: Reply) -> list[dict[str, Any]]:
    """What a request asked for, without the timings (which depend on the company it had). The
    model score is compared to 1e-3: a step over a batch of another size sums in another order,
    and the score, rounded to four places, can then differ in its last place (-5.2282 alone,
    -5.2283 beside others); the text, the pieces and every other field must be the same."""
    assert reply.status == 200, reply.body
    out = []
    for result in reply.json["results"]:
        translation = dict(result["translation"])
        if isinstance(translation.get("model_score"), float):
            translation["model_score"] = pytest.approx(translation["model_score"], abs=1e-3)
        out.append({"source": result["source"], "matches": result["matches"], **translation})
    return out


@pytest.fixture(scope="module")
def server(start_server, tiny_bundle_dir):
    # A long wait, so that requests sent at once surely meet in one engine call.
    server = start_server(
        model=tiny_bundle_dir, threads=16, extra_env={"TM_GUIDE_BATCH_WAIT_MS": "1000"}
    )
    create_memory(server.client, "tm")
    create_memory(server.client, "french", "en", "fr")
    for source, target in TM:
        add_segment(server.client, "tm", source, target)
    return server


def test_concurrent_suggestions_share_engine_calls_and_get_their_own_results(
    server, tiny_bundle
) -> None:
    client = server.client
    queries = equal_length_queries(tiny_bundle, 8)
    options: list[dict[str, Any]] = [
        {},
        {"unguided": True},
        {"lambda": 4.0, "beam_size": 3},
        {"m": 2, "min_similarity": 0.2},  # piece options only: may share the default call
        {},
        {"binary_reward": True},
        {"lambda": 4.0, "reward_repeats": False},
        {"lambda": 4.0, "reward_repeats": False, "clipped": True, "weighting": "power:2"},
    ]
    bodies = [
        {"source": query, "memories": ["tm"], "options": opts}
        for query, opts in zip(queries, options, strict=True)
    ]
    alone = [own_result(client.post("/v1/suggest", body)) for body in bodies]
    decoded_before, alone_before = batch_histogram(client)

    replies = together(client, bodies)

    assert [own_result(reply) for reply in replies] == alone
    assert alone[1][0]["unguided"] is not None and alone[0][0]["unguided"] is None
    assert len({a[0]["source"] for a in alone}) == len(queries)
    decoded, decoded_alone = batch_histogram(client)
    assert decoded - decoded_before == len(bodies)
    shared = len(bodies) - (decoded_alone - alone_before)
    assert shared >= 2, "no engine call decoded more than one request"
    assert all("queue" in r.json["results"][0]["timings_ms"] for r in replies)


def test_bad_requests_among_concurrent_ones_fail_alone(server, tiny_bundle) -> None:
    client = server.client
    queries = equal_length_queries(tiny_bundle, 4)
    good = [{"source": q, "memories": ["tm"]} for q in queries]
    alone = [own_result(client.post("/v1/suggest", body)) for body in good]
    bad: list[tuple[dict[str, Any], int]] = [
        ({"source": queries[0], "memories": ["nowhere"]}, 404),
        ({"source": queries[0], "memories": ["tm"], "options": {"beam_size": 0}}, 400),
        ({"source": queries[0], "memories": ["tm"], "options": {"lambda": "much"}}, 400),
        ({"source": queries[0], "memories": ["tm"], "options": {"reward_repeats": "no"}}, 400),
        ({"source": queries[0], "memories": ["tm"], "options": {"weighting": "cubic"}}, 400),
        ({"source": queries[0], "memories": ["tm"], "options": {"clipped": 1}}, 400),
        ({"source": queries[0], "memories": ["french"]}, 422),
    ]

    replies = together(client, good[:2] + [body for body, _ in bad] + good[2:])

    good_replies = replies[:2] + replies[2 + len(bad) :]
    assert [own_result(reply) for reply in good_replies] == alone
    for reply, (_, status) in zip(replies[2 : 2 + len(bad)], bad, strict=True):
        assert reply.status == status, reply.body
        assert set(reply.json) >= {"error", "message"}


def test_a_failing_engine_call_is_retried_request_by_request(tiny_bundle) -> None:
    """When one request breaks the shared beam search, the others still get their results (the
    broken one here carries a reward that is not a piece reward)."""
    from dataclasses import replace

    from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions
    from tm_guide.decoding.search import SearchOptions

    translator = GuidedTranslator(tiny_bundle)
    options = TranslateOptions(search=SearchOptions(beam_size=2, max_length=12))
    batcher = DecodeBatcher(translator.search, max_sentences=8, max_wait_s=0.5)
    sentences = {
        "good one": ["Open the menu file."],
        "broken": ["Save the window."],
        "good two": ["Select table cell.", "Insert the chart."],
    }
    jobs = {name: translator.prepare(texts, options) for name, texts in sentences.items()}
    jobs["broken"] = [replace(jobs["broken"][0], reward=object())]
    outcome = submit_together(batcher, jobs, options)

    assert isinstance(outcome["broken"], AttributeError), outcome["broken"]
    for name in ("good one", "good two"):
        lone = translator.translate(sentences[name], options)
        prepared = jobs[name]
        got = translator.finish(prepared, outcome[name].results, options)
        assert [r.translation for r in got] == [r.translation for r in lone]


def test_decoding_threads_run_their_rounds_side_by_side(tiny_bundle) -> None:
    """With two decoding threads, a second round starts while the first is still decoding (the
    engine call of each waits until the other has begun: with one thread they would never
    meet), and each request still gets its own result."""
    from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions
    from tm_guide.decoding.search import SearchOptions

    translator = GuidedTranslator(tiny_bundle)
    options = TranslateOptions(search=SearchOptions(beam_size=2, max_length=12))
    both_decoding = threading.Barrier(2, timeout=30)

    def search(items: Any, opts: Any) -> Any:
        both_decoding.wait()
        return translator.search(items, opts)

    batcher = DecodeBatcher(search, max_sentences=1, max_wait_s=0.0, decoders=2)
    requests = {"first": ["Open the menu file."], "second": ["Select table cell."]}
    jobs = {name: translator.prepare(texts, options) for name, texts in requests.items()}
    outcome = submit_together(batcher, jobs, options)

    for name, sentences in requests.items():
        assert not isinstance(outcome[name], Exception), outcome[name]
        lone = translator.translate(sentences, options)
        got = translator.finish(jobs[name], outcome[name].results, options)
        assert [r.translation for r in got] == [r.translation for r in lone]
        assert outcome[name].batch_sentences == 1


def test_a_deadline_picks_the_widest_beam_predicted_to_meet_it(tiny_bundle) -> None:
    """At 0.5 s per sentence measured at beam 4, a sentence due in 0.3 s is decoded with beam 2,
    one due in 0.15 s greedily, one due in 0.05 s not at all (tm-only); each result is the one
    that beam gives on its own."""
    from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions
    from tm_guide.decoding.search import SearchOptions

    translator = GuidedTranslator(tiny_bundle)
    options = TranslateOptions(search=SearchOptions(beam_size=4, max_length=12))
    beams: list[int] = []

    def search(items: Any, opts: Any) -> Any:
        beams.append(opts.search.beam_size)
        return translator.search(items, opts)

    batcher = DecodeBatcher(search, max_sentences=8, max_wait_s=0.0)
    sentence = ["Open the menu file."]
    for due_s, level, beam in [(0.3, "beam", 2), (0.15, "greedy", 1), (0.05, "tm-only", None)]:
        batcher.costs = type(batcher.costs)()  # the measured speed only, not the calls here
        batcher.costs.record(4, 1, 0.5)
        prepared = translator.prepare(sentence, options)
        decoded = batcher.translate(prepared, options, deadline=time.perf_counter() + due_s)
        assert decoded.degraded == level
        if beam is None:
            assert decoded.results == [None] and beams[-1:] != [None]
            continue
        assert beams[-1] == beam
        alone = replace(options, search=replace(options.search, beam_size=beam))
        got = translator.finish(prepared, decoded.results, alone)
        lone = translator.translate(sentence, alone)
        assert [r.translation for r in got] == [r.translation for r in lone]
    calls = len(beams)
    batcher.translate(translator.prepare(sentence, options), options)  # no deadline: as asked
    assert beams[calls:] == [4]
    batcher.close()
