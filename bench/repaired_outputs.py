"""The repaired close matches of a dev set, printed for a person to read.

    python bench/repaired_outputs.py [--domain en-de] [--below 1.0] [--out FILE]

Issue #39 asks for the outputs of the repair to be read, counting the words glued across a
seam or cut in the middle. This writes, for every dev sentence whose served translation repairs
a TM match with a similarity below --below (a 100% match is served as it is), the source, the
match's source and target, the output and the reference, as the server would answer with the
card's guidance. The domains are folders of bench/corpus/data (bench/corpus/README.md); the TM
is imported and aligned once into <domain>/eval.sqlite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="en-de")
    parser.add_argument("--below", type=float, default=1.0, help="only matches below this")
    parser.add_argument("--out", type=Path, help="write here instead of standard output")
    args = parser.parse_args(argv)

    from dev_memory import dev_memory

    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions

    blocks: list[str] = []
    with dev_memory(args.domain) as (bundle, dev, store, memory):
        sources, references = list(dev.sources), list(dev.references)
        translator = GuidedTranslator(bundle, store)
        options = Guidance.resolve(bundle.card).apply(TranslateOptions(memory_ids=(memory.id,)))
        for start in range(0, len(sources), 32):
            results = translator.translate(sources[start : start + 32], options)
            for k, result in enumerate(results):
                similarity = result.best_match_similarity
                if result.repaired_segment is None or similarity is None:
                    continue
                if similarity >= args.below:
                    continue
                [match] = store.get_segments([result.repaired_segment])
                i = start + k
                blocks.append(
                    f"#{i} similarity {similarity:.2f}\n"
                    f"  source:    {sources[i]}\n"
                    f"  match:     {match.source}\n"
                    f"  its target: {match.target}\n"
                    f"  output:    {result.translation}\n"
                    f"  reference: {references[i]}\n"
                )
    text = f"{len(blocks)} repaired outputs of {len(sources)} dev sentences\n\n" + "\n".join(blocks)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
