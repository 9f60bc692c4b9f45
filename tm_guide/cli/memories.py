"""`tm-guide memory create|list|show|delete` and `tm-guide stats`."""

from __future__ import annotations

import argparse

from tm_guide.cli.storeopen import open_store


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "memory", aliases=["memories"], help="create, list, show and delete translation memories"
    )
    commands = parser.add_subparsers(dest="memory_command", metavar="COMMAND")
    commands.required = True

    create = commands.add_parser("create", help="create an empty memory for a language pair")
    create.add_argument("name")
    create.add_argument("source_lang", help="source language tag, e.g. en")
    create.add_argument("target_lang", help="target language tag, e.g. de or de-DE")
    create.add_argument("--description", default="")
    create.set_defaults(func=create_memory)

    listing = commands.add_parser("list", help="list memories with their segment counts")
    listing.set_defaults(func=list_memories)

    show = commands.add_parser("show", help="show one memory")
    show.add_argument("name")
    show.set_defaults(func=show_memory)

    remove = commands.add_parser("delete", help="delete a memory and all its segments")
    remove.add_argument("name")
    remove.set_defaults(func=delete_memory)

    stats = subparsers.add_parser("stats", help="segment counts, usage and dates per memory")
    stats.add_argument("names", nargs="*", metavar="MEMORY", help="default: every memory")
    stats.set_defaults(func=show_stats)


def create_memory(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        memory = store.create_memory(
            args.name, args.source_lang, args.target_lang, args.description
        )
    print(f"created memory {memory.name!r} ({memory.source_lang} -> {memory.target_lang})")
    return 0


def list_memories(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        found = store.list_memories()
    if not found:
        print("no memories yet; create one with: tm-guide memory create NAME SRC TGT")
        return 0
    width = max(len("NAME"), *(len(m.name) for m in found))
    print(f"{'NAME':<{width}}  PAIR          SEGMENTS  DESCRIPTION")
    for m in found:
        pair = f"{m.source_lang} -> {m.target_lang}"
        print(f"{m.name:<{width}}  {pair:<12}  {m.segment_count:>8}  {m.description}")
    return 0


def show_memory(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        m = store.get_memory(args.name)
    print(f"name:        {m.name}")
    print(f"languages:   {m.source_lang} -> {m.target_lang}")
    print(f"segments:    {m.segment_count}")
    print(f"revision:    {m.revision}")
    print(f"created:     {m.created_at:%Y-%m-%d %H:%M:%S} UTC")
    print(f"description: {m.description}")
    return 0


def delete_memory(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        memory = store.get_memory(args.name)
        store.delete_memory(memory.name)
    print(f"deleted memory {memory.name!r} ({memory.segment_count} segments)")
    return 0


def show_stats(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        chosen = [store.get_memory(n) for n in args.names] if args.names else store.list_memories()
        rows = [(m, store.memory_stats(m)) for m in chosen]
    if not rows:
        print("no memories")
        return 0
    width = max(len("MEMORY"), *(len(m.name) for m, _ in rows))
    print(f"{'MEMORY':<{width}}  PAIR          SEGMENTS  ANALYSED     USAGE  LAST CHANGE")
    for m, s in rows:
        pair = f"{m.source_lang} -> {m.target_lang}"
        last = f"{s['last_changed']:%Y-%m-%d %H:%M}" if s["last_changed"] else "-"
        print(
            f"{m.name:<{width}}  {pair:<12}  {s['segments']:>8}  {s['analysed']:>8}  "
            f"{s['usage']:>8}  {last}"
        )
    return 0
