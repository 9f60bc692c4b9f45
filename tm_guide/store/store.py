"""The translation-memory store: memories, segments, API keys and the full-text index in step.

The database is the source of truth. Every change bumps the memory's revision in the same
transaction; after the commit the index is told what changed. If that fails, the index simply
stays at an older revision, which the next search notices and repairs.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
import uuid as uuidlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError
from tqdm import tqdm

from tm_guide import languages
from tm_guide.config import default_index_dir
from tm_guide.errors import Conflict, InvalidInput, NotFound, TMGuideError, Unauthorized
from tm_guide.index import IndexChange, IndexDoc, IndexOptions, MemoryKey, SourceIndex, WhooshIndex
from tm_guide.records import NOT_XML, SegmentRecord
from tm_guide.store.convert import (
    api_key_from_row,
    memory_from_row,
    now,
    pair_hash,
    segment_from_row,
)
from tm_guide.store.engine import create_store_engine, upgrade_to_head
from tm_guide.store.fallback import IndexRepair, IndexRepairs, database_search
from tm_guide.store.group_commit import GroupCommit
from tm_guide.store.merge import BatchOutcome, apply_batch, check_record
from tm_guide.store.models import MAX_ID, api_keys_table, memories_table, segments_table
from tm_guide.store.types import (
    MEMORY_KINDS,
    ApiKey,
    ImportReport,
    Memory,
    SearchHit,
    Segment,
    SegmentAnalysis,
)

log = logging.getLogger(__name__)

memories = memories_table
segments = segments_table
api_keys = api_keys_table

ACCESS_LEVELS = ("read", "write")
TOKEN_PREFIX = "tmg_"
MEMORY_NAME_SPACE = re.compile(r"[^\S ]")  # whitespace other than the space
MAX_CACHED_KEYS = 10_000


@dataclass(frozen=True)
class StoreOptions:
    """Tuning of bulk work; the defaults suit both backends."""

    import_batch: int = 2000
    bulk_index_min: int = 1000  # imports adding this many rows may re-index the memory in bulk
    # a lookup that finds its memory's index this many segments behind the database (another
    # process imported them) has the index caught up in the background, and is answered from
    # the database meanwhile, instead of waiting for the catch-up
    background_index_min: int = 2000
    read_batch: int = 2000
    # PostgreSQL: refresh the planner's statistics inside an import once the memory reaches this
    # many segments, and again at every doubling (see _PlannerStatistics)
    statistics_refresh_min: int = 10_000
    index: IndexOptions = IndexOptions()
    repair_index_on_open: bool = True
    # concurrent single-segment writes to one memory committed together, at most this many
    max_write_group: int = 64
    # database connections kept open, and opened beyond them under load (see engine.py): a
    # server sizes the pool to its request threads
    pool_size: int = 5
    pool_overflow: int = 10
    # seconds a verified API key is trusted without a lookup (0: every request looks it up)
    key_cache_s: float = 0.0


def check_memory_fields(name: str, description: str | None = "") -> str:
    """The name a new memory gets, after refusing what no memory may be called or described
    as. A name is kept as given: one with surrounding or other-than-space whitespace is refused,
    not silently changed, so that the name a client sent is the one it finds."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise InvalidInput("memory name must be 1 to 200 characters", field="name")
    if name != name.strip() or MEMORY_NAME_SPACE.search(name):
        raise InvalidInput(
            "memory name must not start or end with whitespace, nor hold tabs or line breaks",
            field="name",
        )
    # exported into TMX headers and file names; NUL breaks PostgreSQL
    for label, value in (("name", name), ("description", description or "")):
        bad = NOT_XML.search(value)
        if bad is not None:
            raise InvalidInput(
                f"U+{ord(bad.group()):04X} cannot be part of a memory's name or description",
                field=label,
            )
    return name


@dataclass(frozen=True)
class IndexState:
    memory: Memory
    indexed_revision: int | None

    @property
    def current(self) -> bool:
        return self.indexed_revision == self.memory.revision


def _key(memory: Memory) -> MemoryKey:
    return MemoryKey(memory.id, memory.uuid, memory.revision)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Store:
    """Thread-safe; one per process (each process opens its own)."""

    def __init__(self, engine: Engine, index: SourceIndex, options: StoreOptions) -> None:
        self.engine = engine
        self.index = index
        self.options = options
        self._group_commit: GroupCommit[tuple[Memory, SegmentRecord], tuple[Segment, Memory]] = (
            GroupCommit(self._commit_group, options.max_write_group)
        )
        self._verified_keys: dict[str, tuple[float, ApiKey]] = {}
        self._repairs = IndexRepairs()

    @classmethod
    def open(
        cls,
        url: str,
        index_dir: Path | None = None,
        options: StoreOptions | None = None,
        index: SourceIndex | None = None,
    ) -> Store:
        """Connect, migrate to the newest schema, and repair a stale or missing index.

        The source index is a WhooshIndex in `index_dir` (default: beside an SQLite file), or
        `index`, any other SourceIndex, which then takes the place of both."""
        if index is not None and index_dir is not None:
            raise InvalidInput("give an index directory or an index, not both", field="index_dir")
        options = options or StoreOptions()
        engine = create_store_engine(url, options.pool_size, options.pool_overflow)
        try:
            upgrade_to_head(engine)
        except Exception:
            engine.dispose()
            raise
        if index is None:
            directory = Path(index_dir) if index_dir is not None else default_index_dir(url)
            index = WhooshIndex(directory, options.index)
        store = cls(engine, index, options)
        if options.repair_index_on_open:
            for state in store.index_states():
                if not state.current:
                    log.warning(
                        "index of memory %r is at revision %s, database at %s: repairing",
                        state.memory.name,
                        state.indexed_revision,
                        state.memory.revision,
                    )
                    store.ensure_index(state.memory)
        return store

    def close(self) -> None:
        self.index.close()
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- memories -------------------------------------------------------------------------

    def create_memory(
        self,
        name: str,
        source_lang: str,
        target_lang: str,
        description: str = "",
        kind: str = "memory",
    ) -> Memory:
        name = check_memory_fields(name, description)
        if kind not in MEMORY_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(MEMORY_KINDS)}", field="kind")
        # stored in BCP 47 form, whichever spelling came in (zh_CN, sr@latin, de_DE.UTF-8)
        for label, tag in (("source_lang", source_lang), ("target_lang", target_lang)):
            if not isinstance(tag, str):
                raise InvalidInput(f"{label} must be a language tag like en or de-DE", field=label)
        source_lang = languages.normalize(source_lang, field="source_lang")
        target_lang = languages.normalize(target_lang, field="target_lang")
        values = {
            "uuid": uuidlib.uuid4().hex,
            "name": name,
            "source_lang": source_lang,
            "target_lang": target_lang,
            "description": description or "",
            "kind": kind,
            "revision": 0,
            "segment_count": 0,
            "created_at": now(),
        }
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(memories).values(values))
        except IntegrityError as exc:
            raise Conflict(f"a memory named {name!r} already exists", field="name") from exc
        memory = self.get_memory(name)
        self.index.rebuild(_key(memory), ())
        return memory

    def get_memory(self, ref: str | int) -> Memory:
        """The memory named `ref` (a str), or whose id is `ref` (an int). A name is never read
        as an id, nor an id as a name: a memory named "2" and the memory with id 2 are two
        memories, and a key scoped to the one never reaches the other."""
        with self.engine.connect() as conn:
            row = None
            if isinstance(ref, int):
                if 0 <= ref <= MAX_ID:
                    row = conn.execute(select(memories).where(memories.c.id == ref)).first()
            elif not NOT_XML.search(ref):  # else no memory is named so (create_memory refuses)
                row = conn.execute(select(memories).where(memories.c.name == ref)).first()
        if row is None:
            what = f"id {ref}" if isinstance(ref, int) else f"named {ref!r}"
            raise NotFound(f"no memory {what}", field="memory")
        return memory_from_row(row)

    def list_memories(self) -> list[Memory]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(memories).order_by(memories.c.name)).all()
        return [memory_from_row(row) for row in rows]

    def delete_memory(self, name: str | int) -> None:
        memory = self.get_memory(name)
        with self.engine.begin() as conn:
            conn.execute(delete(memories).where(memories.c.id == memory.id))
        self.index.drop(_key(memory))

    # ---- writing segments -----------------------------------------------------------------

    def import_records(
        self,
        memory: Memory,
        records: Iterable[SegmentRecord],
        progress: bool = False,
        source_name: str = "record",
        on_commit: Callable[[], None] | None = None,
    ) -> ImportReport:
        """All records in one transaction: an error anywhere leaves the memory as it was.
        `on_commit` is called once the transaction committed, before the index is updated, so
        that a caller can record that the import's records are stored."""
        report = ImportReport()
        outcome = BatchOutcome()
        when = now()
        started = time.perf_counter()
        bar = tqdm(desc=f"importing into {memory.name}", unit=" seg", disable=not progress)
        with bar, self.engine.begin() as conn:
            revision = self._bump_revision(conn, memory.id)
            statistics = _PlannerStatistics(
                conn, memory.segment_count, self.options.statistics_refresh_min
            )
            iterator = iter(records)
            while batch := list(islice(iterator, self.options.import_batch)):
                apply_batch(conn, memory.id, revision, batch, report, outcome, when, source_name)
                statistics.grown_to(memory.segment_count + outcome.count_delta)
                bar.update(len(batch))
            self._add_count(conn, memory.id, outcome.count_delta)
        committed = time.perf_counter()
        if on_commit is not None:
            on_commit()
        if self._rebuild_is_cheaper(memory, outcome):
            # Re-indexing the whole memory in bulk costs less than adding this many documents
            # one by one through the incremental writer.
            try:
                self.rebuild_index(memory, progress)
            except Exception as exc:  # committed; the next search repairs a stale index
                log.warning("index rebuild of memory %r failed (%s)", memory.name, exc)
        else:
            self._index_after_commit(memory, revision, outcome, progress)
        report.db_seconds = committed - started
        report.index_seconds = time.perf_counter() - committed
        return report

    def _rebuild_is_cheaper(self, memory: Memory, outcome: BatchOutcome) -> bool:
        """A bulk rebuild indexes about 3x as many documents per second as incremental adds:
        it wins when the import adds at least `bulk_index_min` rows and at least half as many
        as the memory held before."""
        added = outcome.count_delta
        before = self.get_memory(memory.id).segment_count - outcome.count_delta
        return added >= self.options.bulk_index_min and 2 * added >= before

    def add_segment(self, memory: Memory, record: SegmentRecord) -> Segment:
        """Store one confirmed segment; it is committed and searchable when this returns.

        Concurrent calls for one memory share a transaction (see group_commit.py)."""
        return self.write_segment(memory, record)[0]

    def write_segment(self, memory: Memory, record: SegmentRecord) -> tuple[Segment, Memory]:
        """`add_segment`, also giving the memory as the write's commit left it (its revision and
        segment count), which an answer to the writer reports."""
        if check_record(record, "segment") == "empty":
            raise InvalidInput("source and target must not be empty", field="source")
        return self._group_commit.write(memory.id, (memory, record))

    def _commit_group(
        self, memory_id: int, writes: Sequence[tuple[Memory, SegmentRecord]]
    ) -> list[tuple[Segment, Memory]]:
        """One transaction, one revision and one index update for these segment writes."""
        memory = writes[0][0]
        records = [record for _, record in writes]
        report = ImportReport()
        outcome = BatchOutcome()
        with self.engine.begin() as conn:
            revision = self._bump_revision(conn, memory_id)
            apply_batch(conn, memory_id, revision, records, report, outcome, now())
            if report.skipped:
                raise InvalidInput("source and target must not be empty", field="source")
            self._add_count(conn, memory_id, outcome.count_delta)
            hashes = [pair_hash(r.source, r.target, r.context) for r in records]
            # Two indexed lookups: an OR of both conditions would scan the memory.
            by_hash = {
                row.pair_hash: row
                for row in conn.execute(
                    select(segments).where(
                        segments.c.memory_id == memory_id, segments.c.pair_hash.in_(hashes)
                    )
                )
            }
            replaced = [
                r.tuid for h, r in zip(hashes, records, strict=True) if h not in by_hash and r.tuid
            ]
            by_tuid = (
                {
                    row.tuid: row
                    for row in conn.execute(
                        select(segments).where(
                            segments.c.memory_id == memory_id, segments.c.tuid.in_(replaced)
                        )
                    )
                }
                if replaced
                else {}
            )
            after = memory_from_row(
                conn.execute(select(memories).where(memories.c.id == memory_id)).one()
            )
        self._index_after_commit(memory, revision, outcome, progress=False, buffered=True)
        # A write whose pair a later write of the group replaced (same tuid) gets the row as the
        # group left it, as it would have on reading it back after a one-by-one commit.
        return [
            (segment_from_row(by_hash.get(h) or by_tuid[record.tuid]), after)
            for h, record in zip(hashes, records, strict=True)
        ]

    def update_segment(self, memory: Memory, tuid: str, record: SegmentRecord) -> Segment:
        """Replace the segment with this tuid (NotFound if there is none)."""
        exists = None
        if not NOT_XML.search(tuid):  # one no segment can hold names none (a NUL: PostgreSQL)
            with self.engine.connect() as conn:
                exists = conn.execute(
                    select(segments.c.id).where(
                        segments.c.memory_id == memory.id, segments.c.tuid == tuid
                    )
                ).first()
        if exists is None:
            raise NotFound(f"no segment with tuid {tuid!r} in memory {memory.name!r}", field="tuid")
        return self.add_segment(memory, SegmentRecord(**{**record.__dict__, "tuid": tuid}))

    def delete_segment(self, memory: Memory, segment_id: int) -> None:
        with self.engine.begin() as conn:
            revision = self._bump_revision(conn, memory.id)
            gone = conn.execute(
                delete(segments).where(
                    segments.c.id == segment_id, segments.c.memory_id == memory.id
                )
            ).rowcount
            if not gone:
                raise NotFound(
                    f"no segment {segment_id} in memory {memory.name!r}", field="segment_id"
                )
            self._add_count(conn, memory.id, -1)
        outcome = BatchOutcome(deleted_ids=[segment_id])
        self._index_after_commit(memory, revision, outcome, progress=False)

    def set_analysis(self, items: Iterable[SegmentAnalysis]) -> None:
        """Store tokens and alignments; text and revision stay as they are (index unaffected)."""
        statement = (
            update(segments)
            .where(segments.c.id == bindparam("segment_id"))
            .values(
                source_tokens=bindparam("v_source_tokens"),
                target_tokens=bindparam("v_target_tokens"),
                alignment=bindparam("v_alignment"),
                tokenizer_id=bindparam("v_tokenizer_id"),
                aligner_id=bindparam("v_aligner_id"),
            )
        )
        params = [
            {
                "segment_id": item.segment_id,
                "v_source_tokens": list(item.source_tokens),
                "v_target_tokens": list(item.target_tokens),
                "v_alignment": [[int(s), int(t)] for s, t in item.alignment],
                "v_tokenizer_id": item.tokenizer_id,
                "v_aligner_id": item.aligner_id,
            }
            for item in items
        ]
        if params:
            with self.engine.begin() as conn:
                conn.execute(statement, params)

    def _bump_revision(self, conn: Connection, memory_id: int) -> int:
        # The first statement of every write: it takes the write lock (SQLite) or the memory's
        # row lock (PostgreSQL), so writes to one memory are serialized and dedup is exact.
        revision = conn.execute(
            update(memories)
            .where(memories.c.id == memory_id)
            .values(revision=memories.c.revision + 1)
            .returning(memories.c.revision)
        ).scalar()
        if revision is None:
            raise NotFound(f"memory {memory_id} does not exist (deleted?)", field="memory")
        return int(revision)

    def _add_count(self, conn: Connection, memory_id: int, delta: int) -> None:
        if delta:
            conn.execute(
                update(memories)
                .where(memories.c.id == memory_id)
                .values(segment_count=memories.c.segment_count + delta)
            )

    def _index_after_commit(
        self,
        memory: Memory,
        revision: int,
        outcome: BatchOutcome,
        progress: bool,
        buffered: bool = False,
    ) -> None:
        key = MemoryKey(memory.id, memory.uuid, revision)
        if self._repairs.active(memory.id):
            # the index is being rebuilt or caught up in the background, holding its lock: this
            # change is in the database, and the next lookup after that catches it up
            return
        try:
            with self.engine.connect() as conn:
                rows = conn.execution_options(yield_per=self.options.read_batch).execute(
                    select(segments.c.id, segments.c.source).where(
                        segments.c.memory_id == memory.id, segments.c.revision == revision
                    )
                )
                updated = outcome.updated_ids
                added = (
                    IndexDoc(r.id, r.source)
                    for r in tqdm(rows, desc="indexing", unit=" seg", disable=not progress)
                )
                # Rows of this revision are either new or replaced; replaced ones were listed.
                docs = list(added) if updated else added
                self.index.apply(
                    IndexChange(
                        key,
                        base_revision=revision - 1,
                        added=(d for d in docs if d.segment_id not in updated),
                        updated=[d for d in docs if d.segment_id in updated] if updated else (),
                        deleted=outcome.deleted_ids,
                        buffered=buffered,
                    )
                )
            # A concurrent writer may have committed before us and not reached the index yet:
            # then our revision could not be recorded. Catch up now rather than leave it stale.
            indexed = self.index.indexed_revision(key)
            if indexed is not None and indexed < revision:
                self._catch_up(key, indexed)
        except Exception as exc:
            # The database change is committed; the index stays at its older revision and is
            # repaired by the next search (or `tm-guide index rebuild`).
            log.warning("index update for memory %r failed (%s); marked stale", memory.name, exc)

    # ---- reading segments -----------------------------------------------------------------

    def get_segments(self, ids: Sequence[int]) -> list[Segment]:
        """Segments in the order of `ids`; ids that do not exist (any more) are left out, as
        are numbers no id can be (MAX_ID)."""
        wanted = [i for i in map(int, ids) if 0 < i <= MAX_ID]
        found: dict[int, Segment] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(wanted), self.options.read_batch):
                chunk = wanted[start : start + self.options.read_batch]
                for row in conn.execute(select(segments).where(segments.c.id.in_(chunk))):
                    found[row.id] = segment_from_row(row)
        return [found[i] for i in wanted if i in found]

    def iter_segments(self, memory: Memory) -> Iterator[Segment]:
        """All segments by id, fetched in pages (no long-held read transaction). A memory
        deleted meanwhile is a NotFound at the end, never a read that looks complete."""
        last = 0
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(
                    select(segments)
                    .where(segments.c.memory_id == memory.id, segments.c.id > last)
                    .order_by(segments.c.id)
                    .limit(self.options.read_batch)
                ).all()
                gone = not rows and (
                    conn.execute(select(memories.c.id).where(memories.c.id == memory.id)).first()
                    is None
                )
            if gone:
                raise NotFound(
                    f"memory {memory.name!r} was deleted while it was read", field="memory"
                )
            if not rows:
                return
            for row in rows:
                yield segment_from_row(row)
            last = rows[-1].id

    def concordance(
        self, memory: Memory, text: str, side: str = "source", limit: int = 50
    ) -> list[Segment]:
        """Segments whose source (or target) contains `text`, case-insensitively."""
        if side not in ("source", "target"):
            raise InvalidInput("side must be 'source' or 'target'", field="side")
        if not text.strip():
            raise InvalidInput("concordance text must not be empty", field="text")
        if NOT_XML.search(text):  # no segment holds it (and a NUL never reaches PostgreSQL)
            return []
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        column = segments.c[side]
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(segments)
                .where(segments.c.memory_id == memory.id, column.ilike(f"%{escaped}%", escape="\\"))
                .order_by(segments.c.usage_count.desc(), segments.c.id)
                .limit(limit)
            ).all()
        return [segment_from_row(row) for row in rows]

    def same_source(self, memory_ids: Sequence[int], text: str, limit: int = 10) -> list[Segment]:
        """Segments whose source is exactly `text`: what answers a text the index has no words
        for ("/", "%s", "..."). A scan of the memories' rows, so callers ask only then."""
        if limit <= 0 or not memory_ids or NOT_XML.search(text):  # no segment holds a NUL
            return []
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(segments)
                .where(segments.c.memory_id.in_(list(memory_ids)), segments.c.source == text)
                .order_by(segments.c.id)
                .limit(limit)
            ).all()
        return [segment_from_row(row) for row in rows]

    def search(self, memory_ids: Sequence[int], text: str, limit: int = 10) -> list[SearchHit]:
        """Top `limit` segments by BM25 over the source side of several memories."""
        if limit <= 0 or not memory_ids:
            return []
        wanted = list(dict.fromkeys(int(i) for i in memory_ids))
        only = memories.c.id == wanted[0] if len(wanted) == 1 else memories.c.id.in_(wanted)
        with self.engine.connect() as conn:
            rows = conn.execute(select(memories).where(only)).all()
        found = {row.id: memory_from_row(row) for row in rows}
        missing = [i for i in wanted if i not in found]
        if missing:
            raise NotFound(f"no memory with id {missing[0]}", field="memory")
        scored: list[tuple[float, int]] = []
        for memory in found.values():
            scored.extend((score, sid) for sid, score in self._search_one(memory, text, limit))
        scored.sort(key=lambda item: (-item[0], item[1]))
        top = scored[:limit]
        by_id = {s.id: s for s in self.get_segments([sid for _, sid in top])}
        # A segment deleted by another process may still be indexed for a moment: leave it out.
        return [SearchHit(by_id[sid], score) for score, sid in top if sid in by_id]

    def _search_one(self, memory: Memory, text: str, limit: int) -> list[tuple[int, float]]:
        """The memory's index answers; where it cannot (damaged files) or would first have to
        index many segments, the database does, while the index is rebuilt or caught up behind
        it (tm_guide.store.fallback)."""
        if not self._repairs.active(memory.id):
            try:
                behind = self._segments_behind(memory)
                if behind < self.options.background_index_min:
                    self.ensure_index(memory)
                    return self.index.search(_key(memory), text, limit)
                # half the memory or more to take in: a bulk rebuild indexes about 2.5x as
                # many documents per second as a catch-up, which replaces each one by one
                bulk = 2 * behind >= memory.segment_count
                self._repairs.start(
                    memory,
                    lambda m, repair: (
                        self.rebuild_index(m, repair=repair)
                        if bulk
                        else self.ensure_index(m, repair=repair)
                    ),
                    f"{behind} segments to index" + (", rebuilt in bulk" if bulk else ""),
                    total=memory.segment_count if bulk else behind,
                )
            except TMGuideError:
                raise
            except Exception as exc:  # the index is a rebuildable view: never fail a lookup on it
                self._repairs.start(
                    memory,
                    lambda m, repair: self.rebuild_index(m, repair=repair),
                    f"{type(exc).__name__}: {exc}",
                    total=memory.segment_count,
                    failed=True,
                )
        return database_search(self.engine, memory, text, limit)

    def _segments_behind(self, memory: Memory) -> int:
        """How many segments the memory's index lacks (changed since the revision it holds)."""
        indexed = self.index.indexed_revision(_key(memory))
        if indexed is None:
            return memory.segment_count
        if indexed >= memory.revision:
            return 0
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count()).where(
                        segments.c.memory_id == memory.id, segments.c.revision > indexed
                    )
                ).scalar_one()
            )

    def verify_index(self, memory: Memory) -> str | None:
        """What is wrong with the memory's index files (every one read through), or None."""
        return self.index.verify(_key(memory))

    def index_repairs(self) -> list[int]:
        """Ids of the memories whose index is being rebuilt or caught up in the background."""
        return self._repairs.memory_ids()

    def index_repairs_under_way(self) -> list[IndexRepair]:
        """The background rebuilds and catch-ups, with how far each got."""
        return self._repairs.under_way()

    # ---- index upkeep ---------------------------------------------------------------------

    def index_states(self) -> list[IndexState]:
        return [IndexState(m, self.index.indexed_revision(_key(m))) for m in self.list_memories()]

    def ensure_index(
        self, memory: Memory, progress: bool = False, repair: IndexRepair | None = None
    ) -> None:
        """Make the memory's index reflect `memory.revision` (or newer): catch up or rebuild;
        a background `repair` counts the segments indexed."""
        key = _key(memory)
        indexed = self.index.indexed_revision(key)
        if indexed is not None and indexed >= memory.revision:
            if indexed == memory.revision:
                return
            # Ahead of `memory`: a change committed since it was read (by another thread), or an
            # index ahead of the database (restored backup?), which cannot be trusted.
            current = self.get_memory(memory.id)
            if indexed > current.revision:
                self.rebuild_index(current, progress, repair)
            elif indexed < current.revision:
                self._catch_up(_key(current), indexed, repair)
            return
        if indexed is None:
            self.rebuild_index(memory, progress, repair)
            return
        self._catch_up(key, indexed, repair)

    def _catch_up(self, key: MemoryKey, indexed: int, repair: IndexRepair | None = None) -> None:
        """Index every segment whose text changed after revision `indexed`."""
        with self.engine.connect() as conn:
            rows = conn.execution_options(yield_per=self.options.read_batch).execute(
                select(segments.c.id, segments.c.source).where(
                    segments.c.memory_id == key.id, segments.c.revision > indexed
                )
            )
            docs = (IndexDoc(r.id, r.source) for r in rows)
            self.index.catch_up(key, repair.counted(docs) if repair else docs)

    def rebuild_index(
        self, memory: Memory, progress: bool = False, repair: IndexRepair | None = None
    ) -> None:
        """Re-index the memory from the database (the source of truth); a background `repair`
        counts the segments indexed."""
        with self.engine.connect() as conn:
            # Read the revision and the rows in one snapshot-consistent pass.
            memory = memory_from_row(
                conn.execute(select(memories).where(memories.c.id == memory.id)).one()
            )
            rows = conn.execution_options(yield_per=self.options.read_batch).execute(
                select(segments.c.id, segments.c.source).where(segments.c.memory_id == memory.id)
            )
            docs = (
                IndexDoc(r.id, r.source)
                for r in tqdm(
                    rows,
                    total=memory.segment_count,
                    desc=f"indexing {memory.name}",
                    unit=" seg",
                    disable=not progress,
                )
            )
            self.index.rebuild(_key(memory), repair.counted(docs) if repair else docs)

    # ---- API keys -------------------------------------------------------------------------

    def create_api_key(self, name: str, scopes: dict[str, str]) -> tuple[ApiKey, str]:
        """A new key; the token is returned once and only its hash is stored."""
        name = (name or "").strip()
        if not name or len(name) > 200:
            raise InvalidInput("key name must be 1 to 200 characters", field="name")
        if not scopes:
            raise InvalidInput("a key needs at least one scope (memory name or *)", field="scopes")
        for memory_name, access in scopes.items():
            if access not in ACCESS_LEVELS:
                raise InvalidInput(
                    f"scope {memory_name!r}: access must be read or write, not {access!r}",
                    field="scopes",
                )
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        try:
            with self.engine.begin() as conn:
                # A revoked key's name may be reused.
                conn.execute(
                    delete(api_keys).where(
                        api_keys.c.name == name, api_keys.c.revoked_at.is_not(None)
                    )
                )
                conn.execute(
                    insert(api_keys).values(
                        name=name, key_hash=hash_token(token), scopes=dict(scopes), created_at=now()
                    )
                )
                row = conn.execute(select(api_keys).where(api_keys.c.name == name)).one()
        except IntegrityError as exc:
            raise Conflict(f"an API key named {name!r} already exists", field="name") from exc
        return api_key_from_row(row), token

    def verify_api_key(self, token: str) -> ApiKey:
        """The key `token` belongs to; Unauthorized if there is none or it was revoked.

        With `key_cache_s` a key verified within that many seconds is not looked up again: a
        revocation takes effect at once in this process and within `key_cache_s` in others."""
        if not token:
            raise Unauthorized("missing API key")
        digest = hash_token(token)
        ttl = self.options.key_cache_s
        if ttl > 0:
            cached = self._verified_keys.get(digest)
            if cached is not None and time.monotonic() - cached[0] < ttl:
                return cached[1]
        with self.engine.connect() as conn:
            row = conn.execute(
                select(api_keys).where(
                    api_keys.c.key_hash == digest, api_keys.c.revoked_at.is_(None)
                )
            ).first()
        if row is None:
            raise Unauthorized("invalid or revoked API key")
        key = api_key_from_row(row)
        if ttl > 0:
            if len(self._verified_keys) >= MAX_CACHED_KEYS:
                self._verified_keys.clear()
            self._verified_keys[digest] = (time.monotonic(), key)
        return key

    def revoke_api_key(self, name: str) -> None:
        with self.engine.begin() as conn:
            done = conn.execute(
                update(api_keys)
                .where(api_keys.c.name == name, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=now())
            ).rowcount
        self._verified_keys.clear()
        if not done:
            raise NotFound(f"no active API key named {name!r}", field="name")

    def list_api_keys(self) -> list[ApiKey]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.name)).all()
        return [api_key_from_row(row) for row in rows]

    # ---- statistics -----------------------------------------------------------------------

    def memory_stats(self, memory: Memory) -> dict[str, Any]:
        """Counts a user asks about: segments, analysed ones, total usage, date range."""
        with self.engine.connect() as conn:
            row = conn.execute(
                select(
                    func.count(segments.c.id),
                    func.count(segments.c.aligner_id),
                    func.coalesce(func.sum(segments.c.usage_count), 0),
                    func.min(segments.c.created_at),
                    func.max(segments.c.changed_at),
                ).where(segments.c.memory_id == memory.id)
            ).one()
        return {
            "segments": int(row[0]),
            "analysed": int(row[1]),
            "usage": int(row[2]),
            "first_created": row[3],
            "last_changed": row[4],
        }


class _PlannerStatistics:
    """Keeps PostgreSQL's table statistics in step with a large import's own uncommitted rows.

    Why: inside one long import transaction autovacuum cannot see the new rows, so the planner
    keeps believing a growing memory holds a handful of segments and looks its batches' pair
    hashes up through a scan of every segment of the memory (quadratic: 100k segments imported
    at ~1,100/s). ANALYZE inside the transaction samples the transaction's own rows; running it
    whenever the memory has doubled keeps the unique (memory_id, pair_hash) index in use at a
    logarithmic number of ANALYZE runs. SQLite needs nothing (its planner prefers the unique
    index on equality).
    """

    def __init__(self, conn: Connection, segments_now: int, first_at: int) -> None:
        self.conn = conn
        self.active = conn.dialect.name == "postgresql"
        self.next_at = max(first_at, 2 * segments_now)

    def grown_to(self, segments_now: int) -> None:
        if self.active and segments_now >= self.next_at:
            self.conn.execute(text(f"ANALYZE {segments_table.name}"))
            self.next_at = 2 * segments_now
