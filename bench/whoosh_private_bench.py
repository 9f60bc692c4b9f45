r"""Whoosh's private paths that tm_guide/index uses, timed against the closest public API.

tm_guide/index/bm25.py reads a segment's field lengths as one block and a term's postings block
by block as arrays; tm_guide/index/whoosh_bulk.py writes posting blocks and term infos itself.
Each of these goes through private whoosh 2.7.4 attributes. Deleted documents are timed too:
there the public Segment.deleted_docs() is as fast as the private set, so bm25.py uses it. This
script builds a real index of synthetic TM sentences (store_bench's Zipf corpus) with the
project's own code (WhooshIndex.rebuild: the bulk writer; WhooshIndex.delete: 1% deleted), and
times, in the same run and on the same segment, each private path against the public API doing
the same job. Each time is the median of `--repeats` runs (`--write-repeats` for writing). Every
pair is checked to give the same result before it is timed.

Writing is timed on a smaller corpus (`--write-docs`, default 20,000): whoosh's own
`writer.add_document` (the sorting pool), the bulk writer with whoosh's public codec FieldWriter
(`start_term`/`add`/`finish_term`, one call per posting), and the bulk writer as shipped
(`write_field`, the private block writer).

    nice python bench/whoosh_private_bench.py --docs 100000
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import whoosh  # noqa: E402
from store_bench import Corpus  # noqa: E402
from whoosh import index  # noqa: E402
from whoosh.system import pack_uint  # noqa: E402
from whoosh.writing import CLEAR  # noqa: E402

from tm_guide.index import IndexDoc, MemoryKey, WhooshIndex  # noqa: E402
from tm_guide.index.bm25 import Leaf, read_postings_public  # noqa: E402
from tm_guide.index.whoosh_bulk import BulkSegmentWriter  # noqa: E402
from tm_guide.index.whoosh_index import META_ID, make_schema  # noqa: E402

FIELD = "source"


class PublicFieldWriterBulk(BulkSegmentWriter):
    """The bulk writer with its postings handed to whoosh's codec through the public FieldWriter
    calls (one `add` per posting) instead of `write_field`: isolates what the private block
    writer buys. Whoosh's own writer makes the same calls (FieldWriter.add_postings)."""

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        fw = self.fieldwriter
        schema = self.schema
        self._ids.sort()
        fw.start_field("id", schema["id"])
        for term, docnum in self._ids:
            fw.start_term(term)
            fw.add(docnum, 1.0, b"", 0)
            fw.finish_term()
        fw.finish_field()
        if self._source_docs:
            fw.start_field(FIELD, schema[FIELD])
            lengths = self._lengths
            add = fw.add
            for word in sorted(self._source_docs):
                fw.start_term(word.encode("utf-8"))
                for docnum, freq in zip(
                    self._source_docs[word], self._source_freqs[word], strict=True
                ):
                    add(docnum, float(freq), pack_uint(freq), lengths[docnum])
                fw.finish_term()
            fw.finish_field()
        fw.close()


def median_ms(job: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def docs_of(count: int) -> list[IndexDoc]:
    return [IndexDoc(i + 1, source) for i, (source, _) in enumerate(Corpus().sentences(count))]


# ---- (a) field lengths of a segment


def lengths_private(reader: Any, count: int) -> np.ndarray:
    return Leaf._lengths(reader, FIELD, count)


def lengths_public(reader: Any, count: int) -> np.ndarray:
    length = reader.doc_field_length  # None (not 0) for an empty field in whoosh 2.7.4
    return np.array([length(d, FIELD) or 0 for d in range(count)], dtype=np.float64)


# ---- (b) deleted documents


def deleted_private(reader: Any, count: int) -> np.ndarray:
    mask = np.zeros(count, dtype=bool)
    gone = np.fromiter(reader._perdoc.deleted_docs(), dtype=np.int64)
    mask[gone[gone < count]] = True
    return mask


def deleted_public_segment(reader: Any, count: int) -> np.ndarray:
    """The same set through public calls: SegmentReader.segment() and Segment.deleted_docs()."""
    mask = np.zeros(count, dtype=bool)
    gone = np.fromiter(reader.segment().deleted_docs(), dtype=np.int64)
    mask[gone[gone < count]] = True
    return mask


def deleted_public_is_deleted(reader: Any, count: int) -> np.ndarray:
    is_deleted = reader.is_deleted
    return np.fromiter((is_deleted(d) for d in range(count)), dtype=bool, count=count)


def deleted_public_all_doc_ids(reader: Any, count: int) -> np.ndarray:
    mask = np.ones(count, dtype=bool)
    mask[np.fromiter(reader.all_doc_ids(), dtype=np.int64)] = False
    return mask


# ---- (c) a term's postings as arrays (deleted documents left out)


def postings_private(leaf: Leaf, word: str) -> tuple[np.ndarray, np.ndarray]:
    return leaf._read_postings(word)


def postings_public_loop(reader: Any, word: str) -> tuple[np.ndarray, np.ndarray]:
    return read_postings_public(reader.postings(FIELD, word))


def postings_public_items(reader: Any, word: str) -> tuple[np.ndarray, np.ndarray]:
    pairs = list(reader.postings(FIELD, word).items_as("frequency"))
    return (
        np.fromiter((d for d, _ in pairs), dtype=np.int64, count=len(pairs)),
        np.fromiter((f for _, f in pairs), dtype=np.float64, count=len(pairs)),
    )


# ---- (d) writing a segment


def write_add_document(path: Path, docs: list[IndexDoc]) -> None:
    ix = index.create_in(str(path), make_schema())
    writer = ix.writer(compound=False)
    for doc in docs:
        writer.add_document(id=str(doc.segment_id), source=doc.source)
    writer.add_document(id=META_ID, revision=1)
    writer.commit(mergetype=CLEAR)
    ix.close()


def write_bulk(path: Path, docs: list[IndexDoc], cls: type[BulkSegmentWriter]) -> None:
    ix = index.create_in(str(path), make_schema())
    writer = cls(ix)
    writer.add_docs(docs)
    writer.add_meta(META_ID, 1)
    writer.commit(mergetype=CLEAR)
    ix.close()


def contents_of(path: Path) -> tuple[dict[bytes, list[tuple[int, float]]], list[float]]:
    """Every source term's (docnum, weight) postings and every field length, read through the
    public API: what a writer must get right."""
    ix = index.open_dir(str(path))
    with ix.searcher() as searcher:
        reader = searcher.reader()
        postings = {term: postings_pairs(reader, term) for term in reader.lexicon(FIELD)}
        lengths = lengths_public(reader, reader.doc_count_all()).tolist()
    ix.close()
    return postings, lengths


def postings_pairs(reader: Any, term: bytes) -> list[tuple[int, float]]:
    matcher = reader.postings(FIELD, term)
    pairs = []
    while matcher.is_active():
        pairs.append((matcher.id(), matcher.weight()))
        matcher.next()
    return pairs


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or platform.machine()
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def same(a: tuple[np.ndarray, ...] | np.ndarray, b: tuple[np.ndarray, ...] | np.ndarray) -> None:
    pairs = zip(a, b, strict=True) if isinstance(a, tuple) else [(a, b)]
    for x, y in pairs:
        if not np.array_equal(x, y):
            raise SystemExit("private and public paths disagree; not timing them")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=100_000, help="documents of the read index")
    parser.add_argument("--write-docs", type=int, default=20_000, help="documents written")
    parser.add_argument("--repeats", type=int, default=5, help="runs per read timing")
    parser.add_argument("--write-repeats", type=int, default=3, help="runs per write timing")
    parser.add_argument("--mid-rank", type=int, default=100, help="vocabulary rank, 2nd term")
    args = parser.parse_args(argv)

    rows: list[tuple[str, float, float]] = []
    words = Corpus().words(random.Random(Corpus().seed), "")
    with tempfile.TemporaryDirectory(prefix="tmg-whoosh-private-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        docs = docs_of(args.docs)
        tm = WhooshIndex(root / "read")
        memory = MemoryKey(1, "bench", 1)
        tm.rebuild(memory, docs)
        gone = [doc.segment_id for doc in docs[::100]]  # 1% deleted, through the project
        tm.delete(MemoryKey(1, "bench", 2), 1, gone)
        tm.close()
        built_s = time.perf_counter() - started

        ix = index.open_dir(str(root / "read" / "bench"))
        searcher = ix.searcher()
        leaves = list(searcher.reader().leaf_readers())
        reader = max((r for r, _ in leaves), key=lambda r: r.doc_count_all())
        count = reader.doc_count_all()
        assert reader.has_deletions()

        same(lengths_private(reader, count), lengths_public(reader, count))
        rows.append(
            (
                f"(a) field lengths of a {count:,}-doc segment (block read vs doc_field_length)",
                median_ms(lambda: lengths_private(reader, count), args.repeats),
                median_ms(lambda: lengths_public(reader, count), args.repeats),
            )
        )
        private_deleted = median_ms(lambda: deleted_private(reader, count), args.repeats)
        same(deleted_private(reader, count), deleted_public_is_deleted(reader, count))
        same(deleted_private(reader, count), deleted_public_all_doc_ids(reader, count))
        same(deleted_private(reader, count), deleted_public_segment(reader, count))
        ndeleted = int(deleted_private(reader, count).sum())
        rows.append(
            (
                f"(b) {ndeleted:,} deleted docs as a mask (deleted_docs vs is_deleted loop)",
                private_deleted,
                median_ms(lambda: deleted_public_is_deleted(reader, count), args.repeats),
            )
        )
        rows.append(
            (
                "(b) same, public all_doc_ids complement",
                private_deleted,
                median_ms(lambda: deleted_public_all_doc_ids(reader, count), args.repeats),
            )
        )
        rows.append(
            (
                "(b) same, public reader.segment().deleted_docs()",
                private_deleted,
                median_ms(lambda: deleted_public_segment(reader, count), args.repeats),
            )
        )
        leaf = Leaf(reader, 0, FIELD, {}, None)
        for word in (words[0], words[args.mid_rank]):
            found = postings_private(leaf, word)
            same(found, postings_public_loop(reader, word))
            same(found, postings_public_items(reader, word))
            private = median_ms(lambda w=word: postings_private(leaf, w), args.repeats)
            n = found[0].size
            rows.append(
                (
                    f"(c) postings of a term, {n:,} postings (blocks vs id()/weight() loop)",
                    private,
                    median_ms(lambda w=word: postings_public_loop(reader, w), args.repeats),
                )
            )
            rows.append(
                (
                    f"(c) same {n:,} postings, public items_as('frequency')",
                    private,
                    median_ms(lambda w=word: postings_public_items(reader, w), args.repeats),
                )
            )
        searcher.close()
        ix.close()

        write_docs = docs[: args.write_docs]
        serial = iter(range(10**6))

        def fresh() -> Path:
            path = root / f"write{next(serial)}"
            path.mkdir()
            return path

        check = [fresh(), fresh(), fresh()]
        write_add_document(check[0], write_docs)
        write_bulk(check[1], write_docs, PublicFieldWriterBulk)
        write_bulk(check[2], write_docs, BulkSegmentWriter)
        reference = contents_of(check[0])
        if contents_of(check[1]) != reference or contents_of(check[2]) != reference:
            raise SystemExit("the writers disagree on the postings; not timing them")

        private_write = median_ms(
            lambda: write_bulk(fresh(), write_docs, BulkSegmentWriter), args.write_repeats
        )
        nw = len(write_docs)
        rows.append(
            (
                f"(d) write {nw:,} docs: bulk write_field vs public codec FieldWriter.add",
                private_write,
                median_ms(
                    lambda: write_bulk(fresh(), write_docs, PublicFieldWriterBulk),
                    args.write_repeats,
                ),
            )
        )
        rows.append(
            (
                f"(d) write {nw:,} docs: bulk write_field vs whoosh writer.add_document",
                private_write,
                median_ms(lambda: write_add_document(fresh(), write_docs), args.write_repeats),
            )
        )

    command = " ".join(["python", *map(shlex.quote, sys.argv)])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, load average {load}")
    print(f"python {platform.python_version()}, whoosh {whoosh.versionstring()}")
    print(f"command: {command}")
    print(f"read index: {args.docs:,} docs built in {built_s:.1f} s (WhooshIndex.rebuild/delete)")
    print(f"medians of {args.repeats} (reads) and {args.write_repeats} (writes) runs\n")
    print("| what | private ms | public ms | public/private |")
    print("|---|---:|---:|---:|")
    for what, private, public in rows:
        print(f"| {what} | {private:.3f} | {public:.3f} | {public / private:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
