"""A domain's dev set with its TM, as the benches that translate through the server's path use
them: the bundled model, the dev TSV, and the TM imported and aligned once into
<domain>/eval.sqlite (as `tm-guide eval --db` keeps it). The domains are folders of
bench/corpus/data (bench/corpus/README.md)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATA = REPO / "bench" / "corpus" / "data"


@contextmanager
def dev_memory(domain: str) -> Iterator[tuple[Any, Any, Any, Any]]:
    """(bundle, dev set, store, memory) for `domain`; SystemExit naming the missing dev set."""
    from tm_guide.config import BUNDLED_MODEL
    from tm_guide.evaluation.runner import open_tm
    from tm_guide.evaluation.testset import read_tsv
    from tm_guide.model import Bundle

    folder = DATA / domain
    if not (folder / "dev.tsv").exists():
        raise SystemExit(f"no dev set at {folder}: build it (bench/corpus/README.md)")
    bundle = Bundle.load(BUNDLED_MODEL)
    dev = read_tsv(folder / "dev.tsv")
    db = f"sqlite:///{folder / 'eval.sqlite'}"
    with open_tm(str(folder / "tm.tsv"), db, bundle, progress=False) as (store, memory):
        yield bundle, dev, store, memory
