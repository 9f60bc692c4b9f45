"""python3 -m tm_guide.train: train the baseline model and write the bundle at a deadline."""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tm_guide.train.options import ModelShape, TrainOptions


def parse_deadline(text: str) -> datetime:
    """HH:MM (UTC, today or tomorrow if already past) or a full ISO time."""
    now = datetime.now(UTC)
    try:
        if len(text) <= 5:
            hour, minute = (int(part) for part in text.split(":"))
            moment = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
            return moment if moment > now else moment + timedelta(days=1)
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--deadline {text!r}: expected HH:MM (UTC) or ISO time"
        ) from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_args(argv: list[str] | None) -> TrainOptions:
    data = Path("bench/corpus/data")
    parser = argparse.ArgumentParser(prog="python3 -m tm_guide.train", description=__doc__)
    parser.add_argument("--train", type=Path, default=data / "train/en-de.tsv")
    parser.add_argument("--dev", type=Path, default=data / "en-de/dev.tsv")
    parser.add_argument("--test", type=Path, default=data / "en-de/test.tsv")
    parser.add_argument("--run-dir", type=Path, default=Path("train_runs/demo-en-de"))
    parser.add_argument("--bundle-dir", type=Path, default=Path("tm_guide/models/demo-en-de"))
    parser.add_argument("--deadline", type=parse_deadline, required=True, help="HH:MM UTC")
    parser.add_argument(
        "--export-every", type=float, default=30.0, metavar="MINUTES", help="0: final export only"
    )
    parser.add_argument("--checkpoint-every", type=float, default=10.0, metavar="MINUTES")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--ffn", type=int, default=1024)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--batch-tokens", type=int, default=4000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument(
        "--init-from",
        type=Path,
        metavar="BUNDLE",
        help="start from a bundle's weights and SentencePiece model (same shape options)",
    )
    parser.add_argument(
        "--byte-fallback",
        action="store_true",
        help="SentencePiece byte fallback (with --init-from: the bundle's pieces, then the bytes)",
    )
    args = parser.parse_args(argv)
    return TrainOptions(
        train_tsv=args.train,
        dev_tsv=args.dev,
        test_tsv=args.test,
        run_dir=args.run_dir,
        bundle_dir=args.bundle_dir,
        deadline=args.deadline,
        shape=ModelShape(layers=args.layers, d_model=args.d_model, heads=args.heads, ffn=args.ffn),
        vocab_size=args.vocab_size,
        batch_tokens=args.batch_tokens,
        peak_lr=args.lr,
        warmup_steps=args.warmup,
        seed=args.seed,
        threads=args.threads,
        checkpoint_minutes=args.checkpoint_every,
        export_minutes=args.export_every,
        resume=args.resume,
        init_from=args.init_from,
        byte_fallback=args.byte_fallback,
    )


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    options.run_dir.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(message)s",
        datefmt="%Y-%m-%dT%H:%M:%SZ",
        handlers=[
            logging.FileHandler(options.run_dir / "train.log"),
            logging.StreamHandler(sys.stderr),
        ],
    )
    logging.Formatter.converter = __import__("time").gmtime
    from tm_guide.train.loop import run

    run(options)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
