"""Served translations with the search ranked on the engine's device against ranked on the host.

    python bench/ranked_equality.py [--domain en-de] [--sentences 788] [--device cpu]

The dev sentences of a domain of bench/corpus/data are translated through GuidedTranslator with
the TM of that domain (imported and aligned once into <domain>/eval.sqlite, as `tm-guide eval
--db` keeps it) and the card's guidance (pieces, repair templates, UTF-8 rule), twice: by the
torch engine with the search ranking every score on the host, and with it ranking on the
engine's device (tm_guide.decoding.candidates), as it does on a GPU. On the CPU both see the same
scores, so every served translation must be the same; with --device cuda the second run is the
GPU engine in float16 against the CPU's float32, and the table says how many agree.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="en-de")
    parser.add_argument("--sentences", type=int, default=0, help="the first N dev sentences")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)

    from dev_memory import dev_memory

    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import EngineOptions, GuidedTranslator, TranslateOptions

    with dev_memory(args.domain) as (bundle, dev, store, memory):
        sources = list(dev.sources[: args.sentences or None])
        translator = GuidedTranslator(bundle, store)
        guidance = Guidance.resolve(bundle.card)

        def run(engine: EngineOptions) -> tuple[list[str], list[bool], float]:
            options = guidance.apply(TranslateOptions(engine=engine, memory_ids=(memory.id,)))
            started = time.perf_counter()
            results = []
            for start in range(0, len(sources), args.batch):
                results += translator.translate(sources[start : start + args.batch], options)
            seconds = time.perf_counter() - started
            return [r.translation for r in results], [r.guided for r in results], seconds

        host, guided, host_s = run(EngineOptions(engine="torch", threads=1))
        if args.device == "cpu":
            device_engine = EngineOptions(engine="torch", threads=1, rank_on_device=True)
        else:
            device_engine = EngineOptions(engine="torch", device="cuda")
        device, _, device_s = run(device_engine)
    same = sum(a == b for a, b in zip(host, device, strict=True))
    same_guided = sum(a == b for a, b, g in zip(host, device, guided, strict=True) if g)
    print(f"{args.domain} dev, {len(sources)} sentences ({sum(guided)} guided), demo model")
    print("| ranked | engine | seconds | served the same as on the host |")
    print("|---|---|---|---|")
    print(f"| on the host | torch cpu | {host_s:.1f} | |")
    print(
        f"| on the device | torch {args.device} | {device_s:.1f} | {same} of {len(sources)} "
        f"({same_guided} of {sum(guided)} guided) |"
    )
    for a, b in zip(host, device, strict=True):
        if a != b:
            print(f"  host:   {a}\n  device: {b}")
    return 0 if args.device != "cpu" or same == len(sources) else 1


if __name__ == "__main__":
    sys.exit(main())
