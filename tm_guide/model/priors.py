"""A bundle's alignment priors: eflomal's counts over pairs of the model's training data.

A memory aligns its segments against its own priors once it holds enough aligned pairs
(tm_guide.pieces.align). Before that, a new memory of a few segments gives eflomal nothing to
learn from, and its alignments are close to random: "document" aligned to "zu", so that a
repair keeps the stale "Dokument". Counts from the model's own training data, shipped in the
bundle as `alignment_priors.txt`, stand in until the memory has its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import TypeVar

from tm_guide.errors import InvalidInput
from tm_guide.formats.parallel import read_tsv
from tm_guide.model.bundle import Bundle
from tm_guide.model.card import ALIGNMENT_PRIORS, ModelCard, checksum_files
from tm_guide.pieces.align import align_token_pairs
from tm_guide.pieces.eflomal_runner import EflomalOptions
from tm_guide.pieces.priors import AlignmentPriors

T = TypeVar("T")


@dataclass(frozen=True)
class PriorsOptions:
    """corpus: a TSV of pairs as `tm-guide import` reads one (the training corpus, shuffled;
    tm_guide.formats.parallel); pairs: how
    many of its first pairs are aligned; min_count: lexical and fertility counts below this are
    dropped (rare pairs say little and make the file large); eflomal: the alignment run."""

    corpus: Path
    pairs: int = 100_000
    min_count: float = 2.0
    eflomal: EflomalOptions = field(default_factory=EflomalOptions)

    def __post_init__(self) -> None:
        if self.pairs < 1 or self.min_count < 0:
            raise InvalidInput("pairs must be >= 1 and min_count >= 0", field="priors")


@dataclass(frozen=True)
class PriorsReport:
    path: Path
    pairs: int
    lexical_entries: int
    size_bytes: int


def estimate(bundle: Bundle, options: PriorsOptions) -> AlignmentPriors:
    """The priors of `options.pairs` corpus pairs, tokenized as the bundle tokenizes memories."""
    source: list[list[str]] = []
    target: list[list[str]] = []
    card = bundle.card
    for record in islice(
        read_tsv(options.corpus, card.source_lang, card.target_lang), options.pairs
    ):
        source.append(bundle.encode_source(record.source))
        target.append(bundle.encode_target(record.target))
    if not source:
        raise InvalidInput(f"{options.corpus}: no source<TAB>target pairs", field="corpus")
    _, links = align_token_pairs(source, target, options.eflomal)
    priors = AlignmentPriors.estimate(source, target, links.forward, links.reverse)
    return pruned(priors, options.min_count)


def pruned(priors: AlignmentPriors, min_count: float) -> AlignmentPriors:
    """The priors without the lexical and fertility counts below `min_count`."""
    return AlignmentPriors(
        lexical=_strong(priors.lexical, min_count),
        hmm_forward=dict(priors.hmm_forward),
        hmm_reverse=dict(priors.hmm_reverse),
        fertility_forward=_strong(priors.fertility_forward, min_count),
        fertility_reverse=_strong(priors.fertility_reverse, min_count),
        pairs=priors.pairs,
    )


def _strong(
    entries: dict[str, list[tuple[str, T, float]]], min_count: float
) -> dict[str, list[tuple[str, T, float]]]:
    out = {}
    for key, values in entries.items():
        strong = [entry for entry in values if entry[2] >= min_count]
        if strong:
            out[key] = strong
    return out


def write_bundle_priors(bundle_dir: Path, priors: AlignmentPriors) -> PriorsReport:
    """Save the priors into the bundle and record their checksum in its card."""
    path = bundle_dir / ALIGNMENT_PRIORS
    priors.save(path)
    card = ModelCard.read(bundle_dir)
    replace(card, files=checksum_files(bundle_dir)).write(bundle_dir)
    entries = sum(len(values) for values in priors.lexical.values())
    return PriorsReport(path, priors.pairs, entries, path.stat().st_size)
