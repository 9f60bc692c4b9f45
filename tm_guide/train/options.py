"""Options of a training run, in one place so a run can be repeated exactly."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class ModelShape:
    """Transformer size; defaults fit a ~2 hour run on 2 CPU cores."""

    layers: int = 3
    d_model: int = 256
    heads: int = 4
    ffn: int = 1024
    dropout: float = 0.1
    max_length: int = 128


@dataclass(frozen=True)
class TrainOptions:
    train_tsv: Path
    dev_tsv: Path
    test_tsv: Path
    run_dir: Path
    bundle_dir: Path
    deadline: datetime  # UTC; training stops here, then the final bundle is written
    shape: ModelShape = ModelShape()
    vocab_size: int = 8000
    batch_tokens: int = 4000
    peak_lr: float = 1e-3
    warmup_steps: int = 400
    label_smoothing: float = 0.1
    seed: int = 13
    threads: int = 2
    checkpoint_minutes: float = 10.0
    export_minutes: float = 30.0  # 0: only the final export
    export_test_limit: int = 500  # test sentences scored in the mid-way exports (all at the end)
    average_last: int = 3
    resume: bool = False
    init_from: Path | None = None  # a bundle whose weights and SentencePiece model start the run
    # byte fallback in the SentencePiece model (its 256 byte pieces appended to a warm start's
    # vocabulary, new embedding rows): no character ever becomes <unk>, and the model is never
    # let to write <unk>
    byte_fallback: bool = False
    rewarm_steps: int = 100  # after a warm start: fresh optimizer moments, so ramp the rate again
    name: str = "demo-en-de"
    source_lang: str = "en"
    target_lang: str = "de"
