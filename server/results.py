"""What a suggestion request answers, as typed values: the seam between the core (retrieval,
pieces, decoding, the text pipeline) and the protocols that render it.

Each protocol reads these objects and writes its vendor's shape; `/v1` writes `to_json()`,
which is the document's `SuggestResponse` (server/openapi.yaml). As CTranslate2's
`TranslationResult` and sacrebleu's `Score`, they are plain frozen values: building one never
touches the store or the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tm_guide.pieces.choice import Choice
from tm_guide.server.shapes import match_json


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


@dataclass(frozen=True)
class SegmentRef:
    """A TM segment a piece or a repair came from, and the similarity (eq. 9) of its source to
    the input (None where the retrieval did not score it)."""

    id: int
    memory: str | None
    tuid: str | None
    similarity: float | None

    def to_json(self, id_key: str = "id") -> dict[str, Any]:
        return {
            id_key: self.id,
            "memory": self.memory,
            "tuid": self.tuid,
            "similarity": _rounded(self.similarity),
        }


@dataclass(frozen=True)
class PieceUse:
    """A translation piece found in the output: its target tokens, the token position in its
    sentence, the characters of the text it produced (None: only a space, unplaceable, or a
    repeat the text writes once), its
    score D_X (eq. 8) and the segments it came from."""

    text: str
    tokens: tuple[str, ...]
    position: int
    span: tuple[int, int] | None
    score: float
    segments: tuple[SegmentRef, ...]

    def moved(self, offset: int) -> PieceUse:
        """The piece with its span `offset` characters further on (its sentence's translation
        placed in a longer text)."""
        if self.span is None or not offset:
            return self
        return replace(self, span=(self.span[0] + offset, self.span[1] + offset))

    def remapped(self, move: Callable[[int], int]) -> PieceUse:
        """The piece with each end of its span where `move` takes it (the text around it
        edited: a stand-in unmasked, a lost one put back)."""
        if self.span is None:
            return self
        return replace(self, span=(move(self.span[0]), move(self.span[1])))

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": list(self.tokens),
            "position": self.position,
            "span": list(self.span) if self.span is not None else None,
            "score": round(self.score, 4),
            "segments": [segment.to_json() for segment in self.segments],
        }


@dataclass(frozen=True)
class TermUse:
    """A glossary entry whose source term occurs in the input, and whether the text holds its
    target as written."""

    source: str
    target: str
    applied: bool

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "applied": self.applied}


@dataclass(frozen=True)
class VerbatimMatch:
    """The TM match whose target is the suggestion's text (origin tm)."""

    segment_id: int
    memory: str | None
    match: int

    def to_json(self) -> dict[str, Any]:
        return {"segment_id": self.segment_id, "memory": self.memory, "match": self.match}


@dataclass(frozen=True)
class Translation:
    """The translation of a sentence or a segment.

    `text` is the suggestion: the guided translation (origin mt), or the target of a verbatim
    TM match (origin tm), with the guided translation kept in `mt_text`. Scores are summed over
    the segment's sentences; `repaired` and `chosen` are given for a segment of one sentence.
    """

    text: str
    unguided: str | None
    guided: bool
    engine: str | None
    model_score: float
    reward: float
    best_match_similarity: float | None
    repaired: SegmentRef | None = None
    chosen: Choice | None = None
    pieces_used: tuple[PieceUse, ...] = ()
    glossary: tuple[TermUse, ...] = ()
    # how many sentences the model translated (0: nothing to translate)
    sentences: int = 1
    # the level decoding was cut down to by the deadline (batching.DEGRADED_LEVELS); None: none
    degraded: str | None = None
    # how the non-translatables were kept: model, masked, runs, or None where there were none
    non_translatables: str | None = None
    origin: str = "mt"
    mt_text: str | None = None
    tm_match: VerbatimMatch | None = None

    @classmethod
    def verbatim(cls, text: str) -> Translation:
        """A text with nothing to translate (no letter or digit, or non-translatables only):
        itself."""
        return cls(
            text=text,
            unguided=text,
            guided=False,
            engine=None,
            model_score=0.0,
            reward=0.0,
            best_match_similarity=None,
            sentences=0,
        )

    def with_text(self, text: str, pieces: Sequence[PieceUse] | None = None) -> Translation:
        """The translation with its text (and the pieces' spans in it) changed."""
        return replace(
            self, text=text, pieces_used=tuple(pieces) if pieces is not None else self.pieces_used
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "origin": self.origin,
            "mt_text": self.mt_text if self.mt_text is not None else self.text,
            "tm_match": self.tm_match.to_json() if self.tm_match is not None else None,
            "unguided": self.unguided,
            "guided": self.guided,
            "engine": self.engine,
            "model_score": round(self.model_score, 4),
            "reward": round(self.reward, 4),
            "degraded": self.degraded,
            "glossary": [term.to_json() for term in self.glossary],
            "non_translatables": self.non_translatables,
            "sentences": self.sentences,
            "best_match_similarity": self.best_match_similarity,
            "repaired": self.repaired.to_json("segment_id") if self.repaired else None,
            "chosen": self.chosen.to_dict() if self.chosen is not None else None,
            "pieces_used": [piece.to_json() for piece in self.pieces_used],
        }


STAGES = ("retrieval", "pieces", "queue", "decoding")


@dataclass(frozen=True)
class Timing:
    """Milliseconds per stage of one segment (None: the stage did not run): retrieval, piece
    collection, the wait for the decoding thread, decoding; `total` is their sum."""

    retrieval: float | None = None
    pieces: float | None = None
    queue: float | None = None
    decoding: float | None = None

    def stages(self) -> Iterator[tuple[str, float]]:
        for stage in STAGES:
            value = getattr(self, stage)
            if value is not None:
                yield stage, value

    @property
    def total(self) -> float:
        return round(sum(value for _, value in self.stages()), 3)

    def __add__(self, other: Timing) -> Timing:
        """Two sentences' stages added up, the queue wait counted once (they wait together)."""

        def added(stage: str) -> float | None:
            mine, theirs = getattr(self, stage), getattr(other, stage)
            if mine is None or theirs is None:
                return mine if theirs is None else theirs
            return round(max(mine, theirs) if stage == "queue" else mine + theirs, 3)

        return Timing(**{stage: added(stage) for stage in STAGES})

    @classmethod
    def summed(cls, timings: Sequence[Timing]) -> Timing:
        total = cls()
        for one in timings:
            total = total + one
        return total

    def to_json(self) -> dict[str, float]:
        """The stages that ran, and their total where decoding ran."""
        stages = dict(self.stages())
        return stages if self.decoding is None else {**stages, "total": self.total}


@dataclass(frozen=True)
class Match:
    """A fuzzy match: a TM segment (tm_guide.store.types.Segment), its CAT match percentage
    after its memory's penalty, and its memory's name."""

    segment: Any
    percent: int
    memory: str | None

    @property
    def target(self) -> str:
        return str(self.segment.target)

    def to_json(self) -> dict[str, Any]:
        return match_json(self.segment, self.percent, self.memory)


@dataclass(frozen=True)
class Suggestion:
    """One segment's answer: its fuzzy matches (best first), its translation (None: matches
    only were asked for) and its stage timings."""

    source: str
    matches: tuple[Match, ...]
    translation: Translation | None
    timings: Timing

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "matches": [match.to_json() for match in self.matches],
            "translation": self.translation.to_json() if self.translation is not None else None,
            "timings_ms": self.timings.to_json(),
        }


@dataclass(frozen=True)
class MemoryUse:
    """A memory a request searched: its revision when it answered, and its penalty."""

    name: str
    revision: int
    penalty: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "revision": self.revision, "penalty": self.penalty}


@dataclass(frozen=True)
class Suggestions:
    """A request's answer: a Suggestion per segment, in order; the model that translated them
    (tm_guide.server.translation.model_info; None when nothing was translated); the memories;
    and the request's own time in milliseconds."""

    results: tuple[Suggestion, ...]
    model: dict[str, Any] | None
    memories: tuple[MemoryUse, ...]
    total_ms: float

    def translations(self) -> Iterator[Translation]:
        for result in self.results:
            if result.translation is not None:
                yield result.translation

    def to_json(self) -> dict[str, Any]:
        return {
            "results": [result.to_json() for result in self.results],
            "model": self.model,
            "memories": [memory.to_json() for memory in self.memories],
            "timings_ms": {"total": round(self.total_ms, 3)},
        }
