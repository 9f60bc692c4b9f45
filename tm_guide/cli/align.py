"""`tm-guide align MEMORY`: word-align a memory's segments for translation pieces, with progress."""

from __future__ import annotations

import argparse
from pathlib import Path

from tm_guide.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "align",
        help="word-align a memory (eflomal + grow-diag-final-and) for translation pieces",
        description="Tokenize every segment of MEMORY with the model's SentencePiece models and "
        "align source and target pieces. By default only a memory that is mostly unaligned (an "
        "import, another model) is realigned as a whole; otherwise the segments without a current "
        "alignment are aligned against the priors of the rest.",
    )
    parser.add_argument("memory", help="memory name or id")
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="model bundle whose tokenizer to use (default: $TM_GUIDE_MODEL or the demo model)",
    )
    parser.add_argument(
        "--mode",
        choices=("auto", "full", "stale"),
        default="auto",
        help="full: realign everything; stale: only segments without a current alignment",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=align_command)


def align_command(args: argparse.Namespace) -> int:
    from tm_guide.model import Bundle
    from tm_guide.pieces.align import AlignOptions, MemoryAligner, priors_cache_dir
    from tm_guide.store import Store

    settings = Settings.from_env(args.db)
    bundle = Bundle.load(args.model if args.model is not None else settings.model_path)
    store = Store.open(settings.db_url, settings.index_dir)
    try:
        memory = store.get_memory(args.memory)
        aligner = MemoryAligner(
            store, bundle, AlignOptions(cache_dir=priors_cache_dir(settings.index_dir))
        )
        report = aligner.align_memory(memory, mode=args.mode, progress=not args.quiet)
    finally:
        store.close()
    if report.mode == "none":
        print(f"{report.memory}: every segment already aligned with this tokenizer")
    else:
        print(
            f"{report.memory}: aligned {report.aligned} segments ({report.mode}) "
            f"in {report.seconds:.1f} s"
        )
    return 0
