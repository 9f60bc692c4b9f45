"""Bulk writing of a memory's whoosh index: many documents into one new segment, fast.

whoosh's general writer sends every posting through a sorting pool (tuples, run files) and, when
the segment is written, reads each document's field length back from the file it has just
written. For the fixed schema of a source index (id, source, revision) this writer keeps the
postings in memory, grouped by term as they arrive, and hands them to whoosh's codec in sorted
order with the lengths it already knows. The segment it writes is an ordinary whoosh segment:
the same terms, frequencies, field lengths and stored fields as `add_document` would write.

It reaches into whoosh 2.7.4 (pinned in pyproject.toml) where whoosh has no public way: it
overrides `SegmentWriter._flush_segment` to hand in its postings instead of the pool's, and
`write_field` packs blocks and term infos through the codec's private settings and files
(`_codec`, `_blocklimit`, `_compression`, `_fieldid`, `_postfile`, `_tindex`,
`W3TermInfo._struct`). Measured on a 20k-document rebuild (bench/whoosh_private_bench.py): the
public `FieldWriter.add` per posting is 1.4x slower and `add_document` 2.2x.
tests/store/test_whoosh_internals.py pins every such name and that the bytes written are the
codec's own.
"""

from __future__ import annotations

import functools
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Any

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3TermInfo
from whoosh.compat import dumps
from whoosh.system import _INT_SIZE, pack_int, pack_long, pack_ushort
from whoosh.util.numeric import byte_to_length, length_to_byte
from whoosh.util.numlists import delta_encode
from whoosh.writing import SegmentWriter

from tm_guide.index.base import IndexDoc
from tm_guide.index.terms import index_terms

ID_FIELD = "id"
SOURCE_FIELD = "source"
REVISION_FIELD = "revision"
WRITE_BUFFER = 1 << 20  # postings bytes gathered before a file write
COMPRESS_MIN = 64  # shorter block pickles are stored uncompressed


class BulkSegmentWriter(SegmentWriter):  # type: ignore[misc]
    """A SegmentWriter whose documents come from `add_docs`/`add_meta` only."""

    def __init__(self, ix: Any, compress_min: int = COMPRESS_MIN, **kwargs: Any) -> None:
        super().__init__(ix, **kwargs)
        self.compress_min = compress_min
        # word -> docnums and frequencies, in docnum order (documents arrive in that order).
        # Words stay str until the flush: str order is code point order, as is UTF-8 byte order.
        self._source_docs: dict[str, array[int]] = {}
        self._source_freqs: dict[str, array[int]] = {}
        self._ids: list[tuple[bytes, int]] = []
        # Field length of each document as whoosh stores it (one byte, logarithmic).
        self._lengths = array("I")

    def add_docs(self, docs: Iterable[IndexDoc]) -> int:
        """Add documents (segment id, source text); returns how many."""
        schema = self.schema
        id_field, source_field = schema[ID_FIELD], schema[SOURCE_FIELD]
        pdw = self.perdocwriter
        source_docs, source_freqs = self._source_docs, self._source_freqs
        ids, lengths = self._ids, self._lengths
        stored_length: dict[int, int] = {}
        added = 0
        for doc in docs:
            docnum = self.docnum
            stored_id = str(doc.segment_id)
            counts = Counter(index_terms(doc.source))
            length = 0
            for word, freq in counts.items():
                found = source_docs.get(word)
                if found is None:
                    source_docs[word] = array("I", (docnum,))
                    source_freqs[word] = array("I", (freq,))
                else:
                    found.append(docnum)
                    source_freqs[word].append(freq)
                length += freq
            pdw.start_doc(docnum)
            pdw.add_field(ID_FIELD, id_field, stored_id, 0)
            pdw.add_field(SOURCE_FIELD, source_field, None, length)
            pdw.finish_doc()
            ids.append((stored_id.encode("utf-8"), docnum))
            quantized = stored_length.get(length)
            if quantized is None:
                quantized = byte_to_length(length_to_byte(length)) if length else 0
                stored_length[length] = quantized
            lengths.append(quantized)
            self.docnum += 1
            added += 1
        if added:
            self._added = True
        return added

    def add_meta(self, meta_id: str, revision: int) -> None:
        """The document that records the revision the index reflects."""
        schema = self.schema
        pdw = self.perdocwriter
        docnum = self.docnum
        pdw.start_doc(docnum)
        pdw.add_field(ID_FIELD, schema[ID_FIELD], meta_id, 0)
        pdw.add_field(REVISION_FIELD, schema[REVISION_FIELD], revision, 0)
        pdw.finish_doc()
        self._ids.append((meta_id.encode("utf-8"), docnum))
        self._lengths.append(0)
        self.docnum += 1
        self._added = True

    def add_document(self, **fields: Any) -> None:
        raise TypeError("BulkSegmentWriter takes documents through add_docs and add_meta")

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        writer = self.fieldwriter
        schema = self.schema
        self._ids.sort()
        ids = ((term, array("I", (docnum,)), None) for term, docnum in self._ids)
        # An ID field has no length column: its postings carry length 0.
        write_field(writer, ID_FIELD, schema[ID_FIELD], ids, None, self.compress_min)
        if self._source_docs:
            docs, freqs = self._source_docs, self._source_freqs
            terms = ((word.encode("utf-8"), docs[word], freqs[word]) for word in sorted(docs))
            write_field(
                writer, SOURCE_FIELD, schema[SOURCE_FIELD], terms, self._lengths, self.compress_min
            )
        writer.close()


def write_field(
    writer: Any,
    fieldname: str,
    fieldobj: Any,
    terms: Iterable[tuple[bytes, array[int], array[int] | None]],
    lengths: array[int] | None,
    compress_min: int = COMPRESS_MIN,
) -> None:
    """Write the posting lists of one field: terms in sorted order, docnums ascending.

    `freqs` None means weight 1 and no value for every posting (an ID field); `lengths` None
    means the field has no lengths. The format is whoosh 2.7.4's W3PostingsWriter and
    W3TermInfo (blocks of `blocklimit` postings, each a pickled info tuple and the pickle of
    delta-coded ids, minified weights and values), written without per-posting method calls.
    Blocks whose pickle is shorter than `compress_min` bytes are stored uncompressed (their info
    says so, and whoosh's reader honours it): zlib makes them longer, and setting up a zlib stream
    per tiny block was most of the cost. With `compress_min=0` the bytes are exactly whoosh's.
    """
    codec = writer._codec
    blocklimit, compression = codec._blocklimit, codec._compression
    fixed_size = fieldobj.format.fixed_value_size()
    if fixed_size not in (0, 4):
        raise ValueError(f"field {fieldname!r}: unsupported posting format {fieldobj.format!r}")
    writer.start_field(fieldname, fieldobj)
    field_id = pack_ushort(writer._fieldid)
    postfile = writer._postfile
    buffer = bytearray()
    write = buffer.extend
    add_term = writer._tindex.add
    pack_terminfo = W3TermInfo._struct.pack
    offset = postfile.tell()
    for term, docnums, freqs in terms:
        start = offset
        write(WHOOSH3_HEADER_MAGIC)
        offset += len(WHOOSH3_HEADER_MAGIC)
        count = len(docnums)
        total_weight = 0.0
        max_weight = 0.0
        min_length: int | None = None
        max_length = 0
        for first in range(0, count, blocklimit):
            block = docnums[first : first + blocklimit] if count > blocklimit else docnums
            if lengths is None:
                block_min, block_max = None, 0
            else:
                block_lengths = [n for n in map(lengths.__getitem__, block) if n]
                block_min = min(block_lengths) if block_lengths else None
                block_max = max(block_lengths) if block_lengths else 0
            if freqs is None:
                weights: Any = None
                block_weight = 1.0
                total_weight += len(block)
                values: bytes | None = None
            else:
                block_freqs = freqs[first : first + blocklimit] if count > blocklimit else freqs
                low, high = min(block_freqs), max(block_freqs)
                block_weight = float(high)
                total_weight += sum(block_freqs)
                if high == 1:
                    weights = None
                elif low == high:
                    weights = block_weight
                else:
                    weights = tuple(map(float, block_freqs))
                values = _uint_values(block_freqs) if fixed_size else None
            data = dumps((tuple(delta_encode(block)), weights, values), 2)
            comp = compression if len(data) >= compress_min else 0
            if comp:
                data = zlib.compress(data, comp)
            info = dumps(
                (
                    len(block),
                    block[-1],
                    block_weight,
                    comp,
                    _length_byte(block_min),
                    _length_byte(block_max),
                ),
                2,
            )
            size = len(info) + len(data)
            write(pack_int(-size if first + blocklimit >= count else size))
            write(info)
            write(data)
            offset += _INT_SIZE + size
            max_weight = max(max_weight, block_weight)
            if block_min is not None:
                min_length = block_min if min_length is None else min(min_length, block_min)
            max_length = max(max_length, block_max)
        terminfo = (
            pack_terminfo(
                False,
                total_weight,
                count,
                0 if min_length is None else _length_byte(min_length),
                _length_byte(max_length),
                max_weight,
                docnums[0],
                docnums[-1],
            )
            + pack_long(start)
            + pack_int(offset - start)
        )
        add_term(field_id + term, terminfo)
        if len(buffer) >= WRITE_BUFFER:
            postfile.write(bytes(buffer))
            buffer.clear()
    postfile.write(bytes(buffer))
    writer.finish_field()


@functools.cache
def _length_byte(length: int | None) -> int:
    return int(length_to_byte(length))


def _uint_values(freqs: array[int]) -> bytes:
    """Frequencies as whoosh's Frequency format stores them: big-endian unsigned ints."""
    values = array("I", freqs)
    if sys.byteorder == "little":
        values.byteswap()
    return values.tobytes()
