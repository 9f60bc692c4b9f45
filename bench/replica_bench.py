r"""A new replica's time to its first correct suggestion over a PostgreSQL memory of N segments.

For each size: a fresh PostgreSQL database gets a memory of N synthetic pairs (bench/store_bench's
Zipf corpus), tokenized by the model bundle and given a word alignment (a diagonal one: what the
replica reads is the same as after an eflomal pass, and N = 1M would take eflomal hours here).
Then `tm-guide serve` starts on it with an empty index directory, as a new replica does, and the
bench measures from the process start:

  ready     /ready answers 200 (index caught up from the database, model loaded)
  first     the first /v1/suggest for a TM source answers a 100 match with its target and a
            guided translation with pieces from the memory (priors estimated, pieces built)

then stops it and starts it again on the index it built (a restart), and prints both, with the
server's peak resident memory. Example:

  python bench/replica_bench.py --sizes 100000,1000000
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server_bench import free_port  # noqa: E402
from store_bench import Corpus  # noqa: E402

from tm_guide.config import BUNDLED_MODEL  # noqa: E402
from tm_guide.pieces.align import ALIGNER_ID  # noqa: E402
from tm_guide.records import SegmentRecord  # noqa: E402
from tm_guide.store import SegmentAnalysis, Store  # noqa: E402

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
PROBE = 1234  # the pair whose source is asked for


@dataclass
class Start:
    label: str
    ready_s: float
    first_s: float
    peak_rss_mib: float


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql)


def diagonal(source: list[str], target: list[str]) -> list[tuple[int, int]]:
    if not source or not target:
        return []
    return [(i, min(len(target) - 1, i * len(target) // len(source))) for i in range(len(source))]


def seed(url: str, size: int, work: Path) -> tuple[str, str]:
    """The memory, tokenized and aligned; returns the probe pair."""
    from tm_guide.model import Bundle

    bundle = Bundle.load(BUNDLED_MODEL)
    corpus = Corpus()
    with Store.open(url, index_dir=work / "seed-index") as store:
        memory = store.create_memory("bench", "en", "de")
        started = time.perf_counter()
        store.import_records(memory, (SegmentRecord(s, t) for s, t in corpus.sentences(size)))
        print(f"  seeded {size:,} pairs in {time.perf_counter() - started:.0f} s", flush=True)
        started = time.perf_counter()
        segments = store.iter_segments(store.get_memory(memory.id))
        while batch := list(islice(segments, 5000)):
            analyses = []
            for segment in batch:
                src = bundle.encode_source(segment.source)
                trg = bundle.encode_target(segment.target)
                analyses.append(
                    SegmentAnalysis(
                        segment.id, src, trg, diagonal(src, trg), bundle.tokenizer_id, ALIGNER_ID
                    )
                )
            store.set_analysis(analyses)
        print(f"  tokenized and aligned in {time.perf_counter() - started:.0f} s", flush=True)
    return next(islice(corpus.sentences(PROBE + 1), PROBE, None))


def _call(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, data, {"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def _peak_rss_mib(pids: Iterator[int]) -> float:
    peak = 0.0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except OSError:
            continue
    return peak


def _children(pid: int) -> Iterator[int]:
    yield pid
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    yield from (int(p) for p in found.split())


def start_replica(url: str, index_dir: Path, probe: tuple[str, str], label: str) -> Start:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
    env |= {"TM_GUIDE_DB": url, "TM_GUIDE_INDEX_DIR": str(index_dir), "TM_GUIDE_AUTH": "off"}
    env["TM_GUIDE_JOBS_DIR"] = str(index_dir.parent / "jobs")
    command = [sys.executable, "-m", "tm_guide", "serve", "--port", str(port), "--threads", "4"]
    log = open(index_dir.parent / f"{label}.log", "wb")  # noqa: SIM115 (closed below)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    ready = first = None
    try:
        while time.perf_counter() - started < 3600:
            if process.poll() is not None:
                raise SystemExit(f"replica exited; see {log.name}")
            try:
                if ready is None:
                    if _call(port, "GET", "/ready")[0] == 200:
                        ready = time.perf_counter() - started
                    else:
                        time.sleep(0.2)
                    continue
                status, body = _call(
                    port, "POST", "/v1/suggest", {"memories": ["bench"], "source": probe[0]}
                )
            except OSError:
                time.sleep(0.2)
                continue
            result = body["results"][0] if status == 200 else {}
            matches = result.get("matches", [])
            translation = result.get("translation") or {}
            if (
                matches
                and matches[0]["match"] == 100
                and matches[0]["target"] == probe[1]
                and translation.get("pieces_used")
            ):
                first = time.perf_counter() - started
                break
            raise SystemExit(f"replica answered without the 100 match and pieces: {body}")
        peak = _peak_rss_mib(_children(process.pid))
    finally:
        process.terminate()
        process.wait(timeout=60)
        log.close()
    assert ready is not None and first is not None
    return Start(label, ready, first, peak)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000", help="comma-separated memory sizes")
    args = parser.parse_args(argv)
    rows: list[tuple[int, Start]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        name = f"tmg_replica_{size}"
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _admin(f'CREATE DATABASE "{name}"')
        url = PG_URL.format(name=name)
        try:
            with tempfile.TemporaryDirectory(prefix="tmg-replica-") as tmp:
                work = Path(tmp)
                print(f"{size:,} segments:", flush=True)
                probe = seed(url, size, work)
                index_dir = work / "replica-index"
                rows.append((size, start_replica(url, index_dir, probe, "new replica")))
                rows.append((size, start_replica(url, index_dir, probe, "restart")))
        finally:
            _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"PostgreSQL, {os.cpu_count()} CPUs, demo model; seconds from process start")
    print("| segments | start | /ready s | first correct suggestion s | peak RSS MiB |")
    print("|---|---|---|---|---|")
    for size, row in rows:
        print(
            f"| {size:,} | {row.label} | {row.ready_s:.1f} | {row.first_s:.1f} | "
            f"{row.peak_rss_mib:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
