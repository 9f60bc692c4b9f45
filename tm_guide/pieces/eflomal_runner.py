"""Run eflomal on token sequences: both directions in one call, optionally with Dirichlet priors.

We use eflomal's own file preparation (`to_eflomal_text_file`, `to_eflomal_priors_file`) and its
binary wrapper (`eflomal.cython.align`), but filter the priors to the vocabulary of the batch first:
for a single new segment that keeps alignment well under a second even when the memory is large.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tm_guide.pieces.priors import AlignmentPriors
from tm_guide.pieces.symmetrize import Link, parse_links

EFLOMAL_VERSION = "2.0"


@dataclass(frozen=True)
class EflomalOptions:
    """eflomal's knobs. `iterations` (IBM1, HMM, fertility) overrides the corpus-size-based default,
    which for a handful of sentences is thousands of sweeps: incremental alignment sets it low."""

    model: int = 3
    samplers: int = 3
    null_prior: float = 0.2
    relative_iterations: float = 1.0
    iterations: tuple[int, int, int] | None = None


@dataclass
class DirectionalLinks:
    forward: list[list[Link]]
    reverse: list[list[Link]]


def run_eflomal(
    source: Sequence[Sequence[str]],
    target: Sequence[Sequence[str]],
    options: EflomalOptions,
    priors: AlignmentPriors | None = None,
) -> DirectionalLinks:
    """Align sentence pairs; pairs with an empty side get no links (eflomal rejects empty lines)."""
    # imported here: aligning is what needs eflomal, and it has no wheel for every platform
    import eflomal
    from eflomal.cython import align as eflomal_align

    if len(source) != len(target):
        raise ValueError(f"{len(source)} source sentences but {len(target)} target sentences")
    keep = [i for i in range(len(source)) if source[i] and target[i]]
    forward: list[list[Link]] = [[] for _ in source]
    reverse: list[list[Link]] = [[] for _ in source]
    if not keep:
        return DirectionalLinks(forward, reverse)
    src_lines = [" ".join(source[i]) for i in keep]
    trg_lines = [" ".join(target[i]) for i in keep]
    with tempfile.TemporaryDirectory(prefix="tm-guide-eflomal-") as tmp:
        work = Path(tmp)
        with open(work / "src", "wb") as srcf, open(work / "trg", "wb") as trgf:
            src_index, _, _ = eflomal.to_eflomal_text_file(src_lines, srcf)
            trg_index, _, _ = eflomal.to_eflomal_text_file(trg_lines, trgf)
        priors_path = None
        if priors is not None and not priors.is_empty():
            priors_path = work / "priors"
            selected = priors.select(src_lines, trg_lines)
            with open(priors_path, "w", encoding="utf-8") as priorsf:
                eflomal.to_eflomal_priors_file(selected, src_index, trg_index, priorsf)
        eflomal_align(
            str(work / "src"),
            str(work / "trg"),
            links_filename_fwd=str(work / "fwd"),
            links_filename_rev=str(work / "rev"),
            priors_filename=str(priors_path) if priors_path else None,
            model=options.model,
            n_iterations=options.iterations,
            n_samplers=options.samplers,
            quiet=True,
            rel_iterations=options.relative_iterations,
            null_prior=options.null_prior,
        )
        fwd_lines = (work / "fwd").read_text(encoding="utf-8").splitlines()
        rev_lines = (work / "rev").read_text(encoding="utf-8").splitlines()
    if len(fwd_lines) != len(keep) or len(rev_lines) != len(keep):
        raise RuntimeError(
            f"eflomal wrote {len(fwd_lines)}/{len(rev_lines)} alignment lines for {len(keep)} pairs"
        )
    for row, i in enumerate(keep):
        forward[i] = parse_links(fwd_lines[row])
        reverse[i] = parse_links(rev_lines[row])
    return DirectionalLinks(forward, reverse)
