"""tm_guide/index goes through private whoosh 2.7.4 attributes where the public API is much
slower (bench/whoosh_private_bench.py measures each path against its public counterpart):
bm25.py reads field lengths, deleted documents and posting blocks directly, whoosh_bulk.py writes
posting blocks and term infos itself.

These tests pin that. They fail, naming the attribute and the code that relies on it, as soon as
the installed whoosh is not the pinned version or any of those attributes is gone from real
objects of a real index; and they check that each private path means what the public API means
(the same lengths, deleted documents, postings and segment bytes), so a silent change of meaning
fails too.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import whoosh
from whoosh import index
from whoosh.system import pack_uint
from whoosh.writing import CLEAR

PINNED = "2.7.4"
FIELD = "source"
BM25 = "tm_guide/index/bm25.py"
BULK = "tm_guide/index/whoosh_bulk.py"


def loudly(what: str, user: str, why: str) -> str:
    return (
        f"whoosh {whoosh.versionstring()}: {what} is missing or changed, and {user} relies on it "
        f"({why}). The code there was written against whoosh {PINNED}: port it to this whoosh "
        f"(re-measure with bench/whoosh_private_bench.py) or pin whoosh=={PINNED} again."
    )


def documents() -> list[tuple[int, str]]:
    """Enough documents for several posting blocks of a common word (128 postings a block),
    with repeated words (frequencies above 1), long and short fields and non-ASCII words."""
    out = []
    for i in range(1, 401):
        text = f"Open the file number {i} " + "again " * (i % 7)
        if i % 5 == 0:
            text += "Grüße aus München, naïve café"
        if i % 97 == 0:
            text += " word" * 300  # a length whoosh's one-byte encoding rounds
        out.append((i, text))
    return out


DELETED = [3, 64, 129, 130, 257, 400]


@pytest.fixture(scope="module")
def bulk_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index written by the project's bulk writer, then some documents deleted (one commit
    that leaves the segment in place with a deletion list)."""
    from tm_guide.index import IndexDoc, MemoryKey, WhooshIndex

    root = tmp_path_factory.mktemp("bulk")
    tm = WhooshIndex(root)
    tm.rebuild(MemoryKey(1, "pin", 1), [IndexDoc(i, text) for i, text in documents()])
    tm.delete(MemoryKey(1, "pin", 2), 1, DELETED)
    tm.close()
    return root / "pin"


@pytest.fixture(scope="module")
def whoosh_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same documents written by whoosh's own writer, then the same ones deleted."""
    from tm_guide.index.whoosh_index import make_schema

    root = tmp_path_factory.mktemp("whoosh")
    ix = index.create_in(str(root), make_schema())
    writer = ix.writer(compound=False)
    for i, text in documents():
        writer.add_document(id=str(i), source=text)
    writer.commit()
    writer = ix.writer()
    for i in DELETED:
        writer.delete_by_term("id", str(i))
    writer.commit(merge=False)
    ix.close()
    return root


@contextmanager
def segment_reader(path: Path) -> Iterator[Any]:
    """The reader of the index's largest segment (the one holding the documents)."""
    ix = index.open_dir(str(path))
    searcher = ix.searcher()
    try:
        readers = [reader for reader, _ in searcher.reader().leaf_readers()]
        yield max(readers, key=lambda reader: reader.doc_count_all())
    finally:
        searcher.close()
        ix.close()


@pytest.fixture(params=["bulk", "whoosh"])
def any_dir(request: pytest.FixtureRequest) -> Path:
    path: Path = request.getfixturevalue(f"{request.param}_dir")
    return path


def test_whoosh_is_the_pinned_version() -> None:
    installed = importlib.metadata.version("whoosh")
    assert installed == PINNED and whoosh.versionstring() == PINNED, (
        f"whoosh {installed} is installed, but {BM25} and {BULK} use private attributes of "
        f"whoosh {PINNED} (see tests/store/test_whoosh_internals.py): check every one of them "
        "against the new version, re-measure with bench/whoosh_private_bench.py, then move the pin."
    )


IMPORTED = [
    ("whoosh.codec.whoosh3", "W3LeafMatcher", BM25, "its postings are read block by block"),
    ("whoosh.codec.whoosh3", "LENGTHS_COLUMN", BM25, "the field lengths column"),
    ("whoosh.matching.wrappers", "FilterMatcher", BM25, "unwrapped to skip per-posting filter"),
    ("whoosh.reading", "TermNotFound", BM25, "a word absent from a segment"),
    ("whoosh.util.numeric", "byte_to_length", BM25, "decoding field lengths"),
    ("whoosh.util.numeric", "length_to_byte", BULK, "encoding field lengths"),
    ("whoosh.codec.whoosh3", "WHOOSH3_HEADER_MAGIC", BULK, "the postings header it writes"),
    ("whoosh.codec.whoosh3", "W3TermInfo", BULK, "the term info layout it packs"),
    ("whoosh.compat", "dumps", BULK, "the pickles of posting blocks"),
    ("whoosh.system", "_INT_SIZE", BULK, "posting block offsets"),
    ("whoosh.system", "pack_int", BULK, "posting block lengths"),
    ("whoosh.system", "pack_long", BULK, "term info offsets"),
    ("whoosh.system", "pack_ushort", BULK, "term keys' field number"),
    ("whoosh.util.numlists", "delta_encode", BULK, "posting block ids"),
    ("whoosh.writing", "SegmentWriter", BULK, "the writer it extends"),
]


@pytest.mark.parametrize(
    ("module", "name", "user", "why"), IMPORTED, ids=[f"{m}.{n}" for m, n, _, _ in IMPORTED]
)
def test_imported_whoosh_names_exist(module: str, name: str, user: str, why: str) -> None:
    assert hasattr(importlib.import_module(module), name), loudly(f"{module}.{name}", user, why)


@pytest.fixture(scope="module")
def roots(bulk_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Real objects whose private attributes the project uses: a segment reader with deletions,
    its lengths column reader, a posting matcher spanning several blocks, and a live bulk writer
    with its field writer and codec. A root that cannot be had is the error that prevented it
    (its checks then fail with it)."""
    from whoosh.codec.whoosh3 import LENGTHS_COLUMN, W3TermInfo

    from tm_guide.index.whoosh_bulk import BulkSegmentWriter
    from tm_guide.index.whoosh_index import make_schema

    found: dict[str, Any] = {"W3TermInfo": W3TermInfo, "SegmentWriter": BulkSegmentWriter}

    def attempt(name: str, make: Any) -> Any:
        try:
            found[name] = make()
        except Exception as exc:  # reported by every check on this root
            found[name] = exc
        return found[name]

    with segment_reader(bulk_dir) as reader:
        found["reader"] = reader
        attempt("column", lambda: reader._perdoc._cached_reader(f"_{FIELD}_len", LENGTHS_COLUMN))
        attempt("matcher", lambda: getattr(reader.postings(FIELD, "file"), "child", None))
        ix = index.create_in(str(tmp_path_factory.mktemp("writer")), make_schema())
        writer = attempt("writer", lambda: BulkSegmentWriter(ix))
        attempt("fieldwriter", lambda: writer.fieldwriter)
        attempt("codec", lambda: found["fieldwriter"]._codec)
        try:
            yield found
        finally:
            if isinstance(writer, BulkSegmentWriter):
                writer.cancel()
            ix.close()


PRIVATE = [
    ("reader", "_perdoc", BM25, "Leaf: the segment's per-document reader"),
    ("reader", "_perdoc._cached_reader", BM25, "Leaf._lengths: the lengths column reader"),
    ("column", "_count", BM25, "Leaf._lengths: how many lengths the column holds"),
    ("column", "_dbfile.get", BM25, "Leaf._lengths: every length read as one block"),
    ("column", "_basepos", BM25, "Leaf._lengths: where the lengths start in the file"),
    ("matcher", "_read_ids", BM25, "_read_all: decode a block's docnums"),
    ("matcher", "_read_weights", BM25, "_read_all: decode a block's weights"),
    ("matcher", "_ids", BM25, "_read_all: a block's docnums"),
    ("matcher", "_weights", BM25, "_read_all: a block's weights"),
    ("matcher", "_lastblock", BM25, "_read_all: the end of the postings"),
    ("matcher", "_goto", BM25, "_read_all: move to the next block"),
    ("matcher", "_nextoffset", BM25, "_read_all: where the next block starts"),
    ("fieldwriter", "_codec", BULK, "write_field: the codec's block settings"),
    ("codec", "_blocklimit", BULK, "write_field: postings per block"),
    ("codec", "_compression", BULK, "write_field: zlib level of blocks"),
    ("fieldwriter", "_fieldid", BULK, "write_field: the field number of term keys"),
    ("fieldwriter", "_postfile.tell", BULK, "write_field: offsets of postings"),
    ("fieldwriter", "_postfile.write", BULK, "write_field: the postings it writes"),
    ("fieldwriter", "_tindex.add", BULK, "write_field: one term info per term"),
    ("W3TermInfo", "_struct.pack", BULK, "write_field: term infos packed directly"),
    ("SegmentWriter", "_flush_segment", BULK, "BulkSegmentWriter: its postings are flushed here"),
    ("writer", "_added", BULK, "BulkSegmentWriter: tells commit there are documents"),
    ("writer", "perdocwriter", BULK, "BulkSegmentWriter: stored fields and lengths"),
    ("writer", "fieldwriter", BULK, "BulkSegmentWriter: the segment's term and postings files"),
    ("writer", "docnum", BULK, "BulkSegmentWriter: the next document number"),
]


@pytest.mark.parametrize(
    ("root", "chain", "user", "why"), PRIVATE, ids=[f"{r}.{c}" for r, c, _, _ in PRIVATE]
)
def test_private_attribute_exists(
    roots: dict[str, Any], root: str, chain: str, user: str, why: str
) -> None:
    obj = roots[root]
    assert not isinstance(obj, Exception | None), loudly(
        f"{root} (reached through private attributes: {obj!r})", user, why
    )
    walked = type(obj).__name__
    for name in chain.split("."):
        walked += f".{name}"
        assert hasattr(obj, name), loudly(walked, user, why)
        obj = getattr(obj, name)


def test_private_shapes_are_whoosh_2_7_4s(roots: dict[str, Any]) -> None:
    """What the private paths assume beyond names: without these bm25 silently falls back to the
    slow per-posting loop, or whoosh_bulk writes term infos or blocks whoosh misreads."""
    from whoosh.codec.whoosh3 import W3LeafMatcher

    reader, column, matcher = roots["reader"], roots["column"], roots["matcher"]
    assert type(matcher) is W3LeafMatcher, loudly(
        f"reader.postings() giving a W3LeafMatcher (got {type(matcher).__name__})",
        BM25,
        "_read_all reads W3LeafMatcher blocks, else a slow per-posting loop",
    )
    assert roots["W3TermInfo"]._struct.format == "!BfIBBfII", loudly(
        "W3TermInfo._struct format !BfIBBfII", BULK, "write_field packs term infos in it"
    )
    assert isinstance(roots["codec"]._blocklimit, int), loudly(
        "codec._blocklimit as an int", BULK, "postings per block"
    )
    count = reader.doc_count_all()
    # Trailing documents without the field (the meta document) are not in the column.
    assert 0 < column._count <= count, loudly(
        "column._count <= doc_count_all()", BM25, "one length byte per document"
    )
    block = bytes(column._dbfile.get(column._basepos, column._count))
    assert len(block) == column._count, loudly(
        "lengths column as one byte per document", BM25, "Leaf._lengths reads them as one block"
    )
    assert set(reader.segment().deleted_docs()) == {
        d for d in range(count) if reader.is_deleted(d)
    }, loudly("segment().deleted_docs() as the deleted docnums", BM25, "Leaf's deleted mask")


def test_private_lengths_and_deletions_mean_the_public_ones(any_dir: Path) -> None:
    """Leaf's block read of field lengths equals doc_field_length (None for an empty field in
    whoosh 2.7.4, i.e. 0), and its deleted mask equals is_deleted, on a bulk-written segment
    and on one whoosh wrote itself."""
    from tm_guide.index.bm25 import Leaf

    with segment_reader(any_dir) as reader:
        count = reader.doc_count_all()
        leaf = Leaf(reader, 0, FIELD, {}, None)
        public = [reader.doc_field_length(d, FIELD) or 0 for d in range(count)]
        assert leaf.lengths.tolist() == public
        assert max(public) > 255  # a length the one-byte encoding rounds
        assert leaf.deleted is not None
        assert leaf.deleted.tolist() == [reader.is_deleted(d) for d in range(count)]
        # Leaf takes them from the public Segment.deleted_docs(), as fast as the private set.
        assert set(reader.segment().deleted_docs()) == set(np.flatnonzero(leaf.deleted).tolist())
        # The bulk index also deleted its old meta document (replaced by the new revision).
        assert int(leaf.deleted.sum()) >= len(DELETED)


def test_private_postings_mean_the_public_ones(any_dir: Path) -> None:
    """Leaf's block-wise postings read gives, for every word, the (docnum, frequency) pairs of
    the public matcher (deleted documents left out by both); 'file' spans several blocks."""
    from tm_guide.index.bm25 import Leaf

    with segment_reader(any_dir) as reader:
        leaf = Leaf(reader, 0, FIELD, {}, None)
        assert reader.doc_frequency(FIELD, "file") > 3 * 128
        words = [term.decode("utf-8") for term in reader.lexicon(FIELD)]
        assert "grüße" in words
        for word in words:
            docnums, weights = leaf._read_postings(word)
            matcher = reader.postings(FIELD, word)
            public = []
            while matcher.is_active():
                assert matcher.weight() == matcher.value_as("frequency")
                public.append((matcher.id(), matcher.value_as("frequency")))
                matcher.next()
            private = list(zip(docnums.tolist(), weights.tolist(), strict=True))
            assert private == public, word


def test_bulk_segment_is_what_whoosh_writes(bulk_dir: Path, whoosh_dir: Path) -> None:
    """The bulk-written segment reads, through the public API, as whoosh's own: the same
    postings, field lengths and term statistics."""

    def contents(path: Path) -> tuple[Any, ...]:
        with segment_reader(path) as reader:
            terms = {}
            for term in reader.lexicon(FIELD):
                info = reader.term_info(FIELD, term)
                matcher = reader.postings(FIELD, term)
                postings = []
                while matcher.is_active():
                    postings.append((matcher.id(), matcher.weight()))
                    matcher.next()
                stats = (info.doc_frequency(), info.weight(), info.max_weight())
                terms[term] = (stats, info.min_length(), info.max_length(), postings)
            lengths = [reader.doc_field_length(d, FIELD) for d in range(reader.doc_count_all())]
            return terms, lengths

    bulk_terms, bulk_lengths = contents(bulk_dir)
    whoosh_terms, whoosh_lengths = contents(whoosh_dir)
    # The bulk index holds one more document at its end, the meta document (no source).
    assert bulk_lengths[:-1] == whoosh_lengths and bulk_lengths[-1] is None
    assert bulk_terms == whoosh_terms


def test_bulk_blocks_are_the_codec_bytes(tmp_path: Path) -> None:
    """write_field (compress_min=0) writes byte for byte what whoosh's codec writes from the
    public FieldWriter calls (start_term, add, finish_term) for the same postings."""
    from tm_guide.index.base import IndexDoc
    from tm_guide.index.whoosh_bulk import BulkSegmentWriter
    from tm_guide.index.whoosh_index import META_ID, make_schema

    class PublicCalls(BulkSegmentWriter):
        def _flush_segment(self) -> None:
            self.perdocwriter.close()
            fw = self.fieldwriter
            self._ids.sort()
            fw.start_field("id", self.schema["id"])
            for term, docnum in self._ids:
                fw.start_term(term)
                fw.add(docnum, 1.0, b"", 0)
                fw.finish_term()
            fw.finish_field()
            fw.start_field(FIELD, self.schema[FIELD])
            for word in sorted(self._source_docs):
                fw.start_term(word.encode("utf-8"))
                freqs = self._source_freqs[word]
                for docnum, freq in zip(self._source_docs[word], freqs, strict=True):
                    fw.add(docnum, float(freq), pack_uint(freq), self._lengths[docnum])
                fw.finish_term()
            fw.finish_field()
            fw.close()

    def files(cls: type[BulkSegmentWriter], name: str) -> dict[str, bytes]:
        path = tmp_path / name
        path.mkdir()
        ix = index.create_in(str(path), make_schema())
        writer = cls(ix, compress_min=0, compound=False)
        writer.add_docs(IndexDoc(i, text) for i, text in documents())
        writer.add_meta(META_ID, 1)
        writer.commit(mergetype=CLEAR)
        ix.close()
        return {ext: next(path.glob(f"*.{ext}")).read_bytes() for ext in ("pst", "trm")}

    written = files(BulkSegmentWriter, "bulk")
    assert written == files(PublicCalls, "public"), loudly(
        "the codec's posting block or term info bytes",
        BULK,
        "write_field writes whoosh 2.7.4's W3PostingsWriter/W3TermInfo format itself",
    )
