"""Recently added or changed documents held in memory in front of the on-disk index.

A whoosh commit costs tens of milliseconds, too much for every confirmed segment. Small changes
are kept here instead and searched together with the disk index (a document here hides its older
version on disk); they reach the disk in one commit when enough have gathered. Nothing here has to
survive a crash: the database is the source of truth, and a process that finds the disk index
behind the database revision catches up from it (into its own overlay).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tm_guide.index.base import IndexDoc
from tm_guide.index.bm25 import Stats, bm25, encoded_length, idf
from tm_guide.index.terms import index_terms


class Overlay:
    """Documents by segment id, with an inverted list per word for scoring."""

    def __init__(self) -> None:
        self.docs: dict[int, str] = {}
        # Documents known to have no older version on disk (added in step with the disk by this
        # process): a commit adds them without the lookup a replacement needs.
        self.fresh: set[int] = set()
        self._lengths: dict[int, float] = {}
        self._postings: dict[str, dict[int, int]] = {}

    def __len__(self) -> int:
        return len(self.docs)

    def __contains__(self, segment_id: object) -> bool:
        return segment_id in self.docs

    def put(self, docs: Iterable[IndexDoc], fresh: bool = False) -> None:
        """Hold these documents; `fresh`: none of them has a version on disk."""
        for doc in docs:
            self.remove(doc.segment_id)  # a fresh document replaced here stays fresh
            if fresh:
                self.fresh.add(doc.segment_id)
            counts = Counter(index_terms(doc.source))
            self.docs[doc.segment_id] = doc.source
            self._lengths[doc.segment_id] = encoded_length(sum(counts.values()))
            for word, tf in counts.items():
                self._postings.setdefault(word, {})[doc.segment_id] = tf

    def remove(self, segment_id: int) -> None:
        """Forget the document's text (whether it is fresh is kept: its disk state is the same)."""
        source = self.docs.pop(segment_id, None)
        if source is None:
            return
        del self._lengths[segment_id]
        for word in set(index_terms(source)):
            postings = self._postings.get(word)
            if postings is not None:
                postings.pop(segment_id, None)
                if not postings:
                    del self._postings[word]

    def clear(self) -> None:
        self.docs.clear()
        self.fresh.clear()
        self._lengths.clear()
        self._postings.clear()

    def doc_frequency(self, word: str) -> int:
        return len(self._postings.get(word, ()))

    def score(
        self, words: Iterable[str], frequency: dict[str, int], stats: Stats
    ) -> dict[int, float]:
        """BM25 of the documents here that contain any of `words`, with the disk index's
        statistics (the overlay is small next to it)."""
        scores: dict[int, float] = {}
        for word in words:
            postings = self._postings.get(word)
            if not postings:
                continue
            term_idf = idf(stats.doc_count, frequency[word])
            for segment_id, tf in postings.items():
                length = self._lengths[segment_id]
                scores[segment_id] = scores.get(segment_id, 0.0) + bm25(
                    term_idf, tf, length, stats.avg_length
                )
        return scores
