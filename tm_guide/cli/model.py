"""`tm-guide model`: convert a checkpoint into a bundle, export it as an archive, show its card."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tm_guide.config import Settings
from tm_guide.model.choices import QUANTIZATIONS, SOURCE_FORMATS


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("model", help="convert, export and inspect model bundles")
    commands = parser.add_subparsers(dest="model_command", metavar="COMMAND")
    commands.required = True

    convert = commands.add_parser(
        "convert",
        help="turn a Marian/OPUS-MT, OpenNMT-py or fairseq checkpoint into a bundle",
        description="Convert a checkpoint with CTranslate2, copy its SentencePiece models to "
        "source.spm/target.spm and write model_card.json with the checksum of every file.",
    )
    convert.add_argument("checkpoint", type=Path, help="transformers directory or .pt file")
    convert.add_argument("output", type=Path, help="bundle directory to create")
    convert.add_argument(
        "--format",
        dest="source_format",
        choices=sorted(SOURCE_FORMATS),
        default="transformers",
        help="checkpoint format (default: transformers)",
    )
    convert.add_argument("--source-lang", required=True, help="e.g. en")
    convert.add_argument("--target-lang", required=True, help="e.g. de")
    convert.add_argument(
        "--quantization", choices=QUANTIZATIONS, default="int8", help="weight type (default: int8)"
    )
    convert.add_argument("--source-spm", type=Path, help="source SentencePiece model")
    convert.add_argument(
        "--target-spm", type=Path, help="target SentencePiece model (default: the source one)"
    )
    convert.add_argument("--name", default="", help="model name (default: the output's name)")
    convert.add_argument(
        "--fairseq-data-dir",
        type=Path,
        help="fairseq: directory with dict.<lang>.txt (default: the .pt's)",
    )
    convert.add_argument("--training-data", default="", help="what the model was trained on")
    convert.add_argument(
        "--trust-checkpoint",
        action="store_true",
        help="fully unpickle an OpenNMT-py/fairseq .pt (this can run code: trusted files only)",
    )
    convert.add_argument("--force", action="store_true", help="replace an existing output")
    convert.set_defaults(func=convert_command)

    export = commands.add_parser(
        "export",
        help="write a bundle as one .tar.gz or .zip archive with a .sha256 file",
    )
    export.add_argument("output", type=Path, help="archive path ending in .tar.gz, .tgz or .zip")
    export.add_argument(
        "--model",
        type=Path,
        default=None,
        help="bundle directory (default: $TM_GUIDE_MODEL or the demo model)",
    )
    export.add_argument("--force", action="store_true", help="replace an existing archive")
    export.set_defaults(func=export_command)

    priors = commands.add_parser(
        "priors",
        help="count word-alignment priors on training pairs into the bundle",
        description="Align the first PAIRS pairs of a source<TAB>target corpus (the model's "
        "training data) with eflomal, tokenized as the bundle tokenizes memories, and write the "
        "counts to the bundle's alignment_priors.txt (its checksum into the card). A memory "
        "too small for priors of its own is aligned with them.",
    )
    priors.add_argument("corpus", type=Path, help="TSV of source<TAB>target pairs")
    priors.add_argument(
        "--model", type=Path, default=None, help="bundle directory (default: $TM_GUIDE_MODEL)"
    )
    priors.add_argument("--pairs", type=int, default=100_000, help="pairs aligned (default 100000)")
    priors.add_argument(
        "--min-count", type=float, default=2.0, help="drop counts below this (default 2)"
    )
    priors.set_defaults(func=priors_command)

    info = commands.add_parser("info", help="verify a bundle and print its model card")
    info.add_argument(
        "--model",
        type=Path,
        default=None,
        help="bundle directory or archive (default: $TM_GUIDE_MODEL or the demo model)",
    )
    info.add_argument("--json", action="store_true", help="print the card as JSON")
    info.set_defaults(func=info_command)


def _model_path(args: argparse.Namespace) -> Path:
    return args.model if args.model is not None else Settings.from_env(args.db).model_path


def convert_command(args: argparse.Namespace) -> int:
    from tm_guide.model.convert import ConvertOptions, convert_checkpoint

    options = ConvertOptions(
        source_format=args.source_format,
        checkpoint=args.checkpoint,
        output_dir=args.output,
        source_lang=args.source_lang,
        target_lang=args.target_lang,
        quantization=args.quantization,
        source_spm=args.source_spm,
        target_spm=args.target_spm,
        name=args.name,
        fairseq_data_dir=args.fairseq_data_dir,
        training_data=args.training_data,
        force=args.force,
        trust_checkpoint=args.trust_checkpoint,
    )
    print(convert_checkpoint(options))
    return 0


def export_command(args: argparse.Namespace) -> int:
    from tm_guide.model.archive import ExportOptions, export_bundle

    result = export_bundle(ExportOptions(_model_path(args), args.output, force=args.force))
    print(f"{result.sha256}  {result.archive}")
    print(f"checksum written to {result.checksum_file}", file=sys.stderr)
    return 0


def priors_command(args: argparse.Namespace) -> int:
    from tm_guide.model import Bundle
    from tm_guide.model.priors import PriorsOptions, estimate, write_bundle_priors

    path = _model_path(args)
    bundle = Bundle.load(path)
    options = PriorsOptions(args.corpus, pairs=args.pairs, min_count=args.min_count)
    report = write_bundle_priors(bundle.path, estimate(bundle, options))
    print(
        f"{report.path}: priors of {report.pairs} pairs, {report.lexical_entries} word pairs, "
        f"{report.size_bytes / 1e6:.1f} MB"
    )
    return 0


def info_command(args: argparse.Namespace) -> int:
    from tm_guide.model import Bundle

    bundle = Bundle.load(_model_path(args))
    card = bundle.card
    if args.json:
        print(json.dumps(card.to_dict(), indent=2, ensure_ascii=False))
        return 0
    vocab = bundle.vocabularies
    metrics = card.metrics
    rows = [
        ("name", card.name),
        ("path", str(bundle.path)),
        ("languages", f"{card.source_lang} -> {card.target_lang}"),
        ("architecture", card.architecture),
        ("quantization", card.quantization),
        ("vocabulary", f"{len(vocab.source)} source / {len(vocab.target)} target tokens"),
        ("source eos", "appended" if card.add_source_eos else "not used"),
        ("ctranslate2", card.ctranslate2_version),
        ("tokenizer id", bundle.tokenizer_id),
        ("training data", _short(card.training_data)),
        ("BLEU", _metric(metrics.bleu)),
        ("chrF", _metric(metrics.chrf)),
        ("test set", metrics.test_set or "-"),
        ("files", ", ".join(sorted(card.files))),
        ("guided engine", _engine(bundle)),
        ("guidance", _guidance(card)),
    ]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


def _engine(bundle: Any) -> str:
    """What `--engine auto` runs for this bundle on this CPU, and the faster engines passed
    over (tm_guide.decoding.engines)."""
    from tm_guide.decoding.engines import choose_engine

    choice = choose_engine(bundle.path, bundle.card.quantization, "cpu")
    passed = "".join(f"; not {engine}: {why}" for engine, why in choice.passed_over)
    return choice.describe() + passed


def _guidance(card: Any) -> str:
    """The lambda and piece rules the server uses by default, as the card records them."""
    from tm_guide.decoding.guidance import Guidance

    if card.guided_lambda is None:
        return "not tuned (lambda 1, eq. 10)"
    guidance = Guidance.resolve(card)
    return f"lambda {guidance.lam:g}, {guidance.describe()}"


def _metric(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _short(value: object) -> str:
    if isinstance(value, str):
        return value or "-"
    return json.dumps(value, ensure_ascii=False)
