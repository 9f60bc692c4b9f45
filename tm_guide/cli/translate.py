"""`tm-guide translate`: translation of lines from stdin or a file, one per line: by the model
alone, or guided by translation memories (`--memory`) with the model card's guidance."""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TextIO

from tm_guide.config import Settings
from tm_guide.errors import InvalidInput


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "translate",
        help="translate lines with the model alone, or guided by translation memories",
        description="Read one segment per line from FILE (or stdin) and print one translation "
        "per line, in the same order. With --memory, each line is translated guided by the "
        "memories' translation pieces, with the guidance the model card records (lambda, piece "
        "rules, repair of a close match), as the server translates.",
    )
    parser.add_argument("input", nargs="?", type=Path, help="input file (default: stdin)")
    parser.add_argument("-o", "--output", type=Path, help="output file (default: stdout)")
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="bundle directory or archive (default: $TM_GUIDE_MODEL or the demo model)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda", "auto"),
        default=None,
        help="default: $TM_GUIDE_DEVICE or cpu",
    )
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument(
        "--batch-size", type=int, default=32, help="sentences (or tokens) per batch (default: 32)"
    )
    parser.add_argument(
        "--batch-type",
        choices=("examples", "tokens"),
        default="examples",
        help="count --batch-size in sentences or in source tokens (default: examples)",
    )
    parser.add_argument("--max-length", type=int, default=256, help="maximum target tokens")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: default)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--source-lang", help="a multilingual model's source language (default: its card's)"
    )
    parser.add_argument(
        "--target-lang", help="a multilingual model's target language (default: its card's)"
    )
    parser.add_argument(
        "--memory",
        action="append",
        metavar="NAME",
        help="guide by this memory of the --db store (repeatable; default: the model alone)",
    )
    parser.add_argument(
        "--lambda",
        dest="lam",
        type=float,
        default=None,
        help="weight of the piece reward with --memory (default: the model card's)",
    )
    parser.set_defaults(func=translate_command)


def translate_command(args: argparse.Namespace) -> int:
    from tm_guide.model import Bundle
    from tm_guide.model.unguided import UnguidedOptions, translate_stream

    settings = Settings.from_env(args.db)
    options = UnguidedOptions(
        beam_size=args.beam_size,
        batch_size=args.batch_size,
        batch_type=args.batch_type,
        max_length=args.max_length,
        device=args.device or settings.device,
        threads=args.threads,
        progress=not args.no_progress,
        languages=(args.source_lang, args.target_lang)
        if args.source_lang or args.target_lang
        else None,
    )
    bundle = Bundle.load(
        args.model if args.model is not None else settings.model_path,
        device=options.device,
        compute_type=options.compute_type,
        intra_threads=options.threads,
    )
    if args.memory:
        return _guided(args, bundle, options)
    if args.lam is not None:
        raise InvalidInput("--lambda weighs a memory's pieces: give --memory too", field="lambda")
    with _open_input(args.input) as source, _open_output(args.output) as sink:
        lines = (line.rstrip("\r\n") for line in source)
        try:
            for translation in translate_stream(bundle, lines, options):
                sink.write(translation + "\n")
        except UnicodeDecodeError as exc:
            where = args.input or "stdin"
            raise InvalidInput(f"{where}: not UTF-8 text ({exc.reason})", field="input") from exc
    return 0


def _guided(args: argparse.Namespace, bundle: Any, options: Any) -> int:
    """Each line guided by the --memory memories, with the card's guidance (--lambda apart),
    in batches of --batch-size lines."""
    from tm_guide.cli.storeopen import open_store
    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions
    from tm_guide.decoding.search import SearchOptions

    with open_store(args) as store:
        memories = [store.get_memory(name) for name in args.memory]
        translator = GuidedTranslator(bundle, store)
        decoding = Guidance.resolve(bundle.card, lam=args.lam).apply(
            TranslateOptions(
                search=SearchOptions(beam_size=options.beam_size, max_length=options.max_length),
                engine=EngineOptions(threads=options.threads, batch_size=options.batch_size),
                memory_ids=tuple(m.id for m in memories),
                max_length_ratio=2.0,
                languages=options.languages,
            )
        )
        with _open_input(args.input) as source, _open_output(args.output) as sink:
            batch: list[str] = []
            try:
                for line in source:
                    batch.append(line.rstrip("\r\n"))
                    if len(batch) == options.batch_size:
                        _write(sink, translator.translate(batch, decoding))
                        batch = []
            except UnicodeDecodeError as exc:
                where = args.input or "stdin"
                raise InvalidInput(
                    f"{where}: not UTF-8 text ({exc.reason})", field="input"
                ) from exc
            if batch:
                _write(sink, translator.translate(batch, decoding))
    return 0


def _write(sink: TextIO, results: Any) -> None:
    for result in results:
        sink.write(result.translation + "\n")


def _open_input(path: Path | None) -> ContextManager[TextIO]:
    if path is None:
        return nullcontext(sys.stdin)
    try:
        return path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read ({exc.strerror})", field="input") from exc


def _open_output(path: Path | None) -> ContextManager[TextIO]:
    if path is None:
        return nullcontext(sys.stdout)
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot write ({exc.strerror})", field="output") from exc
