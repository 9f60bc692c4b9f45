"""`tm-guide index check|rebuild`: the full-text index is a view of the database, rebuildable."""

from __future__ import annotations

import argparse

from tm_guide.cli.storeopen import open_store


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("index", help="check or rebuild the full-text index")
    commands = parser.add_subparsers(dest="index_command", metavar="COMMAND")
    commands.required = True

    check = commands.add_parser(
        "check", help="compare the index with the database (exit 1 if any memory is stale)"
    )
    check.set_defaults(func=check_index)

    rebuild = commands.add_parser("rebuild", help="rebuild the index from the database")
    rebuild.add_argument("names", nargs="*", metavar="MEMORY", help="default: every memory")
    rebuild.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    rebuild.set_defaults(func=rebuild_index)


def check_index(args: argparse.Namespace) -> int:
    """Compares revisions and reads every index file through; changes nothing on disk."""
    with open_store(args, repair_index=False) as store:
        states = store.index_states()
        problems = {state.memory.id: store.verify_index(state.memory) for state in states}
    bad = 0
    for state in states:
        indexed = "missing" if state.indexed_revision is None else str(state.indexed_revision)
        problem = problems[state.memory.id]
        verdict = f"DAMAGED ({problem})" if problem else "ok" if state.current else "STALE"
        bad += bool(problem) or not state.current
        print(
            f"{state.memory.name}: database revision {state.memory.revision}, "
            f"index revision {indexed}: {verdict}"
        )
    if bad:
        print(
            f"{bad} stale or damaged; run `tm-guide index rebuild` (a server answers from the "
            "database and rebuilds a damaged index by itself when a lookup finds it)"
        )
        return 1
    return 0


def rebuild_index(args: argparse.Namespace) -> int:
    with open_store(args, repair_index=False) as store:
        chosen = [store.get_memory(n) for n in args.names] if args.names else store.list_memories()
        for memory in chosen:
            store.rebuild_index(memory, progress=not args.quiet)
            print(f"rebuilt index of {memory.name!r} ({memory.segment_count} segments)")
    return 0
