"""Whoosh implementation of SourceIndex: one index directory per memory, BM25F over the source.

One directory per memory keeps filtering free (no per-query memory filter over millions of
postings), lets a memory be rebuilt or dropped alone, and a re-created memory (new uuid) can never
see the old one's documents. Each index holds a "meta" document with the revision it reflects.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterable
from itertools import chain, islice
from pathlib import Path
from typing import Any

from whoosh import fields, index
from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.system import pack_uint
from whoosh.writing import CLEAR

from tm_guide.index.base import IndexChange, IndexDoc, IndexOptions, MemoryKey, SourceIndex
from tm_guide.index.bm25 import LeafCache, Stats, top_documents
from tm_guide.index.overlay import Overlay
from tm_guide.index.terms import WORD_PATTERN, index_terms
from tm_guide.index.whoosh_bulk import BulkSegmentWriter

log = logging.getLogger(__name__)

META_ID = "meta"


class SourceText(fields.TEXT):  # type: ignore[misc]  # whoosh is untyped
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
    """The open whoosh index of one memory, its cached searcher, and the overlay of changes not
    yet committed to disk.

    `view` is the revision that disk + overlay reflect in this process. While the database is at
    that revision nothing on disk needs checking: the searcher is refreshed when this process
    commits, when the database revision moves, and otherwise once per `refresh_interval_s`.
    """

    def __init__(self, path: Path, postings_budget: int = 0) -> None:
        self.path = path
        self.lock = threading.RLock()
        self._ix: Any = None
        self._searcher: Any = None
        self.leaves = LeafCache("source", postings_budget)
        self.overlay = Overlay()
        self.view: int | None = None
        self.disk_revision: int | None = None
        self.checked_at = 0.0

    def exists(self) -> bool:
        return bool(index.exists_in(str(self.path)))

    def ix(self) -> Any:
        if self._ix is None:
            if not self.exists():
                self.path.mkdir(parents=True, exist_ok=True)
                index.create_in(str(self.path), make_schema())
            self._ix = index.open_dir(str(self.path))
        return self._ix

    def searcher(self) -> Any:
        """The cached searcher, as of the last refresh (no filesystem check)."""
        if self._searcher is None:
            self.refresh()
        return self._searcher

    def refresh(self) -> None:
        """Look at the disk: reopen what changed, read its revision, drop what it now holds."""
        self.checked_at = time.monotonic()
        if self._searcher is None:
            self._searcher = self.ix().searcher()
        elif not self._searcher.up_to_date():
            self._searcher = self._searcher.refresh()
        stored = self._searcher.document(id=META_ID)
        disk_revision = None if stored is None else int(stored["revision"])
        if disk_revision != self.disk_revision:
            # Another process committed: a document fresh here may now be on disk too.
            self.overlay.fresh.clear()
        self.disk_revision = disk_revision
        if self.disk_revision is None:
            self.overlay.clear()
            self.view = None
        elif self.view is None or self.disk_revision >= self.view:
            # Every change up to the disk revision is on disk, the overlay's included.
            self.overlay.clear()
            self.view = self.disk_revision

    def revision(self) -> int | None:
        if not self.exists():
            return None
        self.refresh()
        return self.view

    def forget(self) -> None:
        """After this process rewrote the disk: the overlay is in it, the view is the disk's."""
        self.overlay.clear()
        self.view = None
        self.refresh()

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self._ix is not None:
            self._ix.close()
            self._ix = None
        self.leaves.clear()
        self.overlay.clear()
        self.view = None
        self.disk_revision = None


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
                found = _MemoryIndex(self.directory / memory.uuid, self.options.postings_cache)
                self._open[memory.uuid] = found
            return found

    def _writer(self, mi: _MemoryIndex, timeout: float | None = None, **kwargs: Any) -> Any:
        wait = self.options.writer_timeout_s if timeout is None else timeout
        # Separate segment files, not one compound file: whoosh reads a compound file into
        # memory whole each time a reader opens it, and every replacing commit opens one.
        return mi.ix().writer(timeout=wait, compound=False, **kwargs)

    def apply(self, change: IndexChange) -> None:
        mi = self._memory(change.memory)
        with mi.lock:
            if mi.view is None:
                mi.revision()
            room = self.options.buffer_docs - len(mi.overlay)
            updated = list(change.updated)
            added = iter(change.added)
            head = list(islice(added, max(room - len(updated), 0) + 1))
            deleted = list(change.deleted)
            fits = len(updated) + len(head) <= room
            if change.buffered and not deleted and mi.view is not None and fits:
                in_step = mi.view == change.base_revision
                mi.overlay.put(updated)
                mi.overlay.put(head, fresh=in_step)
                if in_step:
                    mi.view = change.memory.revision
                return
            self._commit(
                mi,
                change.memory.revision,
                updates=updated,
                adds=chain(head, added),
                deletes=deleted,
                step=change.base_revision,
            )

    def _commit(
        self,
        mi: _MemoryIndex,
        revision: int,
        updates: Iterable[IndexDoc] = (),
        adds: Iterable[IndexDoc] = (),
        deletes: Iterable[int] = (),
        step: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """One whoosh commit of the overlay and a change. The disk records `revision` when it
        then holds every change up to it: the change followed the view (`step` is the view's
        revision), or it is a catch-up (`step` None) of everything after the view."""
        writer = self._writer(mi, timeout)
        replacer = _Replacer(writer)
        try:
            # Under the writer lock no other process can move the disk revision.
            mi.refresh()
            overlay = list(mi.overlay.docs.items())
            view = mi.view
            in_step = view is not None and (step is None or view == step)
            gone = set(deletes)
            for segment_id in gone:
                replacer.delete(str(segment_id))
            # The change is the newest version of its documents, then the overlay's; a document
            # fresh here (emptied by the refresh above if another process wrote) has no older
            # version on disk to delete.
            for doc in updates:
                replacer.put(doc.segment_id, doc.source, new=False)
            for doc in adds:
                replacer.put(doc.segment_id, doc.source, new=in_step and step is not None)
            fresh = mi.overlay.fresh
            for segment_id, source in overlay:
                if segment_id not in gone:
                    replacer.put(segment_id, source, new=segment_id in fresh)
            disk = mi.disk_revision
            recorded: int | None
            if in_step:
                recorded = revision if disk is None else max(disk, revision)
            elif view is not None and (disk is None or view > disk):
                recorded = view
            else:
                recorded = disk
            if recorded is not None and recorded != disk:
                replacer.delete(META_ID)
                writer.add_document(id=META_ID, revision=recorded)
        except BaseException:
            replacer.close()
            writer.cancel()
            raise
        replacer.close()
        writer.commit()
        mi.forget()

    def catch_up(self, memory: MemoryKey, docs: Iterable[IndexDoc]) -> None:
        mi = self._memory(memory)
        with mi.lock:
            if mi.view is None:
                mi.revision()
            room = self.options.buffer_docs - len(mi.overlay)
            iterator = iter(docs)
            head = list(islice(iterator, max(room, 0) + 1))
            if len(head) <= room and mi.view is not None:
                mi.overlay.put(head)
                mi.view = max(mi.view, memory.revision)
                return
            self._commit(mi, memory.revision, updates=chain(head, iterator))

    def flush(self, memory: MemoryKey) -> None:
        """Commit the overlay to disk now (it is otherwise committed when it fills up)."""
        mi = self._memory(memory)
        with mi.lock:
            if len(mi.overlay):
                self._commit(mi, mi.view or 0, step=mi.view)

    def rebuild(self, memory: MemoryKey, docs: Iterable[IndexDoc]) -> None:
        mi = self._memory(memory)
        with mi.lock:
            try:
                ix = mi.ix()
            except Exception as exc:  # not even its table of contents reads: start anew
                log.warning("index of memory %s unreadable (%s): replaced", memory.id, exc)
                mi.close()
                shutil.rmtree(mi.path, ignore_errors=True)
                ix = mi.ix()
            # One new segment written in bulk (postings gathered in memory, see whoosh_bulk);
            # clearing the others replaces whatever damaged segment files they had.
            writer = BulkSegmentWriter(ix, timeout=self.options.writer_timeout_s)
            try:
                writer.add_docs(docs)
                writer.add_meta(META_ID, memory.revision)
            except BaseException:
                writer.cancel()
                raise
            writer.commit(mergetype=CLEAR)
            mi.forget()

    def indexed_revision(self, memory: MemoryKey) -> int | None:
        mi = self._memory(memory)
        with mi.lock:
            fresh = time.monotonic() - mi.checked_at < self.options.refresh_interval_s
            if mi.view is not None and mi.view == memory.revision and fresh:
                return mi.view
            try:
                return mi.revision()
            except Exception as exc:  # a damaged index counts as missing: it will be rebuilt
                log.warning(
                    "index of memory %s unreadable (%s); treating it as missing", memory.id, exc
                )
                mi.close()  # its files stay until a rebuild replaces them
                return None

    def search(self, memory: MemoryKey, text: str, limit: int) -> list[tuple[int, float]]:
        words = set(index_terms(text))
        if not words or limit <= 0:
            return []
        mi = self._memory(memory)
        with mi.lock:
            searcher = mi.searcher()
            overlay = mi.overlay
            frequency = {
                w: searcher.doc_frequency("source", w) + overlay.doc_frequency(w) for w in words
            }
            chosen = self._informative_terms(frequency)
            if not chosen:
                return []
            leaves, stats = mi.leaves.leaves(searcher)
            if len(overlay):
                stats = Stats(stats.doc_count + len(overlay), stats.avg_length)
            scored = [
                (score, sid) for sid, score in overlay.score(chosen, frequency, stats).items()
            ]
            # Documents whose segment the overlay holds are hidden (its newer text is scored
            # from the overlay), and one segment may have several such documents on disk. The
            # window grows by what it still lacks at every round, so it only ever widens, and
            # the loop ends once `limit` documents are found or the window holds all there are.
            want = limit
            while True:
                ranked = top_documents(leaves, stats, frequency, chosen, want)
                found = []
                for score, leaf, docnum in ranked:
                    segment_id = int(leaf.stored_id(docnum))
                    if segment_id not in overlay:
                        found.append((score, segment_id))
                if len(found) >= limit or len(ranked) < want:
                    break
                want += limit - len(found)
            scored.extend(found)
            scored.sort(key=lambda item: (-item[0], item[1]))
            return [(sid, score) for score, sid in scored[:limit]]

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

    def verify(self, memory: MemoryKey) -> str | None:
        """Every posting list and stored document of every segment file is read, from a reader
        of its own (the cached one is left alone), so that truncated or damaged files are found
        even where the revision still reads."""
        path = self.directory / memory.uuid
        if not index.exists_in(str(path)):
            return None
        try:
            ix = index.open_dir(str(path))
            try:
                with ix.reader() as reader:
                    for segment, _base in reader.leaf_readers():
                        for fieldname, text in segment.all_terms():
                            segment.postings(fieldname, text).all_items()
                        for _ in segment.all_stored_fields():
                            pass
            finally:
                ix.close()
        except Exception as exc:  # whatever a damaged file raises
            return f"{type(exc).__name__}: {exc}"
        return None

    def drop(self, memory: MemoryKey) -> None:
        with self._lock:
            mi = self._open.pop(memory.uuid, None)
        if mi is not None:
            with mi.lock:
                mi.close()
        shutil.rmtree(self.directory / memory.uuid, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            opened = list(self._open.values())
            self._open.clear()
        for mi in opened:
            with mi.lock:
                self._flush_quietly(mi)
                mi.close()

    def _flush_quietly(self, mi: _MemoryIndex) -> None:
        """Commit the overlay on the way out if the index is free; otherwise the next process
        catches up from the database, which holds every change anyway."""
        if not len(mi.overlay) or mi.view is None:
            return
        try:
            self._commit(mi, mi.view, step=mi.view, timeout=1.0)
        except Exception as exc:
            log.info("overlay of %s left to catch-up (%s)", mi.path.name, exc)


class _Replacer:
    """Writes documents into one whoosh commit, deleting their older versions through one
    searcher opened when first needed. whoosh's update_document opens a searcher over every
    segment for each document, and a bulk-built segment is read into memory whole to open it;
    a commit of 500 replaced documents would open it 500 times. A document written twice in
    one commit keeps its first (newest) version."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self._searcher: Any = None
        self._written: set[int] = set()

    def delete(self, stored_id: str) -> None:
        if self._searcher is None:
            self._searcher = self.writer.searcher()
        self.writer.delete_by_term("id", stored_id, searcher=self._searcher)

    def put(self, segment_id: int, source: str, new: bool) -> None:
        if segment_id in self._written:
            return
        self._written.add(segment_id)
        if not new:
            self.delete(str(segment_id))
        self.writer.add_document(id=str(segment_id), source=source)

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
