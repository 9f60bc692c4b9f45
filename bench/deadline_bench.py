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
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import polib
import requests

REPO = Path(__file__).resolve().parents[1]
LEVELS = ("beam", "greedy", "unguided", "tm-only")  # tm_guide.server.batching.DEGRADED_LEVELS


def pairs(catalogue: Path) -> list[tuple[str, str]]:
    entries = polib.mofile(str(catalogue))
    return [
        (e.msgid, e.msgstr)
        for e in entries
        if e.msgid and e.msgstr and not e.msgid_plural and 10 <= len(e.msgid) <= 300
    ]


class Server:
    def __init__(self, work: Path, env_extra: dict[str, str], tm: list[tuple[str, str]]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
        env.update(
            TM_GUIDE_DB=f"sqlite:///{work / 'tm.sqlite'}",
            TM_GUIDE_INDEX_DIR=str(work / "index"),
            TM_GUIDE_JOBS_DIR=str(work / "jobs"),
            PYTHONPATH=str(REPO),
            **env_extra,
        )
        command = [sys.executable, "-m", "tm_guide"]
        self.key = subprocess.run(
            [*command, "keys", "create", "bench", "--scope", "*:write"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[-1]
        if tm:
            tsv = work / "tm.tsv"
            one_line = [(s, t) for s, t in tm if not any(c in s + t for c in "\t\r\n")]
            tsv.write_text("".join(f"{s}\t{t}\n" for s, t in one_line), encoding="utf-8")
            subprocess.run(
                [*command, "import", "bench", str(tsv), "-q", "--create", "en", "de"],
                env=env,
                check=True,
                capture_output=True,
            )
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.log = open(work / "server.log", "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [*command, "serve", "--host", "127.0.0.1", "--port", str(port), "--threads", "40"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(self.base + "/ready", timeout=60).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.3)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()
        self.log.close()


def burst(server: Server, batches: list[list[str]]) -> list[tuple[float, str]]:
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

    all_pairs = pairs(args.catalogue)
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
            name: Server(Path(tmp) / name, extra, tm)
            for name, extra in variants.items()
            if (Path(tmp) / name).mkdir() is None
        }
        try:
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
