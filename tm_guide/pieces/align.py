"""Word alignment of translation memories at the subword level (eflomal, both directions, gdfa).

Two ways in:
- `MemoryAligner.align_memory`: a whole memory in one eflomal pass (after an import, or when the
  tokenizer changed), with progress;
- `MemoryAligner.align_segments`: a few new segments at once, in milliseconds, with eflomal priors
  estimated from the memory they joined, so that the very next query can use their pieces.

Every stored alignment records the tokenizer and aligner that made it; an alignment made under
another tokenizer is stale and is redone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tm_guide.errors import InvalidInput
from tm_guide.pieces.eflomal_runner import (
    EFLOMAL_VERSION,
    DirectionalLinks,
    EflomalOptions,
    run_eflomal,
)
from tm_guide.pieces.priors import AlignmentPriors
from tm_guide.pieces.symmetrize import Link, grow_diag_final_and
from tm_guide.pieces.tokenizer import Tokenizer

ALIGNER_ID = f"eflomal-{EFLOMAL_VERSION}+gdfa"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AlignOptions:
    """How memories are aligned.

    bulk:           eflomal settings for whole-memory runs (corpus-size-based iteration counts).
    incremental:    settings for a few segments aligned against the memory's priors; the priors
                    carry the statistics, so few sampling sweeps suffice.
    context:        settings for new segments aligned together with up to `context_pairs` pairs
                    of their memory, used while the memory has fewer than `min_prior_pairs`
                    aligned pairs (its priors would be too thin); the default iteration counts
                    for a few hundred pairs would take seconds.
    refresh_fraction: re-estimate a memory's priors once it grew by this fraction.
    store_batch:    analyses written per `set_analysis` call in bulk runs.
    cache_dir:      where priors are kept between processes (None: in memory only).
    base_priors:    align memories too thin for priors of their own (fewer than
                    `min_prior_pairs` pairs) with the tokenizer's priors, counted on the model's
                    training data (a bundle's alignment_priors.txt), where it has them: a new
                    memory's first segments then align well enough for their repair to trust.
    """

    bulk: EflomalOptions = field(default_factory=EflomalOptions)
    incremental: EflomalOptions = field(
        default_factory=lambda: EflomalOptions(samplers=1, iterations=(8, 8, 16))
    )
    context: EflomalOptions = field(
        default_factory=lambda: EflomalOptions(samplers=1, iterations=(10, 10, 20))
    )
    min_prior_pairs: int = 200
    context_pairs: int = 300
    refresh_fraction: float = 0.2
    store_batch: int = 2000
    cache_dir: Path | None = None
    base_priors: bool = True

    def __post_init__(self) -> None:
        if self.refresh_fraction < 0:
            raise InvalidInput("refresh_fraction must be >= 0", field="refresh_fraction")
        if self.min_prior_pairs < 1 or self.context_pairs < 0 or self.store_batch < 1:
            raise InvalidInput(
                "min_prior_pairs and store_batch must be >= 1, context_pairs >= 0",
                field="align_options",
            )


def priors_cache_dir(index_dir: Path) -> Path:
    """Where the CLI and the server keep alignment priors: beside the full-text index (not inside
    it, so an index rebuild leaves them alone)."""
    return index_dir.parent / f"{index_dir.name}-alignment-priors"


@dataclass
class AlignReport:
    memory: str
    mode: str  # "full", "stale" or "none"
    aligned: int
    seconds: float


def symmetrize(
    links: DirectionalLinks, source: Sequence[Sequence[str]], target: Sequence[Sequence[str]]
) -> list[list[Link]]:
    return [
        grow_diag_final_and(fwd, rev, len(src), len(trg))
        for fwd, rev, src, trg in zip(links.forward, links.reverse, source, target, strict=True)
    ]


def align_token_pairs(
    source: Sequence[Sequence[str]],
    target: Sequence[Sequence[str]],
    options: EflomalOptions,
    priors: AlignmentPriors | None = None,
) -> tuple[list[list[Link]], DirectionalLinks]:
    """Symmetrized alignments (and the directional ones they came from) for tokenized pairs."""
    links = run_eflomal(source, target, options, priors)
    return symmetrize(links, source, target), links


# (stage, done, total): how far aligning a memory got, for a job's progress
StageReport = Callable[[str, int, int], None]
REPORT_EVERY = 1000  # segments tokenized between two reports


def _no_report(stage: str, done: int, total: int) -> None:
    pass


class MemoryAligner:
    """Aligns the segments of a store's memories with one tokenizer; keeps priors per memory."""

    def __init__(self, store: Any, tokenizer: Tokenizer, options: AlignOptions | None = None):
        self.store = store
        self.tokenizer = tokenizer
        self.options = options or AlignOptions()
        # memory id -> (priors, the memory's segment count when they were estimated)
        self._priors: dict[int, tuple[AlignmentPriors, int]] = {}
        self._estimating: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()
        self._base: AlignmentPriors | None = None

    @property
    def aligner_id(self) -> str:
        return ALIGNER_ID

    def is_current(self, segment: Any) -> bool:
        """Analysed, by this tokenizer and this aligner."""
        return (
            segment.alignment is not None
            and segment.source_tokens is not None
            and segment.target_tokens is not None
            and segment.tokenizer_id == self.tokenizer.tokenizer_id
            and segment.aligner_id == self.aligner_id
        )

    # ---- whole memories -------------------------------------------------------------------

    def align_memory(
        self,
        memory: Any,
        mode: str = "auto",
        progress: bool = False,
        report: StageReport | None = None,
    ) -> AlignReport:
        """mode "full" realigns every segment in one pass; "stale" aligns only the segments without
        a current alignment, against the memory's priors; "auto" picks "full" when most of the
        memory is stale (an import, a new tokenizer) and "stale" otherwise. `report` is told
        each stage (tokenizing, aligning, storing) with how far it got."""
        if mode not in ("auto", "full", "stale"):
            raise InvalidInput(
                f"align mode must be auto, full or stale, not {mode!r}", field="mode"
            )
        started = time.perf_counter()
        segments = list(
            tqdm(
                self.store.iter_segments(memory),
                total=memory.segment_count,
                desc=f"reading {memory.name}",
                unit="seg",
                disable=not progress,
            )
        )
        stale = [segment for segment in segments if not self.is_current(segment)]
        if mode == "auto":
            current = len(segments) - len(stale)
            mostly_stale = len(stale) * 2 > len(segments)
            thin = current < self.options.min_prior_pairs
            mode = "full" if stale and (mostly_stale or thin) else "stale"
        if mode == "stale" and not stale:
            return AlignReport(memory.name, "none", 0, time.perf_counter() - started)
        report = report or _no_report
        if mode == "full":
            aligned = self._align_full(memory, segments, progress, report)
        else:
            report("aligning", 0, len(stale))
            aligned = len(self.align_segments(stale, progress=progress))
            report("aligning", aligned, len(stale))
        return AlignReport(memory.name, mode, aligned, time.perf_counter() - started)

    def _align_full(
        self, memory: Any, segments: list[Any], progress: bool, report: StageReport
    ) -> int:
        source, target = self._tokenize(segments, progress, report)
        if progress:
            tqdm.write(
                f"aligning {len(segments)} pairs of {memory.name} with eflomal (both directions)"
            )
        report("aligning", 0, len(segments))  # eflomal tells nothing until it is done
        thin = len(segments) < self.options.min_prior_pairs
        base = self.base_priors() if thin else None
        alignments, links = align_token_pairs(source, target, self.options.bulk, base)
        report("aligning", len(segments), len(segments))
        self._store(segments, source, target, alignments, progress, report)
        priors = AlignmentPriors.estimate(source, target, links.forward, links.reverse)
        # The basis is what was aligned, not the count of the caller's memory object, which
        # may predate the import that brought these segments in.
        self._remember_priors(memory, priors, basis=len(segments))
        return len(segments)

    # ---- a few segments -------------------------------------------------------------------

    def align_segments(self, segments: Sequence[Any], progress: bool = False) -> dict[int, Any]:
        """Align these segments now (grouped by memory) and store the results.

        Returns the stored analyses by segment id. Used when segments are added one at a time
        and by the piece builder when a retrieved segment has no current alignment.
        """
        by_memory: dict[int, list[Any]] = {}
        for segment in segments:
            by_memory.setdefault(segment.memory_id, []).append(segment)
        analyses: dict[int, Any] = {}
        for memory_id, group in by_memory.items():
            memory = self.store.get_memory(memory_id)
            analyses.update(self._align_group(memory, group, progress))
        return analyses

    def _align_group(self, memory: Any, segments: list[Any], progress: bool) -> dict[int, Any]:
        source, target = self._tokenize(segments, progress and len(segments) > 1000)
        priors = self.priors_for(memory)
        if priors is not None:
            alignments, _ = align_token_pairs(source, target, self.options.incremental, priors)
            stored = self._store(segments, source, target, alignments, progress)
            self._grow_priors(memory, priors, source, target, alignments)
            return stored
        # Too few aligned pairs for priors: align together with (a sample of) the memory itself.
        wanted = {segment.id for segment in segments}
        context = [
            segment
            for segment in islice(
                self.store.iter_segments(memory), self.options.context_pairs + len(wanted)
            )
            if segment.id not in wanted
        ][: self.options.context_pairs]
        ctx_source, ctx_target = self._tokenize(context, False)
        alignments, _ = align_token_pairs(
            source + ctx_source, target + ctx_target, self.options.context, self.base_priors()
        )
        stored = self._store(segments, source, target, alignments[: len(segments)], progress)
        if memory.segment_count <= len(context) + len(segments):
            # The context was the whole (small) memory: its alignments are as good as new too.
            self._store(context, ctx_source, ctx_target, alignments[len(segments) :], False)
        return stored

    # ---- priors ---------------------------------------------------------------------------

    def base_priors(self) -> AlignmentPriors | None:
        """The tokenizer's priors (AlignOptions.base_priors), read once; None without them."""
        path = self.tokenizer.alignment_priors_path
        if not self.options.base_priors or path is None:
            return None
        with self._lock:
            if self._base is None:
                self._base = AlignmentPriors.load(path)
            return self._base

    def priors_for(self, memory: Any) -> AlignmentPriors | None:
        """The memory's priors, re-estimated from its stored alignments once it grew by
        `refresh_fraction` since they were estimated; None while it has too few aligned pairs."""
        priors = self._current_priors(memory)
        if priors is None:
            with self._estimation_lock(memory.id):
                # Concurrent adds to a memory whose priors are due wait for one estimation
                # (each reads the whole memory) instead of all running their own.
                priors = self._current_priors(memory)
                if priors is None:
                    priors = self._estimate_from_store(memory)
                    self._remember_priors(
                        memory,
                        priors,
                        basis=memory.segment_count,
                        persist=priors.pairs >= self.options.min_prior_pairs,
                    )
        return priors if priors.pairs >= self.options.min_prior_pairs else None

    def _grow_priors(
        self,
        memory: Any,
        priors: AlignmentPriors,
        source: list[list[str]],
        target: list[list[str]],
        alignments: list[list[Link]],
    ) -> None:
        """Count newly aligned segments into their memory's priors (as a re-estimation from the
        store would: symmetrized links for both directions), so that a memory growing by single
        adds keeps fresh priors without rereading itself."""
        priors.add(AlignmentPriors.estimate(source, target, alignments, alignments))
        with self._lock:
            cached = self._priors.get(memory.id)
            if cached is not None and cached[0] is priors:
                self._priors[memory.id] = (priors, cached[1] + len(source))

    def _current_priors(self, memory: Any) -> AlignmentPriors | None:
        """Known priors that are still fresh for the memory's size, or None."""
        with self._lock:
            cached = self._priors.get(memory.id)
        if cached is None:
            cached = self._load_cached(memory)
        if cached is not None:
            priors, basis = cached
            if memory.segment_count <= basis * (1 + self.options.refresh_fraction):
                return priors
        return None

    def _estimation_lock(self, memory_id: int) -> threading.Lock:
        with self._lock:
            return self._estimating.setdefault(memory_id, threading.Lock())

    def _estimate_from_store(self, memory: Any) -> AlignmentPriors:
        source: list[list[str]] = []
        target: list[list[str]] = []
        links: list[list[Link]] = []
        for segment in self.store.iter_segments(memory):
            if self.is_current(segment):
                source.append(segment.source_tokens)
                target.append(segment.target_tokens)
                links.append([(int(s), int(t)) for s, t in segment.alignment])
        # Only the symmetrized links are stored: they stand in for both directions.
        return AlignmentPriors.estimate(source, target, links, links)

    def _cache_path(self, memory: Any) -> Path | None:
        if self.options.cache_dir is None:
            return None
        tokenizer = self.tokenizer.tokenizer_id.replace(":", "-").replace("/", "-")
        return self.options.cache_dir / f"priors-{memory.id}-{tokenizer}-{ALIGNER_ID}.txt"

    def _load_cached(self, memory: Any) -> tuple[AlignmentPriors, int] | None:
        path = self._cache_path(memory)
        if path is None or not path.is_file():
            return None
        try:
            priors = AlignmentPriors.load(path)
        except (OSError, ValueError) as exc:
            logger.warning("ignoring unreadable priors cache %s: %s", path, exc)
            return None
        with self._lock:
            self._priors[memory.id] = (priors, priors.pairs)
        return priors, priors.pairs

    def _remember_priors(
        self, memory: Any, priors: AlignmentPriors, basis: int, persist: bool = True
    ) -> None:
        """Keep priors estimated when the memory held `basis` segments."""
        with self._lock:
            self._priors[memory.id] = (priors, basis)
        path = self._cache_path(memory)
        if path is not None and persist:
            path.parent.mkdir(parents=True, exist_ok=True)
            priors.save(path)

    # ---- helpers --------------------------------------------------------------------------

    def _tokenize(
        self, segments: Iterable[Any], progress: bool, report: StageReport | None = None
    ) -> tuple[list[list[str]], list[list[str]]]:
        source: list[list[str]] = []
        target: list[list[str]] = []
        segments = list(segments)
        report = report or _no_report
        for done, segment in enumerate(
            tqdm(segments, desc="tokenizing", unit="seg", disable=not progress)
        ):
            if done % REPORT_EVERY == 0:
                report("tokenizing", done, len(segments))
            source.append(self.tokenizer.encode_source(segment.source))
            target.append(self.tokenizer.encode_target(segment.target))
        report("tokenizing", len(segments), len(segments))
        return source, target

    def _store(
        self,
        segments: Sequence[Any],
        source: Sequence[list[str]],
        target: Sequence[list[str]],
        alignments: Sequence[list[Link]],
        progress: bool,
        report: StageReport | None = None,
    ) -> dict[int, Any]:
        from tm_guide.store import SegmentAnalysis

        analyses = {
            segment.id: SegmentAnalysis(
                segment_id=segment.id,
                source_tokens=list(src),
                target_tokens=list(trg),
                alignment=list(links),
                tokenizer_id=self.tokenizer.tokenizer_id,
                aligner_id=ALIGNER_ID,
            )
            for segment, src, trg, links in zip(segments, source, target, alignments, strict=True)
        }
        items = list(analyses.values())
        batch = self.options.store_batch
        with tqdm(total=len(items), desc="storing", unit="seg", disable=not progress) as bar:
            for start in range(0, len(items), batch):
                chunk = items[start : start + batch]
                self.store.set_analysis(chunk)
                bar.update(len(chunk))
                if report is not None:
                    report("storing", start + len(chunk), len(items))
        return analyses


class WordAligner:
    """Aligns the words of one sentence pair (tm_guide.text.placement.WordAligner): each word
    split by the tokenizer, the pieces aligned with its priors in a few sweeps, as a new
    segment is (AlignOptions.incremental), and a piece link taken as a link of their words."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        priors: AlignmentPriors,
        options: EflomalOptions | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.priors = priors
        self.options = options or AlignOptions().incremental

    def __call__(self, source: Sequence[str], target: Sequence[str]) -> list[tuple[int, int]]:
        source_pieces, source_words = self._split(source, self.tokenizer.encode_source)
        target_pieces, target_words = self._split(target, self.tokenizer.encode_target)
        if not source_pieces or not target_pieces:
            return []
        alignments, _ = align_token_pairs(
            [source_pieces], [target_pieces], self.options, self.priors
        )
        return sorted({(source_words[s], target_words[t]) for s, t in alignments[0]})

    @staticmethod
    def _split(
        words: Sequence[str], encode: Callable[[str], list[str]]
    ) -> tuple[list[str], list[int]]:
        pieces: list[str] = []
        owners: list[int] = []
        for k, word in enumerate(words):
            for piece in encode(word):
                pieces.append(piece)
                owners.append(k)
        return pieces, owners
