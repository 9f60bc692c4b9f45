"""Whoosh implementation of SourceIndex: one index directory per memory, BM25F over the source.

One directory per memory keeps filtering free (no per-query memory filter over millions of
postings), lets a memory be rebuilt or dropped alone, and a re-created memory (new uuid) can never
see the old one's documents. Each index holds a "meta" document with the revision it reflects.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from whoosh import fields, index, query
from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.system import pack_uint
from whoosh.writing import CLEAR

from tm_guide.index.base import IndexChange, IndexDoc, IndexOptions, MemoryKey, SourceIndex
from tm_guide.index.terms import WORD_PATTERN, index_terms

log = logging.getLogger(__name__)

META_ID = "meta"


class SourceText(fields.TEXT):
    """TEXT whose indexing skips whoosh's per-token objects (the bulk of indexing time).

    It yields exactly what the analyzer would (same words, frequencies, encoded as whoosh's
    Frequency format), so queries analysed the usual way match.
    """

    def index(self, value: Any, **kwargs: Any) -> Any:
        counts = Counter(index_terms(value))
        return [(w.encode("utf-8"), n, float(n), pack_uint(n)) for w, n in counts.items()]


def make_schema() -> fields.Schema:
    analyzer = RegexTokenizer(WORD_PATTERN) | LowercaseFilter()
    return fields.Schema(
        id=fields.ID(stored=True, unique=True),
        source=SourceText(analyzer=analyzer, phrase=False),
        revision=fields.STORED(),
    )


class _MemoryIndex:
    """The open whoosh index of one memory, with a cached searcher refreshed when it is outdated."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.RLock()
        self._ix: Any = None
        self._searcher: Any = None

    def exists(self) -> bool:
        return index.exists_in(str(self.path))

    def ix(self) -> Any:
        if self._ix is None:
            if not self.exists():
                self.path.mkdir(parents=True, exist_ok=True)
                index.create_in(str(self.path), make_schema())
            self._ix = index.open_dir(str(self.path))
        return self._ix

    def searcher(self) -> Any:
        if self._searcher is None:
            self._searcher = self.ix().searcher()
        elif not self._searcher.up_to_date():
            self._searcher = self._searcher.refresh()
        return self._searcher

    def revision(self) -> int | None:
        if not self.exists():
            return None
        stored = self.searcher().document(id=META_ID)
        return None if stored is None else int(stored["revision"])

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self._ix is not None:
            self._ix.close()
            self._ix = None


class WhooshIndex(SourceIndex):
    def __init__(self, directory: Path, options: IndexOptions | None = None) -> None:
        self.directory = Path(directory)
        self.options = options or IndexOptions()
        self._lock = threading.Lock()
        self._open: dict[str, _MemoryIndex] = {}

    def _memory(self, memory: MemoryKey) -> _MemoryIndex:
        with self._lock:
            found = self._open.get(memory.uuid)
            if found is None:
                found = _MemoryIndex(self.directory / memory.uuid)
                self._open[memory.uuid] = found
            return found

    def _writer(self, mi: _MemoryIndex, **kwargs: Any) -> Any:
        return mi.ix().writer(timeout=self.options.writer_timeout_s, **kwargs)

    def apply(self, change: IndexChange) -> None:
        mi = self._memory(change.memory)
        with mi.lock:
            writer = self._writer(mi)
            try:
                # Under the writer lock the indexed revision cannot move. If it is not our base,
                # another process caught up past it and may already hold our documents: then only
                # idempotent updates are safe, and the revision is left for the next catch-up.
                in_step = self._revision_under_lock(mi) == change.base_revision
                add = writer.add_document if in_step else writer.update_document
                for segment_id in change.deleted:
                    writer.delete_by_term("id", str(segment_id))
                for doc in change.updated:
                    writer.update_document(id=str(doc.segment_id), source=doc.source)
                for doc in change.added:
                    add(id=str(doc.segment_id), source=doc.source)
                if in_step:
                    writer.update_document(id=META_ID, revision=change.memory.revision)
            except BaseException:
                writer.cancel()
                raise
            writer.commit()

    def _revision_under_lock(self, mi: _MemoryIndex) -> int | None:
        # The writer holds the index lock, so no other process can move the revision meanwhile.
        return mi.revision()

    def catch_up(self, memory: MemoryKey, docs: Iterable[IndexDoc]) -> None:
        mi = self._memory(memory)
        with mi.lock:
            writer = self._writer(mi)
            try:
                for doc in docs:
                    writer.update_document(id=str(doc.segment_id), source=doc.source)
                current = self._revision_under_lock(mi)
                if current is None or current < memory.revision:
                    writer.update_document(id=META_ID, revision=memory.revision)
            except BaseException:
                writer.cancel()
                raise
            writer.commit()

    def rebuild(self, memory: MemoryKey, docs: Iterable[IndexDoc]) -> None:
        mi = self._memory(memory)
        with mi.lock:
            writer = self._writer(mi, limitmb=self.options.bulk_memory_mb)
            try:
                for doc in docs:
                    writer.add_document(id=str(doc.segment_id), source=doc.source)
                writer.add_document(id=META_ID, revision=memory.revision)
            except BaseException:
                writer.cancel()
                raise
            writer.commit(mergetype=CLEAR)

    def indexed_revision(self, memory: MemoryKey) -> int | None:
        mi = self._memory(memory)
        with mi.lock:
            try:
                return mi.revision()
            except Exception as exc:  # a damaged index counts as missing: it will be rebuilt
                log.warning(
                    "index of memory %s unreadable (%s); treating it as missing", memory.id, exc
                )
                mi.close()
                shutil.rmtree(mi.path, ignore_errors=True)
                return None

    def search(self, memory: MemoryKey, text: str, limit: int) -> list[tuple[int, float]]:
        words = set(index_terms(text))
        if not words or limit <= 0:
            return []
        mi = self._memory(memory)
        with mi.lock:
            searcher = mi.searcher()
            frequency = {w: searcher.doc_frequency("source", w) for w in words}
            chosen = self._informative_terms(frequency)
            if not chosen:
                return []
            q = query.Or([query.Term("source", w) for w in chosen])
            results = searcher.search(q, limit=limit)
            return [(int(hit["id"]), float(hit.score)) for hit in results]

    def _informative_terms(self, frequency: dict[str, int]) -> list[str]:
        """The rarest words, within the term and posting budgets of the options."""
        options = self.options
        chosen: list[str] = []
        postings = 0
        for word in sorted(
            (w for w, n in frequency.items() if n > 0), key=lambda w: (frequency[w], w)
        ):
            if len(chosen) >= options.max_query_terms:
                break
            if (
                len(chosen) >= options.min_query_terms
                and postings + frequency[word] > options.posting_budget
            ):
                break
            chosen.append(word)
            postings += frequency[word]
        return chosen

    def drop(self, memory: MemoryKey) -> None:
        with self._lock:
            mi = self._open.pop(memory.uuid, None)
        if mi is not None:
            with mi.lock:
                mi.close()
        shutil.rmtree(self.directory / memory.uuid, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            for mi in self._open.values():
                with mi.lock:
                    mi.close()
            self._open.clear()
