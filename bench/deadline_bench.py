r"""Answers within a CAT tool's deadline: concurrent Weblate-style DeepL batches on one server.

Starts `tm-guide serve` (SQLite, the bundled demo model, one worker) once per variant on a free
loopback port, imports the pairs of a gettext catalogue as a memory (all but the queries), then
sends --clients batches of --batch msgids at once, as Weblate's DeepL service does (one POST of
/deepl/v2/translate with tag_handling xml), --rounds times, and prints per variant:

  past       answers that came after --client-timeout-s (Weblate waits 5 s, then gives up)
  p50/p95    latency of the batches (ms)
  degraded   how the answers were decoded (X-TM-Guide-Degraded): as asked, beam, greedy,
             unguided (some sentences without TM pieces), tm-only

Variants: `default` (the server's TM_GUIDE_DEEPL_DEADLINE_MS), one per --deadlines-ms value, and
`none` (0: no deadline, every batch decoded as asked), measured alternately in the same run.
Example:

  python bench/deadline_bench.py --clients 32 --batch 20 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import requests
from local_server import LocalServer, catalogue_pairs

LEVELS = ("beam", "greedy", "unguided", "tm-only")  # tm_guide.server.batching.DEGRADED_LEVELS


def burst(server: LocalServer, batches: list[list[str]]) -> list[tuple[float, str]]:
    """All batches at once; (seconds, degraded level) of each."""
    results: list[tuple[float, str]] = [(0.0, "")] * len(batches)
    start = threading.Barrier(len(batches))

    def send(i: int) -> None:
        session = requests.Session()
        start.wait()
        began = time.perf_counter()
        reply = session.post(
            server.base + "/deepl/v2/translate",
            json={"text": batches[i], "target_lang": "DE", "tag_handling": "xml"},
            headers={"Authorization": f"DeepL-Auth-Key {server.key}"},
            timeout=300,
        )
        reply.raise_for_status()
        level = reply.headers.get("X-TM-Guide-Degraded", "as asked")
        results[i] = (time.perf_counter() - began, level)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--catalogue", type=Path, default=Path("/usr/share/locale/de/LC_MESSAGES/coreutils.mo")
    )
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--client-timeout-s", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--deadlines-ms",
        type=float,
        nargs="*",
        default=[],
        help="TM_GUIDE_DEEPL_DEADLINE_MS values to compare (default: the server's default only)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:VAR=VALUE,...",
        help="a server configuration to compare besides the default (repeatable)",
    )
    args = parser.parse_args()
    variants: dict[str, dict[str, str]] = {"default": {}}
    for ms in args.deadlines_ms:
        variants[f"{ms:g} ms"] = {"TM_GUIDE_DEEPL_DEADLINE_MS": f"{ms:g}"}
    for spec in args.variant:
        name, _, assignments = spec.partition(":")
        variants[name] = dict(a.split("=", 1) for a in assignments.split(",") if a)
    variants["none"] = {"TM_GUIDE_DEEPL_DEADLINE_MS": "0"}

    all_pairs = [(s, t) for s, t in catalogue_pairs([args.catalogue]) if 10 <= len(s) <= 300]
    rng = random.Random(args.seed)
    rng.shuffle(all_pairs)
    wanted = args.clients * args.batch
    queries = [s for s, _ in all_pairs[:wanted]]
    tm = all_pairs[wanted:]
    print(
        f"{args.catalogue.name}: TM {len(tm)} pairs; {args.clients} clients x {args.batch} msgids, "
        f"{args.rounds} rounds per variant, alternating; {os.cpu_count()} CPUs\n"
    )
    seen: dict[str, list[tuple[float, str]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        servers = {
            name: LocalServer(Path(tmp) / name, extra, threads=40)
            for name, extra in variants.items()
        }
        try:
            for server in servers.values():
                server.import_pairs("bench", tm)
            for server in servers.values():  # warm-up: load the model, measure a first speed
                burst(server, [queries[: args.batch]])
            for round_ in range(args.rounds):
                for name, server in servers.items():
                    batches = [
                        queries[(i * args.batch + round_) % len(queries) :][: args.batch]
                        or queries[: args.batch]
                        for i in range(args.clients)
                    ]
                    seen[name].extend(burst(server, batches))
        finally:
            for server in servers.values():
                server.stop()
    columns = ["variant", "batches", "past deadline", "p50 ms", "p95 ms", "max ms"]
    print("| " + " | ".join([*columns, "as asked", *LEVELS]) + " |")
    print("|" + "---|" * (len(columns) + 1 + len(LEVELS)))
    for name, results in seen.items():
        times = sorted(t for t, _ in results)
        levels = Counter(level for _, level in results)
        share = {k: f"{levels.get(k, 0) / len(results):.0%}" for k in ("as asked", *LEVELS)}
        past = sum(t > args.client_timeout_s for t in times)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        cells = [
            name,
            str(len(times)),
            str(past),
            f"{statistics.median(times) * 1000:.0f}",
            f"{p95 * 1000:.0f}",
            f"{times[-1] * 1000:.0f}",
            *share.values(),
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
