"""Translation-piece collection speed on a 50k-segment TM (paper: 0.52 s per sentence in Python).

Builds a memory in a fresh SQLite store, aligns it in one pass, then for test sentences measures
each stage of PieceBuilder.collect at M=10 and M=100, and the incremental alignment of newly added
segments. The memory is the LibreOffice help TM split (bench/corpus, when built) filled up to
--segments with pairs of the training corpus, queried with the help test split; without the corpus,
a synthetic UI-text TM with held-out queries.

    python bench/pieces_bench.py [--tm FILE --test FILE --pad FILE] [--segments 50000]
                                 [--queries 300] [--model BUNDLE] [--repair SPEC]

--repair takes a model card's `guided_repair` (`0.5:1:1` for the demo card): matches from that
similarity are repaired, and their words and names the match lacks are looked up in the memory
(tm_guide.pieces.lookups, names), as the server does; without it no match is repaired.

Targets: retrieval + collection <= 5 ms median at M=10, <= 25 ms at M=100.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tm_guide.pieces.align import AlignOptions, MemoryAligner  # noqa: E402
from tm_guide.pieces.builder import PieceBuilder, PieceOptions  # noqa: E402
from tm_guide.pieces.quality import read_gold  # noqa: E402
from tm_guide.pieces.repair import RepairOptions  # noqa: E402
from tm_guide.pieces.tokenizer import SentencePieceTokenizer  # noqa: E402
from tm_guide.records import SegmentRecord  # noqa: E402

GOLD = REPO / "tests" / "pieces" / "data" / "gold_en_de.tsv"
CORPUS = REPO / "bench" / "corpus" / "data"
STAGES = ("tokenize", "retrieval", "analysis", "edit_distance", "collection")


def synthetic_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """Unique pairs made of 2-4 short UI sentences each (from the gold set), with numbered names
    mixed in: repetitive like a real project TM, ~10-30 words per segment."""
    with open(GOLD, encoding="utf-8") as lines:
        units = [(" ".join(p.source), " ".join(p.target)) for p in read_gold(lines, str(GOLD))]
    rng = random.Random(seed)
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        chosen = rng.sample(units, rng.randint(2, 4))
        name = f"Item{rng.randint(1, 5000)}"
        source = " ".join(s for s, _ in chosen) + f" ({name})"
        if source in seen:
            continue
        seen.add(source)
        pairs.append((source, " ".join(t for _, t in chosen) + f" ({name})"))
    return pairs


def file_pairs(path: Path, count: int) -> list[tuple[str, str]]:
    from tm_guide.formats import open_records

    return [(r.source, r.target) for r in islice(open_records(path, "en", "de"), count)]


def tokenizer_for(args: argparse.Namespace, pairs: list[tuple[str, str]], work: Path):  # type: ignore[no-untyped-def]
    if args.model is not None:
        from tm_guide.model import Bundle

        return Bundle.load(args.model)
    import sentencepiece as spm

    text = work / "spm.txt"
    text.write_text("".join(f"{s}\n{t}\n" for s, t in pairs), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(work / "joint"),
        vocab_size=4000,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return SentencePieceTokenizer(work / "joint.model")


def exact_recall(store, memory, queries: list[str], m: int, index_dir: Path) -> float:  # type: ignore[no-untyped-def]
    """Share of the exact BM25 top-m (every query word scored, no pruning) that retrieval finds."""
    from tm_guide.index import IndexOptions, MemoryKey, WhooshIndex

    exact = WhooshIndex(
        index_dir, IndexOptions(max_query_terms=10**6, min_query_terms=10**6, posting_budget=10**12)
    )
    key = MemoryKey(memory.id, memory.uuid, memory.revision)
    shares = []
    for text in queries:
        wanted = {sid for sid, _ in exact.search(key, text, m)}
        if wanted:
            found = {hit.segment.id for hit in store.search([memory.id], text, limit=m)}
            shares.append(len(wanted & found) / len(wanted))
    exact.close()
    return statistics.mean(shares) if shares else 1.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tm", type=Path, help="TMX/TSV/PO file for the memory (default: synthetic)"
    )
    parser.add_argument("--test", type=Path, help="file of query pairs (default: held-out pairs)")
    parser.add_argument("--pad", type=Path, help="pairs to fill the memory up to --segments")
    parser.add_argument("--synthetic", action="store_true", help="ignore bench/corpus")
    parser.add_argument("--segments", type=int, default=50000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--model", type=Path, help="bundle whose tokenizer to use")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repair", default="off", help="a card's guided_repair, as 0.5:1:1")
    args = parser.parse_args()

    from tm_guide.store import Store

    if not args.synthetic and args.tm is None and (CORPUS / "en-de" / "tm.tsv").is_file():
        args.tm = CORPUS / "en-de" / "tm.tsv"
        args.test = args.test or CORPUS / "en-de" / "test.tsv"
        if args.pad is None and (CORPUS / "train" / "en-de.tsv").is_file():
            args.pad = CORPUS / "train" / "en-de.tsv"
    if args.tm:
        pairs = file_pairs(args.tm, args.segments + (0 if args.test else args.queries))
        if args.pad and len(pairs) < args.segments + (0 if args.test else args.queries):
            seen = {source for source, _ in pairs}
            wanted = args.segments + (0 if args.test else args.queries) - len(pairs)
            extra = [p for p in file_pairs(args.pad, 4 * wanted) if p[0] not in seen]
            args.padded = min(wanted, len(extra))
            pairs += random.Random(args.seed).sample(extra, args.padded)
    else:
        pairs = synthetic_pairs(args.segments + args.queries, args.seed)
    rng = random.Random(args.seed)
    rng.shuffle(pairs)
    if args.test:
        queries = [s for s, _ in file_pairs(args.test, args.queries)]
        tm_pairs = pairs[: args.segments]
    else:
        queries = [s for s, _ in pairs[: args.queries]]
        tm_pairs = pairs[args.queries : args.queries + args.segments]

    with tempfile.TemporaryDirectory(prefix="pieces-bench-") as tmp:
        work = Path(tmp)
        tokenizer = tokenizer_for(args, tm_pairs, work)
        store = Store.open(f"sqlite:///{work / 'tm.sqlite'}", work / "index")
        memory = store.create_memory("bench", "en", "de")
        started = time.perf_counter()
        store.import_records(memory, (SegmentRecord(s, t) for s, t in tm_pairs), progress=True)
        import_s = time.perf_counter() - started
        memory = store.get_memory(memory.id)
        aligner = MemoryAligner(store, tokenizer, AlignOptions())
        report = aligner.align_memory(memory, mode="full", progress=True)
        memory = store.get_memory(memory.id)

        builder = PieceBuilder(store, tokenizer, aligner=aligner)
        rows = []
        for m in (10, 100):
            options = PieceOptions(m=m, repair=RepairOptions.parse(args.repair))
            for text in queries[:20]:  # warm caches (index readers, SQLite pages)
                builder.collect(text, [memory.id], options)
            timings: dict[str, list[float]] = {stage: [] for stage in STAGES}
            timings["retrieval+pieces"] = []
            timings["total"] = []
            pieces = []
            timings["total (CPU time)"] = []
            for text in queries:
                cpu = time.process_time()
                result = builder.collect(text, [memory.id], options)
                timings["total (CPU time)"].append((time.process_time() - cpu) * 1000)
                for stage in STAGES:
                    timings[stage].append(result.timings[stage] * 1000)
                timings["retrieval+pieces"].append(
                    (result.timings["total"] - result.timings["tokenize"]) * 1000
                )
                timings["total"].append(result.timings["total"] * 1000)
                pieces.append(len(result.ngrams))
            rows.append((m, timings, statistics.median(pieces)))

        recall = {m: exact_recall(store, memory, queries, m, work / "index") for m in (10, 100)}

        # Incremental: a confirmed segment is added and aligned against the memory's priors.
        add_ms = []
        for source, target in pairs[: min(50, len(queries))]:
            segment = store.add_segment(memory, SegmentRecord(source, target + " ."))
            begun = time.perf_counter()
            aligner.align_segments([segment])
            add_ms.append((time.perf_counter() - begun) * 1000)
        store.close()

    print()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (1/5/15 min)")
    origin = "synthetic"
    if args.tm:
        padded = getattr(args, "padded", 0)
        origin = args.tm.name + (f" + {padded} pairs of {args.pad.name}" if padded else "")
    print(
        f"TM: {len(tm_pairs)} segments ({origin}), "
        f"tokenizer {tokenizer.tokenizer_id}, {len(queries)} queries"
    )
    print(
        f"import: {import_s:.1f} s; bulk alignment ({report.mode}): {report.seconds:.1f} s "
        f"({len(tm_pairs) / report.seconds:.0f} segments/s)"
    )
    print(
        f"incremental alignment of an added segment: median {statistics.median(add_ms):.1f} ms, "
        f"p95 {percentile(add_ms, 0.95):.1f} ms"
    )
    print()
    print(f"{'M':>4} {'stage':<18} {'median ms':>10} {'p95 ms':>10}")
    for m, timings, median_pieces in rows:
        for stage, values in timings.items():
            print(
                f"{m:>4} {stage:<18} {statistics.median(values):>10.2f} "
                f"{percentile(values, 0.95):>10.2f}"
            )
        print(f"{m:>4} {'(pieces/query)':<18} {median_pieces:>10.0f}")
        print(f"{m:>4} {'(recall@M vs exact)':<18} {recall[m]:>10.3f}")
    print()
    print(
        "retrieval+pieces = retrieval + analysis + edit_distance + collection "
        "(targets: median <= 5 ms at M=10, <= 25 ms at M=100)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
