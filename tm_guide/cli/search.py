"""`tm-guide search`: the best TM matches for a sentence, with their fuzzy-match percentage."""

from __future__ import annotations

import argparse

from tm_guide.cli.storeopen import open_store
from tm_guide.errors import InvalidInput
from tm_guide.matching import match_percentage


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "search",
        help="find the most similar TM segments for a sentence",
        description="Retrieve candidates by BM25 over the source side, then rank them by "
        "fuzzy-match percentage, as the server's matches show it "
        "(tm_guide.matching.match_percentage).",
    )
    parser.add_argument("text", help="the sentence to look up")
    parser.add_argument(
        "-m", "--memory", action="append", required=True, dest="memories",
        help="memory to search (repeat for several)",
    )  # fmt: skip
    parser.add_argument("-n", "--limit", type=int, default=5, help="matches to show (default 5)")
    parser.add_argument(
        "--candidates", type=int, default=50, help="BM25 candidates to rank (default 50)"
    )
    parser.add_argument("--min", type=int, default=0, help="hide matches below this percentage")
    parser.set_defaults(func=search)


def search(args: argparse.Namespace) -> int:
    if args.limit <= 0:
        raise InvalidInput("--limit must be positive", field="limit")
    with open_store(args) as store:
        chosen = [store.get_memory(name) for name in args.memories]
        names = {m.id: m.name for m in chosen}
        hits = store.search([m.id for m in chosen], args.text, max(args.candidates, args.limit))
    ranked = sorted(
        ((match_percentage(args.text, h.segment.source), h) for h in hits),
        key=lambda item: (-item[0], -item[1].score),
    )
    shown = [(p, h) for p, h in ranked if p >= args.min][: args.limit]
    if not shown:
        print("no matches")
        return 1
    several = len(chosen) > 1
    for percent, hit in shown:
        where = f" [{names[hit.segment.memory_id]}]" if several else ""
        print(f"{percent:3d}%{where}  {hit.segment.source}")
        print(f"      {hit.segment.target}")
    return 0
