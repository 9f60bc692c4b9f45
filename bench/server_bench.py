r"""Drive a real tm-guide server with bounded concurrent clients on loopback and print latencies.

Starts `tm-guide serve` on a free 127.0.0.1 port with a fresh SQLite file (or --db), seeds a
memory, then runs two fixed-size phases with --clients threads each and stops by itself:

  adds      POST /v1/memories/{m}/segments with distinct pairs (answered once committed and
            indexed; word-aligned after the answer, in batches)
  suggest   POST /v1/suggest for one ~30-token segment each (matches + guided MT)

and prints throughput and p50/p95 latency per phase, then checks that every add is in the memory's
TMX export exactly once (no lost or doubled writes) and, with MT, that a suggestion asked right
after an add draws pieces from the segment just added (8 such pairs, one by one). Last, with the
server stopped, it times the engine alone on the same queries (their pieces from the same
memory, searched in batches of the server's mean engine call, in a process of its own with the
server's environment) and prints the server's suggestions/s over the engine's. Example:

  python bench/server_bench.py --clients 16 --adds 400 --suggestions 200

Back to back, 16 clients measure saturation; with --think-ms each client pauses between its
suggestions as an editor reading them does (a 2 s mean: 16 editors at ~7 suggestions/s), and
with --add-think-ms between its adds as translators confirming segments do:

  python bench/server_bench.py --clients 16 --adds 16 --suggestions 240 --think-ms 2000

Writers under load, each add followed by a lookup of its text (both stores; --db for
PostgreSQL):

  python bench/server_bench.py --clients 32 --adds 16000 --suggestions 32 --matches-only \
      --lookup-after-add

A/B in one run: each --variant starts its own server with extra environment variables (all of
them seeded alike), and the phases are split into --rounds rounds that alternate between the
servers, so that a changing load on the machine falls on every variant alike:

  python bench/server_bench.py --rounds 4 \
      --variant no-batching:TM_GUIDE_BATCH_MAX_SENTENCES=1 --variant batching:
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "bench" / "corpus" / "data" / "en-de"

WORDS_EN = [
    "click",
    "the",
    "button",
    "to",
    "open",
    "dialog",
    "where",
    "you",
    "can",
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
    "spreadsheet",
    "chart",
    "style",
    "paragraph",
    "font",
    "column",
    "row",
    "sheet",
    "range",
    "value",
    "number",
    "date",
    "time",
    "print",
    "export",
    "import",
    "options",
    "settings",
    "properties",
    "new",
    "name",
    "window",
    "menu",
]


@dataclass(frozen=True)
class BenchOptions:
    clients: int = 16
    adds: int = 400
    suggestions: int = 200
    seed_segments: int = 10000
    corpus: Path | None = None  # directory with tm.tsv and test.tsv (bench/corpus); None: synthetic
    tokens: int = 30
    threads: int = 8
    workers: int = 1  # server worker processes (more than one needs PostgreSQL)
    db_url: str | None = None
    model: str | None = None
    translate: bool = True
    seed: int = 1
    rounds: int = 1
    think_ms: float = 0.0  # mean pause of a client between its suggestions (0: back to back)
    add_think_ms: float = 0.0  # mean pause of a client between its adds (0: back to back)
    lookup_after_add: bool = False  # each add is followed by a tmserver lookup of its text


@dataclass(frozen=True)
class Variant:
    """One server configuration: a name and the environment variables it adds."""

    name: str
    env: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Variant:
        """NAME:VAR=VALUE[,VAR=VALUE...] (NAME: alone adds nothing)."""
        name, _, assignments = text.partition(":")
        env = []
        for item in filter(None, (a.strip() for a in assignments.split(","))):
            key, sep, value = item.partition("=")
            if not sep or not key.startswith("TM_GUIDE_"):
                raise argparse.ArgumentTypeError(f"expected TM_GUIDE_VAR=VALUE, not {item!r}")
            env.append((key, value))
        if not name:
            raise argparse.ArgumentTypeError(f"variant {text!r} has no name")
        return cls(name, tuple(env))


@dataclass
class PhaseResult:
    name: str
    latencies: list[float]
    errors: list[str]
    seconds: float

    def merged(self, other: PhaseResult) -> PhaseResult:
        return PhaseResult(
            self.name,
            self.latencies + other.latencies,
            self.errors + other.errors,
            self.seconds + other.seconds,
        )

    def row(self, variant: str) -> str:
        lat = sorted(self.latencies)
        head = f"{variant:<16} {self.name:<8}"
        if not lat:
            return f"{head} {len(self.errors):>8} {len(self.errors):>7}"
        p50 = statistics.median(lat) * 1000
        p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))] * 1000
        return (
            f"{head} {len(lat) + len(self.errors):>8} {len(self.errors):>7} "
            f"{len(lat) / self.seconds:>10.1f} {p50:>9.1f} {p95:>9.1f} {lat[-1] * 1000:>9.1f}"
        )


class Http:
    """One request per connection, like independent editors."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
            conn.request(
                method, path, json.dumps(body).encode() if body is not None else None, headers
            )
            response = conn.getresponse()
            data = response.read()
            return response.status, json.loads(data) if data else None
        finally:
            conn.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def add_then_look_up(api: Http, source: str, target: str) -> tuple[int, Any]:
    """An add, then a tmserver lookup of the text just added (as an editor whose tool asks for
    the next segment, which repeats it): the add's answer, unless the lookup failed or did not
    find the new target, which counts as an error."""
    status, body = api.call(
        "POST", "/v1/memories/bench/segments", {"source": source, "target": target}
    )
    if status != 201:
        return status, body
    looked, units = api.call("GET", "/tmserver/en/de/unit/" + quote(source, safe=""))
    if looked != 200 or not any(unit["target"] == target for unit in units or []):
        return looked or 0, f"lookup after the add: {str(units)[:150]}"
    return status, body


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS_EN) for _ in range(n)).capitalize() + "."


def run_phase(
    name: str,
    jobs: Sequence[Callable[[], tuple[int, Any]]],
    clients: int,
    ok: int,
    think_s: float = 0.0,
    seed: int = 1,
) -> PhaseResult:
    """Each client takes the next job until none is left; with `think_s`, it starts after a
    uniform pause in [0, 2 think_s] and pauses an exponentially distributed time of mean
    `think_s` after each answer (an editor reading it)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    queue = list(reversed(jobs))

    def client(number: int) -> None:
        pauses = random.Random(seed * 1000 + number)
        if think_s:  # editors do not start in step: each begins after a pause of its own
            time.sleep(pauses.uniform(0, 2 * think_s))
        while True:
            with lock:
                if not queue:
                    return
                job = queue.pop()
            started = time.perf_counter()
            try:
                status, body = job()
            except OSError as exc:
                status, body = 0, str(exc)
            elapsed = time.perf_counter() - started
            with lock:
                if status == ok:
                    latencies.append(elapsed)
                else:
                    errors.append(f"{status}: {str(body)[:200]}")
            if think_s:
                time.sleep(pauses.expovariate(1 / think_s))

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return PhaseResult(name, latencies, errors, time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--adds", type=int, default=400)
    parser.add_argument("--suggestions", type=int, default=200)
    parser.add_argument(
        "--seed-segments", type=int, default=10000, help="segments imported before the phases"
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS if (CORPUS / "tm.tsv").exists() else None,
        help="directory with tm.tsv (seed TM) and test.tsv (queries); default: bench/corpus's "
        "en-de split when it was built, else synthetic sentences",
    )
    parser.add_argument(
        "--tokens",
        type=int,
        default=30,
        help="subword tokens per suggestion segment (about 2/3 as many words)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=16,
        help="server threads (default 16: one per client, so that every request is in the server)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server worker processes, each with --threads threads and its own model (default "
        "1; more need --db with PostgreSQL)",
    )
    parser.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    parser.add_argument(
        "--model", default=None, help="model bundle (default: TM_GUIDE_MODEL or the demo model)"
    )
    parser.add_argument("--matches-only", action="store_true", help="suggest without MT")
    parser.add_argument(
        "--variant",
        type=Variant.parse,
        action="append",
        default=None,
        metavar="NAME:VAR=VALUE,...",
        help="a server configuration to compare (repeatable; default: one server as configured)",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="mean pause of each client between suggestions (exponential; default 0: back to "
        "back, the saturation case); e.g. 2000 for editors who read each suggestion",
    )
    parser.add_argument(
        "--add-think-ms",
        type=float,
        default=0.0,
        help="mean pause of each client between adds (exponential; default 0: back to back); "
        "e.g. 100 for 24 writers offering ~200 adds/s between them",
    )
    parser.add_argument(
        "--lookup-after-add",
        action="store_true",
        help="follow each add with a tmserver lookup of its text, which must find it (the "
        "add phase's latency then covers both)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="split the phases into this many rounds, alternating between the variants",
    )
    args = parser.parse_args(argv)
    options = BenchOptions(
        clients=min(args.clients, 64),
        adds=args.adds,
        suggestions=args.suggestions,
        seed_segments=args.seed_segments,
        corpus=args.corpus,
        tokens=args.tokens,
        threads=args.threads,
        workers=max(1, args.workers),
        db_url=args.db,
        model=args.model,
        translate=not args.matches_only,
        rounds=max(1, args.rounds),
        think_ms=max(0.0, args.think_ms),
        add_think_ms=max(0.0, args.add_think_ms),
        lookup_after_add=args.lookup_after_add,
    )
    variants = args.variant or [Variant("server")]
    if args.db and len(variants) > 1:
        parser.error("--db serves one variant only (the variants would share one memory)")
    if len({v.name for v in variants}) != len(variants):
        parser.error("variant names must differ")
    with tempfile.TemporaryDirectory(prefix="tm-guide-bench-") as tmp:
        return bench(options, variants, Path(tmp))


@dataclass
class Running:
    """A started server of one variant, its workload and what its phases measured."""

    variant: Variant
    process: subprocess.Popen[bytes]
    api: Http
    work: Path
    seed_pairs: list[tuple[str, str]]
    queries: list[str]
    adds: list[tuple[str, str]]
    env: dict[str, str]
    before: int = 0
    add_result: PhaseResult | None = None
    suggest_result: PhaseResult | None = None
    batch_size: float = 0.0  # mean sentences per engine call, from the server's metrics


def _pause(ms: float) -> str:
    return f"{ms:g} ms mean pause" if ms else "back to back"


def _round_phase(
    options: BenchOptions, round_no: int, name: str, jobs: list[Any], status: int, think_ms: float
) -> Any:
    """One phase of a round: `jobs` from the options' clients, each expecting `status`."""
    return run_phase(
        name,
        jobs,
        options.clients,
        status,
        think_s=think_ms / 1000,
        seed=options.seed + round_no,
    )


def bench(options: BenchOptions, variants: list[Variant], work: Path) -> int:
    running: list[Running] = []
    try:
        for index, variant in enumerate(variants):
            running.append(_start(options, variant, work / f"v{index}"))
        for server in running:
            _wait_ready(server.api, server.process, server.work)
            _prepare(options, server)
        suggest_body = {"memories": ["bench"], "options": {"translate": options.translate}}
        for round_no in range(options.rounds):
            for server in running:
                api = server.api
                add_jobs = [
                    partial(add_then_look_up, api, s, t)
                    if options.lookup_after_add
                    else partial(
                        api.call, "POST", "/v1/memories/bench/segments", {"source": s, "target": t}
                    )
                    for s, t in _share(server.adds, round_no, options.rounds)
                ]
                added = _round_phase(options, round_no, "add", add_jobs, 201, options.add_think_ms)
                suggest_jobs = [
                    partial(api.call, "POST", "/v1/suggest", {**suggest_body, "source": q})
                    for q in _share(server.queries, round_no, options.rounds)
                ]
                suggested = _round_phase(
                    options, round_no, "suggest", suggest_jobs, 200, options.think_ms
                )
                server.add_result = _merge(server.add_result, added)
                server.suggest_result = _merge(server.suggest_result, suggested)
        print(
            f"server: {options.workers} worker(s) x {options.threads} threads, "
            f"{options.clients} clients "
            f"(suggestions: {_pause(options.think_ms)}, adds: {_pause(options.add_think_ms)}), "
            f"db {'postgresql' if (options.db_url or '').startswith('postgres') else 'sqlite'}, "
            f"translate={options.translate}, {os.cpu_count()} CPUs, "
            f"{options.rounds} round(s) alternating between variants"
        )
        for server in running:
            env = " ".join(f"{k}={v}" for k, v in server.variant.env) or "(as configured)"
            print(f"variant {server.variant.name}: {env}")
        print(
            f"{'variant':<16} {'phase':<8} {'requests':>8} {'errors':>7} {'req/s':>10} "
            f"{'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}"
        )
        failed = False
        for server in running:
            assert server.add_result is not None and server.suggest_result is not None
            print(server.add_result.row(server.variant.name))
            print(server.suggest_result.row(server.variant.name))
        for server in running:
            failed |= _report_checks(server, options.translate)
        _stop(running)
        if options.translate and not options.think_ms:  # saturation: the engine is the bound
            for server in running:
                _compare_with_engine(server)
    finally:
        _stop(running)
    return 1 if failed else 0


def _stop(running: list[Running]) -> None:
    for server in running:
        if server.process.poll() is None:
            server.process.terminate()
    for server in running:
        server.process.wait(timeout=60)


def _compare_with_engine(server: Running) -> None:
    """The server's suggestion throughput against its engine's own: the same queries, with the
    pieces the server's memory gives them, searched in batches of the server's mean engine call
    by the same translator (same environment, own process, nothing else running)."""
    assert server.suggest_result is not None
    batch = max(1, round(server.batch_size))
    queries = server.work / "queries.json"
    queries.write_text(json.dumps(server.queries))
    done = subprocess.run(
        [sys.executable, __file__, "--engine-alone", str(queries), str(batch)],
        env=server.env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"{server.variant.name}: engine alone: failed\n{done.stderr[-2000:]}")
        return
    alone = json.loads(done.stdout.strip().splitlines()[-1])
    served = len(server.suggest_result.latencies) / server.suggest_result.seconds
    print(
        f"{server.variant.name}: engine alone: {alone['per_s']:.1f} suggestions/s (search only, "
        f"batches of {batch}; preparing and shaping add {alone['prepare_ms']:.1f} + "
        f"{alone['finish_ms']:.1f} ms per suggestion); server / engine = "
        f"{served / alone['per_s']:.2f}"
    )


def engine_alone(queries_path: str, batch: int) -> dict[str, float]:
    """Run in the server's environment: the engine's throughput on the bench's queries, best of
    two passes, with the memory "bench" as the server left it."""
    from tm_guide.server.config import ServerConfig
    from tm_guide.server.services import Services
    from tm_guide.server.translation import MTOptions, collect_pieces, translate_options

    queries = json.loads(Path(queries_path).read_text())
    services = Services(ServerConfig.from_env())
    try:
        translator = services.translator()
        memory = services.store().get_memory("bench")
        options = translate_options(
            MTOptions(), 10, [memory.id], services.config.compute, translator.bundle.card
        )
        pieces = collect_pieces(translator, queries, options)
        started = time.perf_counter()
        prepared = translator.prepare(queries, options, pieces)
        prepare_s = time.perf_counter() - started
        chunks = [prepared[k : k + batch] for k in range(0, len(prepared), batch)]
        searched: list[Any] = []
        best = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            searched = [one for chunk in chunks for one in translator.search(chunk, options)]
            best = min(best, time.perf_counter() - started)
        started = time.perf_counter()
        translator.finish(prepared, searched, options)
        finish_s = time.perf_counter() - started
    finally:
        services.close()
    return {
        "per_s": len(queries) / best,
        "prepare_ms": prepare_s / len(queries) * 1000,
        "finish_ms": finish_s / len(queries) * 1000,
    }


def _start(options: BenchOptions, variant: Variant, work: Path) -> Running:
    work.mkdir(parents=True)
    rng = random.Random(options.seed)  # every variant gets the same workload
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TM_GUIDE_") or k == "TM_GUIDE_MODEL"
    }
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TM_GUIDE_DB"] = options.db_url or f"sqlite:///{work / 'bench.sqlite'}"
    env["TM_GUIDE_INDEX_DIR"] = str(work / "index")
    env["TM_GUIDE_JOBS_DIR"] = str(work / "jobs")
    if options.model:
        env["TM_GUIDE_MODEL"] = options.model
    env.update(dict(variant.env))
    cli = [sys.executable, "-m", "tm_guide"]
    made = subprocess.run(
        [*cli, "keys", "create", "bench", "--scope", "*:write"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    token = made.stdout.strip().splitlines()[-1]
    port = free_port()
    command = [*cli, "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--threads", str(options.threads), "--workers", str(options.workers)]
    with open(work / "server.log", "wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    seed_pairs, queries = _workload(options, rng)
    adds = [
        (f"{sentence(rng, rng.randint(8, 20))} Ref{i:05d}", f"Satz Ref{i:05d}.")
        for i in range(options.adds)
    ]
    return Running(variant, process, Http(port, token), work, seed_pairs, queries, adds, env)


def _prepare(options: BenchOptions, server: Running) -> None:
    """Create and seed the memory (an import job), and note its size before the phases."""
    api = server.api
    status, body = api.call(
        "POST", "/v1/memories", {"name": "bench", "source_lang": "en", "target_lang": "de"}
    )
    assert status == 201, body
    _seed(api, server.seed_pairs)
    server.before = api.call("GET", "/v1/memories/bench")[1]["segment_count"]


def _share(items: list[Any], round_no: int, rounds: int) -> list[Any]:
    """Round `round_no`'s share of the items (every item in exactly one round)."""
    return items[round_no::rounds]


def _merge(total: PhaseResult | None, part: PhaseResult) -> PhaseResult:
    return part if total is None else total.merged(part)


FRESH_PAIRS = [
    (
        "Click the Zorblax {i} button to open the Quintor {i} dialog.",
        "Klicken Sie auf die Schaltfläche Zorblax {i}, um den Dialog Quintor {i} zu öffnen.",
    ),
    (
        "Choose Format - Glimmer {i} to change the settings of the selected frame.",
        "Wählen Sie Format - Glimmer {i}, um die Einstellungen des ausgewählten Rahmens zu ändern.",
    ),
]


def fresh_pieces(api: Http, count: int) -> tuple[int, int]:
    """Add a segment, then at once ask for a suggestion of a sentence one word away from it:
    how many suggestions drew pieces from the segment just added (of `count`)."""
    used = 0
    for i in range(count):
        source, target = (text.format(i=i) for text in FRESH_PAIRS[i % len(FRESH_PAIRS)])
        status, added = api.call(
            "POST", "/v1/memories/bench/segments", {"source": source, "target": target}
        )
        assert status == 201, added
        query = source.replace(" the ", " this ", 1)
        status, body = api.call(
            "POST", "/v1/suggest", {"memories": ["bench"], "source": query, "options": {}}
        )
        assert status == 200, body
        translation = body["results"][0].get("translation") or {}
        provenance = {
            ref["id"] for piece in translation.get("pieces_used", []) for ref in piece["segments"]
        }
        used += added["segment"]["id"] in provenance
    return used, count


def _exported_sources(api: Http) -> collections.Counter[str]:
    """How many units of the bench memory hold each source (its TMX export, parsed)."""
    from xml.etree import ElementTree

    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=600)
    try:
        conn.request(
            "GET", "/v1/memories/bench/export", headers={"Authorization": f"Bearer {api.token}"}
        )
        data = conn.getresponse().read()
    finally:
        conn.close()
    sources: collections.Counter[str] = collections.Counter()
    for tu in ElementTree.fromstring(data).iter("tu"):
        seg = tu.find("tuv/seg")
        if seg is not None:
            sources["".join(seg.itertext())] += 1
    return sources


def _report_checks(server: Running, translate: bool) -> bool:
    """Stage means and the no-lost-writes check of one server; True when something failed."""
    api, name = server.api, server.variant.name
    assert server.add_result is not None and server.suggest_result is not None
    after = api.call("GET", "/v1/memories/bench")[1]["segment_count"]
    exported = _exported_sources(api)  # every unit of the memory, read back in one export
    found = sum(1 for s, _ in server.adds if exported[s] == 1)
    metrics = _stage_means(api.port)
    server.batch_size = metrics.get("batch_size", 0.0)
    if metrics:
        print(
            f"{name}: mean stage time per suggestion (ms; batch_size: sentences per engine call): "
            + ", ".join(f"{k} {v:.1f}" for k, v in metrics.items())
        )
    acknowledged = len(server.add_result.latencies)
    lost = acknowledged - (after - server.before)
    verdict = "OK" if lost == 0 and found == len(server.adds) else "LOST OR DOUBLED"
    print(
        f"{name}: writes: {acknowledged} acknowledged, memory grew by {after - server.before}, "
        f"{found}/{len(server.adds)} found exactly once in its export -> {verdict}"
    )
    used = asked = 0
    if translate:
        used, asked = fresh_pieces(api, 8)
        print(
            f"{name}: a suggestion right after an add drew pieces from it: {used}/{asked} "
            f"-> {'OK' if used == asked else 'MISSED'}"
        )
    errors = server.add_result.errors + server.suggest_result.errors
    for error in errors[:5]:
        print(f"{name}: error:", error)
    return bool(errors) or lost != 0 or found != len(server.adds) or used != asked


def _wait_ready(api: Http, server: subprocess.Popen[bytes], work: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("server exited:\n" + (work / "server.log").read_text(errors="replace"))
        try:
            status, body = api.call("GET", "/ready")
            if status == 200:
                return
            if (
                status == 503
                and "database" in body.get("checks", {})
                and "model" in body["checks"]
                and body["checks"]["model"].startswith("error")
            ):
                print(f"note: model not available ({body['checks']['model']})", file=sys.stderr)
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("server not ready in time")


def _workload(options: BenchOptions, rng: random.Random) -> tuple[list[tuple[str, str]], list[str]]:
    """Seed pairs and suggestion queries: from the corpus split when given (TM = its tm.tsv,
    queries = test sentences of about `tokens` words), else synthetic sentences."""
    if options.corpus is None:
        pairs = [
            (sentence(rng, rng.randint(6, 30)), f"Übersetzung {i}.")
            for i in range(options.seed_segments)
        ]
        return pairs, [sentence(rng, options.tokens) for _ in range(options.suggestions)]
    pairs = _read_tsv(options.corpus / "tm.tsv")
    rng.shuffle(pairs)
    sources = [s for s, _ in _read_tsv(options.corpus / "test.tsv")]
    near = [s for s in sources if abs(len(s.split()) - options.tokens * 2 // 3) <= 4]
    queries = [rng.choice(near or sources) for _ in range(options.suggestions)]
    return pairs[: options.seed_segments], queries


def _read_tsv(path: Path) -> list[tuple[str, str]]:
    pairs = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            source, _, target = line.rstrip("\n").partition("\t")
            if source.strip() and target.strip():
                pairs.append((source, target))
    return pairs


def _seed(api: Http, pairs: list[tuple[str, str]]) -> None:
    """Import the pairs as one TMX job (aligned in one pass), as a memory that has history."""
    if not pairs:
        return
    from xml.sax.saxutils import escape

    units = "".join(
        f'<tu><tuv xml:lang="en"><seg>{escape(source)}</seg></tuv>'
        f'<tuv xml:lang="de"><seg>{escape(target)}</seg></tuv></tu>'
        for source, target in pairs
    )
    tmx = (
        '<?xml version="1.0" encoding="UTF-8"?><tmx version="1.4">'
        '<header srclang="en" datatype="plaintext" segtype="sentence" adminlang="en" '
        'creationtool="bench" creationtoolversion="1" o-tmf="bench"/>'
        f"<body>{units}</body></tmx>"
    ).encode()
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=600)
    conn.request(
        "POST", "/v1/memories/bench/imports", tmx, {"Authorization": f"Bearer {api.token}"}
    )
    response = conn.getresponse()
    job = json.loads(response.read())
    conn.close()
    assert response.status == 202, job
    while True:
        status, state = api.call("GET", job["status_url"])
        if state["status"] == "failed":
            raise SystemExit(f"seed import failed: {state['error']}")
        if state["status"] == "succeeded":
            return
        time.sleep(0.5)


def _stage_means(port: int) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("tm_guide_stage_duration_seconds_sum"):
            stage = line.split('stage="', 1)[1].split('"', 1)[0]
            sums[stage] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("tm_guide_stage_duration_seconds_count"):
            stage = line.split('stage="', 1)[1].split('"', 1)[0]
            counts[stage] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("tm_guide_decode_batch_sentences_sum"):
            sums["batch_size"] = float(line.rsplit(" ", 1)[1]) / 1000
        elif line.startswith("tm_guide_decode_batch_sentences_count"):
            counts["batch_size"] = float(line.rsplit(" ", 1)[1])
    return {stage: sums[stage] / counts[stage] * 1000 for stage in sums if counts.get(stage)}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--engine-alone"]:
        print(json.dumps(engine_alone(sys.argv[2], int(sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())
