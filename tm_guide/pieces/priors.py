"""Alignment priors estimated from an aligned memory, so a new segment aligns like its memory.

eflomal takes Dirichlet priors (lexical pair counts, HMM jump counts, fertility counts); with them a
single sentence can be aligned on its own in milliseconds. The counts are those of eflomal's
`calculate_priors`; we keep the lexical ones indexed by source word so that the priors for a small
batch are picked without a pass over the whole table.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tm_guide.pieces.symmetrize import Link, format_links

PriorsTuple = tuple[
    list[tuple[str, str, float]],
    dict[int, float],
    dict[int, float],
    list[tuple[str, int, float]],
    list[tuple[str, int, float]],
]


@dataclass
class AlignmentPriors:
    lexical: dict[str, list[tuple[str, str, float]]] = field(default_factory=dict)
    hmm_forward: dict[int, float] = field(default_factory=dict)
    hmm_reverse: dict[int, float] = field(default_factory=dict)
    fertility_forward: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)
    fertility_reverse: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)
    pairs: int = 0  # how many aligned pairs the counts come from
    # `add` may run while another thread selects (a background alignment beside a query's)
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    @classmethod
    def estimate(
        cls,
        source: Iterable[Sequence[str]],
        target: Iterable[Sequence[str]],
        forward: Iterable[Sequence[Link]],
        reverse: Iterable[Sequence[Link]],
    ) -> AlignmentPriors:
        """Counts from aligned pairs. With only a symmetrized alignment at hand, pass it as both
        directions: the lexical and fertility counts are then those of the symmetrized links."""
        src_lines: list[str] = []
        trg_lines: list[str] = []
        fwd_lines: list[str] = []
        rev_lines: list[str] = []
        for src, trg, fwd, rev in zip(source, target, forward, reverse, strict=True):
            if not src or not trg:
                continue
            src_lines.append(" ".join(src))
            trg_lines.append(" ".join(trg))
            fwd_lines.append(format_links(fwd))
            rev_lines.append(format_links(rev))
        import eflomal  # aligning is what needs it (no wheel for every platform)

        lex, hmmf, hmmr, ferf, ferr = eflomal.calculate_priors(
            src_lines, trg_lines, fwd_lines, rev_lines
        )
        return cls.from_counts(lex, hmmf, hmmr, ferf, ferr, pairs=len(src_lines))

    @classmethod
    def from_counts(
        cls,
        lex: Counter[Any],
        hmmf: Counter[Any],
        hmmr: Counter[Any],
        ferf: Counter[Any],
        ferr: Counter[Any],
        pairs: int,
    ) -> AlignmentPriors:
        lexical: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
        for (src, trg), alpha in sorted(lex.items()):
            lexical[src.lower()].append((src, trg, float(alpha)))
        fert_f: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
        for (src, fert), alpha in sorted(ferf.items()):
            fert_f[src.lower()].append((src, int(fert), float(alpha)))
        fert_r: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
        for (trg, fert), alpha in sorted(ferr.items()):
            fert_r[trg.lower()].append((trg, int(fert), float(alpha)))
        return cls(
            lexical=dict(lexical),
            hmm_forward={int(k): float(v) for k, v in sorted(hmmf.items())},
            hmm_reverse={int(k): float(v) for k, v in sorted(hmmr.items())},
            fertility_forward=dict(fert_f),
            fertility_reverse=dict(fert_r),
            pairs=pairs,
        )

    def add(self, other: AlignmentPriors) -> None:
        """Add another estimate's counts to these (the counts are sums over aligned pairs), so
        that segments aligned one batch at a time join their memory's priors without a pass over
        the memory."""
        with self._lock:
            _add_entries(self.lexical, other.lexical)
            _add_entries(self.fertility_forward, other.fertility_forward)
            _add_entries(self.fertility_reverse, other.fertility_reverse)
            for mine, theirs in (
                (self.hmm_forward, other.hmm_forward),
                (self.hmm_reverse, other.hmm_reverse),
            ):
                for jump, alpha in theirs.items():
                    mine[jump] = mine.get(jump, 0.0) + alpha
            self.pairs += other.pairs

    def is_empty(self) -> bool:
        return not self.lexical and not self.hmm_forward

    def select(self, source_lines: Sequence[str], target_lines: Sequence[str]) -> PriorsTuple:
        """The priors that concern these sentences, in the shape `eflomal.read_priors` returns."""
        src_vocab = {word.lower() for line in source_lines for word in line.split()}
        trg_vocab = {word.lower() for line in target_lines for word in line.split()}
        with self._lock:
            return self._select(src_vocab, trg_vocab)

    def _select(self, src_vocab: set[str], trg_vocab: set[str]) -> PriorsTuple:
        lexical = [
            entry
            for word in src_vocab
            for entry in self.lexical.get(word, ())
            if entry[1].lower() in trg_vocab
        ]
        ferf = [entry for word in src_vocab for entry in self.fertility_forward.get(word, ())]
        ferr = [entry for word in trg_vocab for entry in self.fertility_reverse.get(word, ())]
        return lexical, dict(self.hmm_forward), dict(self.hmm_reverse), ferf, ferr

    def save(self, path: Path) -> None:
        """eflomal's priors text format (`eflomal-makepriors`) after a line with the pair count."""
        # A unique temporary name: concurrent writers (server threads, workers) must not share one.
        fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        tmp = Path(tmp_name)
        with os.fdopen(fd, "w", encoding="utf-8") as out, self._lock:
            print(f"#PAIRS\t{self.pairs}", file=out)
            lex = Counter({(s, t): a for entries in self.lexical.values() for s, t, a in entries})
            ferf = Counter(
                {(w, f): a for entries in self.fertility_forward.values() for w, f, a in entries}
            )
            ferr = Counter(
                {(w, f): a for entries in self.fertility_reverse.values() for w, f, a in entries}
            )
            import eflomal  # aligning is what needs it (no wheel for every platform)

            eflomal.write_priors(
                out, lex, Counter(self.hmm_forward), Counter(self.hmm_reverse), ferf, ferr
            )
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> AlignmentPriors:
        with open(path, encoding="utf-8") as infile:
            header = infile.readline().rstrip("\n").split("\t")
            if len(header) != 2 or header[0] != "#PAIRS":
                raise ValueError(f"{path}: not a tm-guide priors file (first line {header!r})")
            import eflomal  # aligning is what needs it (no wheel for every platform)

            lex_list, hmmf, hmmr, ferf_list, ferr_list = eflomal.read_priors(infile)
        return cls.from_counts(
            Counter({(s, t): a for s, t, a in lex_list}),
            Counter(hmmf),
            Counter(hmmr),
            Counter({(w, f): a for w, f, a in ferf_list}),
            Counter({(w, f): a for w, f, a in ferr_list}),
            pairs=int(header[1]),
        )


def _add_entries(
    mine: dict[str, list[tuple[str, Any, float]]], theirs: dict[str, list[tuple[str, Any, float]]]
) -> None:
    """Sum `theirs` into `mine`: (word, partner or fertility, alpha) entries grouped by the
    lowercased word; entries with the same first two fields add their alphas."""
    for word, entries in theirs.items():
        have = mine.setdefault(word, [])
        position = {(first, second): i for i, (first, second, _) in enumerate(have)}
        for first, second, alpha in entries:
            i = position.get((first, second))
            if i is None:
                position[(first, second)] = len(have)
                have.append((first, second, alpha))
            else:
                have[i] = (first, second, have[i][2] + alpha)
