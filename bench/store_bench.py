"""Store benchmark: import throughput and top-10 retrieval latency on a synthetic TM.

Sentences are drawn from a seeded Zipf-distributed vocabulary (like real text: a few very common
words, a long tail of rare ones). Queries are TM sentences with one to three words replaced, the
typical fuzzy-match situation.

    python bench/store_bench.py --sizes 100000 --backends sqlite,postgresql
    python bench/store_bench.py --sizes 1000000 --backends sqlite --queries 300
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tm_guide.index import IndexOptions  # noqa: E402
from tm_guide.records import SegmentRecord  # noqa: E402
from tm_guide.store import Store, StoreOptions  # noqa: E402

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


@dataclass(frozen=True)
class Corpus:
    """A seeded synthetic language: Zipf word frequencies, sentence lengths 4 to 30."""

    seed: int = 7
    vocabulary: int = 60000
    zipf_s: float = 1.07

    def words(self, rng: random.Random, prefix: str) -> list[str]:
        syllables = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"]
        seen: set[str] = set()
        out: list[str] = []
        while len(out) < self.vocabulary:
            word = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
            if word not in seen:
                seen.add(word)
                out.append(prefix + word)
        return out

    def sentences(self, count: int) -> Iterator[tuple[str, str]]:
        rng = random.Random(self.seed)
        source_words = self.words(rng, "")
        target_words = self.words(rng, "")
        weights = [1.0 / (rank + 1) ** self.zipf_s for rank in range(self.vocabulary)]
        cumulative = list(_accumulate(weights))
        for _ in range(count):
            length = min(30, max(4, int(rng.gauss(14, 6))))
            source = rng.choices(source_words, cum_weights=cumulative, k=length)
            target = rng.choices(target_words, cum_weights=cumulative, k=length)
            yield " ".join(source).capitalize() + ".", " ".join(target).capitalize() + "."


def _accumulate(values: list[float]) -> Iterator[float]:
    total = 0.0
    for value in values:
        total += value
        yield total


def perturbed_queries(corpus: Corpus, size: int, count: int, seed: int) -> list[tuple[str, str]]:
    """(query, original) pairs: TM sentences with 1-3 words replaced by other words."""
    rng = random.Random(seed)
    wanted = sorted(rng.sample(range(size), min(count, size)))
    picked: list[str] = []
    position = 0
    for number, (source, _) in enumerate(corpus.sentences(size)):
        if position < len(wanted) and number == wanted[position]:
            picked.append(source)
            position += 1
    vocabulary = corpus.words(random.Random(corpus.seed), "")
    queries = []
    for sentence in picked:
        words = sentence.rstrip(".").split()
        for _ in range(rng.randint(1, 3)):
            words[rng.randrange(len(words))] = rng.choice(vocabulary[:5000])
        queries.append((" ".join(words) + ".", sentence))
    rng.shuffle(queries)
    return queries


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


@dataclass
class Result:
    backend: str
    size: int
    import_rate: float
    import_cpu_rate: float
    db_rate: float
    rebuild_rate: float | None
    add_ms: float
    median_ms: float
    p95_ms: float
    cpu_median_ms: float
    cpu_p95_ms: float
    recall: float


def run_one(
    backend: str, size: int, args: argparse.Namespace, workdir: Path, corpus: Corpus
) -> Result:
    index_dir = workdir / f"{backend}-{size}-index"
    database = None
    if backend == "sqlite":
        url = f"sqlite:///{workdir / f'{backend}-{size}.sqlite'}"
    else:
        import psycopg

        database = f"tmg_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        url = PG_URL.format(name=database)
    options = StoreOptions(
        index=IndexOptions(max_query_terms=args.max_query_terms, posting_budget=args.posting_budget)
    )
    try:
        with Store.open(url, index_dir, options) as store:
            memory = store.create_memory("bench", "xx", "yy")
            records = (SegmentRecord(s, t) for s, t in corpus.sentences(size))
            start, cpu_start = time.perf_counter(), time.process_time()
            report = store.import_records(memory, records, progress=args.progress)
            import_rate = size / (time.perf_counter() - start)
            import_cpu_rate = size / (time.process_time() - cpu_start)
            db_rate = size / report.db_seconds
            memory = store.get_memory("bench")
            assert memory.segment_count == report.added, (memory.segment_count, report)

            rebuild_rate = None
            if args.rebuild:
                start = time.perf_counter()
                store.rebuild_index(memory, progress=args.progress)
                rebuild_rate = size / (time.perf_counter() - start)

            queries = perturbed_queries(corpus, size, args.queries, seed=size)
            for text, _ in queries[:10]:  # warm the caches as a long-running server would
                store.search([memory.id], text, limit=10)
            latencies, cpu = [], []
            found = 0
            for text, original in queries:
                start, cpu_start = time.perf_counter(), time.process_time()
                hits = store.search([memory.id], text, limit=10)
                latencies.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - cpu_start) * 1000)
                found += any(hit.segment.source == original for hit in hits)

            adds = []
            for i, (source, target) in enumerate(corpus.sentences(args.adds)):
                start = time.perf_counter()
                store.add_segment(memory, SegmentRecord(f"{source} {i} new", target))
                adds.append((time.perf_counter() - start) * 1000)
            return Result(
                backend, size, import_rate, import_cpu_rate, db_rate, rebuild_rate,
                statistics.median(adds), statistics.median(latencies),
                percentile(latencies, 0.95), statistics.median(cpu), percentile(cpu, 0.95),
                found / len(queries),
            )  # fmt: skip
    finally:
        shutil.rmtree(index_dir, ignore_errors=True)
        if database:
            import psycopg

            with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated TM sizes")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--queries", type=int, default=300, help="timed top-10 lookups")
    parser.add_argument("--adds", type=int, default=50, help="timed single-segment adds")
    parser.add_argument("--max-query-terms", type=int, default=IndexOptions().max_query_terms)
    parser.add_argument("--posting-budget", type=int, default=IndexOptions().posting_budget)
    parser.add_argument("--rebuild", action="store_true", help="also time a full index rebuild")
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()

    corpus = Corpus()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tmg-store-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            for backend in args.backends.split(","):
                results.append(run_one(backend.strip(), size, args, workdir, corpus))
                print(f"done: {backend} {size}", file=sys.stderr, flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    print(f"\nload average during the run: {os.getloadavg()} on {os.cpu_count()} CPUs")
    print(
        "'per CPU-s' and 'CPU ms' count this process's CPU time only (not PostgreSQL's): "
        "what the code costs when the machine is shared"
    )
    print(
        f"max query terms {args.max_query_terms}, posting budget {args.posting_budget}; "
        f"{args.queries} queries; recall = original sentence among the top 10"
    )
    columns = [
        "backend", "segments", "import seg/s (DB+index)", "per CPU-s", "DB part seg/s",
        "index rebuild seg/s", "add ms (median)", "top-10 median ms", "top-10 p95 ms",
        "CPU median ms", "CPU p95 ms", "recall@10",
    ]  # fmt: skip
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("-" * (len(c) + 2) for c in columns) + "|")
    for r in results:
        cells = [
            r.backend, f"{r.size:,}", f"{r.import_rate:,.0f}", f"{r.import_cpu_rate:,.0f}",
            f"{r.db_rate:,.0f}", f"{r.rebuild_rate:,.0f}" if r.rebuild_rate else "-",
            f"{r.add_ms:.1f}", f"{r.median_ms:.1f}", f"{r.p95_ms:.1f}",
            f"{r.cpu_median_ms:.1f}", f"{r.cpu_p95_ms:.1f}", f"{r.recall:.2f}",
        ]  # fmt: skip
        print(
            "| " + " | ".join(c.rjust(len(h)) for c, h in zip(cells, columns, strict=True)) + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
