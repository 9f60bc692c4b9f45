"""BM25 over a whoosh searcher's postings, scored with numpy.

Whoosh scores a query through a tree of matcher objects, one Python call per posting and term;
on a TM that is most of a lookup's time. Here each chosen term's postings are read block by block
into arrays and scored in one vectorised step with the same formula, statistics and encoded field
lengths as whoosh's BM25F, so the ranking is the same. Per-segment arrays (field lengths, deleted
documents, docnum -> segment id) are cached: whoosh segments never change their documents.
For the same reason each segment's decoded postings are kept (least recently used first out,
within a budget of postings): decoding whoosh's blocks in Python is most of a lookup's time, and
a CAT project's sentences keep asking for the same words.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from whoosh.codec.whoosh3 import W3LeafMatcher
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import TermNotFound
from whoosh.util.numeric import byte_to_length, length_to_byte

B = 0.75
K1 = 1.2
_LENGTH_OF_BYTE = np.array([byte_to_length(i) for i in range(256)], dtype=np.float64)


def encoded_length(length: int) -> float:
    """A field length as whoosh stores it (one byte, lossy), so new documents score alike."""
    return float(byte_to_length(length_to_byte(length)))


def idf(doc_count: int, doc_frequency: int) -> float:
    """Whoosh's idf: log(N / (df + 1)) + 1 (N counts every document, deleted ones too)."""
    return math.log(doc_count / (doc_frequency + 1)) + 1


def bm25(term_idf: float, tf: Any, length: Any, avg_length: float) -> Any:
    """Whoosh's BM25F term score (B = 0.75, K1 = 1.2); works on floats and arrays."""
    return term_idf * (tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * length / avg_length))


@dataclass(frozen=True)
class Stats:
    """Collection statistics of one searcher generation (global, like whoosh's own)."""

    doc_count: int
    avg_length: float


class PostingsCache:
    """Decoded postings of (leaf, word), least recently used dropped first, holding at most
    `budget` postings (16 bytes each) in all. An entry counts as at least one posting, so that
    the many words absent from a segment (empty postings) are bounded too."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        self._entries: OrderedDict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def get(self, key: tuple[int, str]) -> tuple[np.ndarray, np.ndarray] | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    @staticmethod
    def _cost(postings: tuple[np.ndarray, np.ndarray]) -> int:
        return max(1, int(postings[0].size))

    def put(self, key: tuple[int, str], postings: tuple[np.ndarray, np.ndarray]) -> None:
        cost = self._cost(postings)
        if cost > self.budget // 4 or key in self._entries:
            return
        self._entries[key] = postings
        self.size += cost
        while self.size > self.budget:
            _, dropped = self._entries.popitem(last=False)
            self.size -= self._cost(dropped)

    def retain(self, serials: set[int]) -> None:
        """Drop the entries of leaves that are gone (a merged or rewritten segment)."""
        for key in [k for k in self._entries if k[0] not in serials]:
            self.size -= self._cost(self._entries.pop(key))

    def clear(self) -> None:
        self._entries.clear()
        self.size = 0


_leaf_serials = itertools.count()


class Leaf:
    """One whoosh segment reader with its field lengths and deleted-document mask."""

    def __init__(
        self,
        reader: Any,
        offset: int,
        field: str,
        ids: dict[int, str],
        cache: PostingsCache | None = None,
    ) -> None:
        self.reader = reader
        self.serial = next(_leaf_serials)  # never reused, unlike id(): the cache's key
        self.cache = cache
        self.offset = offset
        self.field = field
        self.ids = ids  # docnum -> stored id, filled on demand, shared across generations
        count = reader.doc_count_all()
        self.lengths = self._lengths(reader, field, count)
        self.deleted: np.ndarray | None = None
        if reader.has_deletions():
            self.deleted = np.zeros(count, dtype=bool)
            gone = np.fromiter(reader.segment().deleted_docs(), dtype=np.int64)
            self.deleted[gone[gone < count]] = True

    @staticmethod
    def _lengths(reader: Any, field: str, count: int) -> np.ndarray:
        """Every document's field length, read as one block through whoosh 2.7.4's lengths
        column (private: `_perdoc._cached_reader`, `_count`, `_dbfile`, `_basepos`). whoosh has
        no public reader for the column; its per-document `doc_field_length` is 525x slower
        (65 ms against 0.12 ms for a 100k-document segment, each time a segment is opened;
        bench/whoosh_private_bench.py). tests/store/test_whoosh_internals.py pins the names and
        that both give the same lengths."""
        encoded = np.zeros(count, dtype=np.uint8)
        column = reader._perdoc._cached_reader(f"_{field}_len", _lengths_column())
        if column is not None:
            stored = min(column._count, count)
            raw = column._dbfile.get(column._basepos, stored)
            encoded[:stored] = np.frombuffer(bytes(raw), dtype=np.uint8, count=stored)
        return _LENGTH_OF_BYTE[encoded]

    def postings(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        """(docnums, term frequencies) of a word in this segment, deleted documents left out."""
        if self.cache is None:
            return self._read_postings(word)
        key = (self.serial, word)
        found = self.cache.get(key)
        if found is None:
            found = self._read_postings(word)
            for array in found:
                array.flags.writeable = False  # shared by every later lookup
            self.cache.put(key, found)
        return found

    def _read_postings(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        try:
            matcher = self.reader.postings(self.field, word)
        except TermNotFound:
            return _EMPTY_IDS, _EMPTY_WEIGHTS
        if isinstance(matcher, FilterMatcher):
            matcher = matcher.child
        docnums, weights = _read_all(matcher)
        if self.deleted is not None and docnums.size:
            keep = ~self.deleted[docnums]
            docnums, weights = docnums[keep], weights[keep]
        return docnums, weights

    def stored_id(self, docnum: int) -> str:
        found = self.ids.get(docnum)
        if found is None:
            found = str(self.reader.stored_fields(docnum)["id"])
            self.ids[docnum] = found
        return found


_EMPTY_IDS = np.zeros(0, dtype=np.int64)
_EMPTY_WEIGHTS = np.zeros(0, dtype=np.float64)


def _lengths_column() -> Any:
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN

    return LENGTHS_COLUMN


def read_postings_public(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every posting of a matcher through whoosh's public `id()/weight()/next()` loop: the
    fallback for a matcher of another format, and the benchmark's reference."""
    ids, weights = [], []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return np.array(ids, dtype=np.int64), np.array(weights, dtype=np.float64)


def _read_all(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every posting of a leaf matcher; whole blocks at a time for whoosh 2.7's own format
    (private: `_read_ids`, `_read_weights`, `_ids`, `_weights`, `_lastblock`, `_goto`,
    `_nextoffset`). whoosh has no public block read; its `id()/weight()/next()` loop is 3-4x
    slower and `items_as("frequency")` 5-7x (44 ms against 11 ms for 77k postings;
    bench/whoosh_private_bench.py). tests/store/test_whoosh_internals.py pins the names and
    that both give the same postings."""
    if not isinstance(matcher, W3LeafMatcher):
        return read_postings_public(matcher)
    id_blocks, weight_blocks = [], []
    while True:
        matcher._read_ids()
        matcher._read_weights()
        id_blocks.append(np.asarray(matcher._ids, dtype=np.int64))
        weight_blocks.append(np.asarray(matcher._weights, dtype=np.float64))
        if matcher._lastblock:
            break
        matcher._goto(matcher._nextoffset)
    if len(id_blocks) == 1:
        return id_blocks[0], weight_blocks[0]
    return np.concatenate(id_blocks), np.concatenate(weight_blocks)


class LeafCache:
    """The leaves of the current searcher; rebuilt when the searcher is replaced."""

    def __init__(self, field: str, postings_budget: int = 0) -> None:
        self.field = field
        self.postings = PostingsCache(postings_budget) if postings_budget > 0 else None
        self._searcher: Any = None
        self._leaves: list[Leaf] = []
        self._stats = Stats(0, 1.0)
        self._ids: dict[Any, dict[int, str]] = {}

    def leaves(self, searcher: Any) -> tuple[list[Leaf], Stats]:
        if searcher is not self._searcher:
            readers = list(searcher.reader().leaf_readers())
            # A refreshed searcher keeps the reader objects of unchanged segments.
            known = {(id(leaf.reader), leaf.offset): leaf for leaf in self._leaves}
            ids = {}
            leaves = []
            for reader, offset in readers:
                segment = reader.segment() if hasattr(reader, "segment") else None
                key = segment.segment_id() if segment is not None else id(reader)
                ids[key] = self._ids.get(key, {})
                leaf = known.get((id(reader), offset))
                if leaf is None or leaf.reader is not reader:
                    leaf = Leaf(reader, offset, self.field, ids[key], self.postings)
                leaves.append(leaf)
            self._ids = ids
            self._leaves = leaves
            if self.postings is not None:
                self.postings.retain({leaf.serial for leaf in leaves})
            self._stats = Stats(
                searcher.doc_count_all(), searcher.avg_field_length(self.field) or 1.0
            )
            self._searcher = searcher
        return self._leaves, self._stats

    def clear(self) -> None:
        self._searcher = None
        self._leaves = []
        if self.postings is not None:
            self.postings.clear()


def top_documents(
    leaves: list[Leaf], stats: Stats, frequency: dict[str, int], words: list[str], limit: int
) -> list[tuple[float, Leaf, int]]:
    """(score, leaf, docnum) of the `limit` best documents matching any of `words`, best first
    (ties by docnum, as whoosh orders them)."""
    docnum_parts, score_parts, leaf_parts = [], [], []
    for number, leaf in enumerate(leaves):
        for word in words:
            docnums, tf = leaf.postings(word)
            if docnums.size:
                term_idf = idf(stats.doc_count, frequency[word])
                docnum_parts.append(docnums + leaf.offset)
                score_parts.append(bm25(term_idf, tf, leaf.lengths[docnums], stats.avg_length))
                leaf_parts.append(np.full(docnums.size, number, dtype=np.int64))
    if not docnum_parts or limit <= 0:
        return []
    unique, first, inverse = np.unique(
        np.concatenate(docnum_parts), return_index=True, return_inverse=True
    )
    totals = np.bincount(inverse, weights=np.concatenate(score_parts))
    owner = np.concatenate(leaf_parts)[first]
    if unique.size > limit:
        # Everything scoring at least the limit-th best score, so ties are cut by docnum.
        bound = np.partition(totals, unique.size - limit)[unique.size - limit]
        keep = totals >= bound
        unique, totals, owner = unique[keep], totals[keep], owner[keep]
    order = np.lexsort((unique, -totals))[:limit]
    return [
        (score, leaves[number], docnum - leaves[number].offset)
        for score, number, docnum in zip(
            totals[order].tolist(), owner[order].tolist(), unique[order].tolist(), strict=True
        )
    ]
