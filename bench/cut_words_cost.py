"""What completing cut words costs (TranslateOptions.complete_cut_words): the guided search of
each domain's dev set timed with and without it, in alternating rounds, on its TM (see
bench/dev_memory.py), with how many outputs have a completion to score and how many change.

    CT2_USE_MKL=1 python bench/cut_words_cost.py --domain en-de --domain debian-docs-en-de \\
        --domain debian-guides-en-de

Prints a table: seconds per run (best of --rounds), the ratio with / without, the sentences
whose output has a cut word the pieces spell (tm_guide.pieces.cut_words), and the outputs that
differ (the completions served).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from dev_memory import dev_memory

from tm_guide.decoding.guidance import Guidance
from tm_guide.decoding.guided import (
    MAX_COMPLETIONS,
    EngineOptions,
    GuidedTranslator,
    TranslateOptions,
)
from tm_guide.pieces.cut_words import cut_completions


def measure(domain: str, engine: str, rounds: int) -> dict[str, float]:
    with dev_memory(domain) as (bundle, dev, store, memory):
        translator = GuidedTranslator(bundle, store)
        options = Guidance.resolve(bundle.card).apply(TranslateOptions(memory_ids=(memory.id,)))
        options = replace(options, engine=EngineOptions(engine=engine))
        prepared = translator.prepare(dev.sources, options)
        translator.search(prepared[:8], options)  # the engine loaded, its buffers grown
        best = {False: float("inf"), True: float("inf")}
        found = {}
        for _ in range(rounds):
            for complete in (False, True):
                started = time.perf_counter()
                found[complete] = translator.search(
                    prepared, replace(options, complete_cut_words=complete)
                )
                best[complete] = min(best[complete], time.perf_counter() - started)
        scored = 0
        for one, outcome in zip(prepared, found[False], strict=True):
            if not outcome.guided or one.pieces is None or outcome.hypothesis is None:
                continue
            output = [translator.target_vocabulary[t] for t in outcome.hypothesis.token_ids]
            targets = [bundle.encode_target(m.segment.target) for m in one.pieces.matches]
            scored += bool(cut_completions(output, targets, one.pieces.ngrams, MAX_COMPLETIONS))
        changed = sum(
            a.hypothesis != b.hypothesis for a, b in zip(found[False], found[True], strict=True)
        )
        return {
            "sentences": len(prepared),
            "off": best[False],
            "on": best[True],
            "scored": scored,
            "changed": changed,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", action="append", required=True)
    parser.add_argument("--engine", default="fused")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| domain | sentences | off (s) | on (s) | on / off | with a completion | changed |")
    print("|---|---|---|---|---|---|---|")
    for domain in args.domain:
        row = measure(domain, args.engine, args.rounds)
        print(
            f"| {domain} | {row['sentences']:.0f} | {row['off']:.2f} | {row['on']:.2f} |"
            f" {row['on'] / row['off']:.3f} | {row['scored']:.0f} | {row['changed']:.0f} |"
        )


if __name__ == "__main__":
    main()
