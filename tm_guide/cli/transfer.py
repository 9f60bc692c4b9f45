"""`tm-guide import` and `tm-guide export`: move translation memories in and out of the store."""

from __future__ import annotations

import argparse
import sys

from tm_guide.cli.storeopen import open_store
from tm_guide.errors import InvalidInput, NotFound


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    imp = subparsers.add_parser(
        "import",
        help="import a TMX, PO, MO, TSV file or two aligned text files into a memory",
        description="Import into MEMORY in one transaction: a malformed file changes nothing. "
        "Duplicate pairs are merged; a known tuid replaces its segment. File type by extension: "
        ".tmx, .po, .mo, .tsv/.tab, or SOURCE.txt TARGET.txt (aligned lines).",
    )
    imp.add_argument("memory")
    imp.add_argument("path", help="file to import (.tmx .po .mo .tsv .tab, or source .txt)")
    imp.add_argument("target_path", nargs="?", help="target-language .txt for aligned text")
    imp.add_argument(
        "--create",
        nargs=2,
        metavar=("SRC", "TGT"),
        help="create the memory with this language pair if it does not exist",
    )
    imp.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    imp.set_defaults(func=import_file)

    exp = subparsers.add_parser("export", help="export a memory as TMX 1.4b or a PO catalogue")
    exp.add_argument("memory")
    exp.add_argument("path", help="output .tmx or .po file, or - for TMX on standard output")
    exp.set_defaults(func=export_file)


def import_file(args: argparse.Namespace) -> int:
    from tm_guide.formats import open_records

    with open_store(args) as store:
        try:
            memory = store.get_memory(args.memory)
        except NotFound:
            if not args.create:
                raise NotFound(
                    f"no memory named {args.memory!r}; create it with "
                    f"`tm-guide memory create {args.memory} SRC TGT` or pass --create SRC TGT",
                    field="memory",
                ) from None
            memory = store.create_memory(args.memory, *args.create)
        reader = open_records(args.path, memory.source_lang, memory.target_lang, args.target_path)
        report = store.import_records(
            memory, reader, progress=not args.quiet, source_name=str(args.path)
        )
    print(
        f"imported {args.path} into {memory.name!r}: {report.added} added, "
        f"{report.merged} merged, {report.updated} updated, {report.skipped} skipped "
        f"({reader.stats.summary()})"
    )
    return 0


def export_file(args: argparse.Namespace) -> int:
    from tm_guide.formats import write_po, write_tmx

    suffix = "" if args.path == "-" else str(args.path).lower().rsplit(".", 1)[-1]
    if args.path != "-" and suffix not in ("tmx", "po"):
        raise InvalidInput(
            f"export writes TMX or PO: name the output *.tmx or *.po, not {args.path}",
            field="path",
        )
    write = write_po if suffix == "po" else write_tmx
    # an export reads the database only: the source index is neither opened nor repaired, which
    # keeps a backup's memory use flat (opening a 1M-segment index alone took ~860 MiB)
    with open_store(args, repair_index=False) as store:
        memory = store.get_memory(args.memory)
        destination = sys.stdout.buffer if args.path == "-" else args.path
        left_out: list[str] = []

        def report(why: str) -> None:
            left_out.append(why)
            print(f"tm-guide export: {why}", file=sys.stderr)

        written = write(
            destination,
            source_lang=memory.source_lang,
            target_lang=memory.target_lang,
            segments=store.iter_segments(memory),
            on_skip=report,
        )
    if args.path != "-":
        note = f"; {len(left_out)} left out (above)" if left_out else ""
        unit = "entries" if write is write_po else "segments"
        print(f"exported {written} {unit} of {memory.name!r} to {args.path}{note}")
    return 0
