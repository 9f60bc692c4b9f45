r"""Single-segment adds into a large memory through the library, one at a time: mean, p99 and max
per add, which include the buffered index commits (one per `buffer_docs` adds) that an add
triggers now and then. A TM server's writes at scale pay exactly this per confirmed segment.

    python bench/add_bench.py --sizes 20000,100000 --adds 1500
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store_bench import Corpus, percentile  # noqa: E402

from tm_guide.records import SegmentRecord  # noqa: E402
from tm_guide.store import Store  # noqa: E402


def run(size: int, adds: int) -> tuple[float, float, float]:
    corpus = Corpus()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="tmg-adds-") as tmp:
        work = Path(tmp)
        with Store.open(f"sqlite:///{work / 'tm.sqlite'}", work / "index") as store:
            memory = store.create_memory("bench", "en", "de")
            store.import_records(memory, (SegmentRecord(s, t) for s, t in corpus.sentences(size)))
            words = [f"w{n}" for n in range(5000)]
            times = []
            for i in range(adds):
                source = " ".join(rng.choice(words) for _ in range(12)) + f" {i}."
                started = time.perf_counter()
                store.add_segment(memory, SegmentRecord(source, f"Übersetzung {i}."))
                times.append(time.perf_counter() - started)
    return (
        statistics.fmean(times) * 1000,
        percentile(times, 0.99) * 1000,
        max(times) * 1000,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--adds", type=int, default=1500)
    args = parser.parse_args(argv)
    print("SQLite file, one thread; ms per add")
    print("| segments | adds | mean ms | p99 ms | max ms |")
    print("|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        mean, p99, worst = run(size, args.adds)
        print(f"| {size:,} | {args.adds} | {mean:.2f} | {p99:.1f} | {worst:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
