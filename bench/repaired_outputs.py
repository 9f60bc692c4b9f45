"""The repaired close matches of dev sets, printed for a person to read.

    python bench/repaired_outputs.py [--domain en-de ...] [--below 1.0] [--sample N --seed S]
        [--flag] [--out FILE]

Issue #39 asks for the outputs of the repair to be read, counting the words glued across a
seam or cut in the middle. This writes, for every dev sentence whose served translation repairs
a TM match with a similarity below --below (a 100% match is served as it is), the source, the
match's source and target, the output and the reference, as the server would answer with the
card's guidance. With --sample, N of them drawn with seed S from all the domains given, taken
in the order of domain name and line, so that a later reading draws the same sentences. The
domains are folders of bench/corpus/data (bench/corpus/README.md); the TM is imported and
aligned once into <domain>/eval.sqlite. With --flag, each output's words that the domain's
German text nowhere writes (bench/unknown_words.py) are listed under it, where a garble or a cut
word is most likely: a reader's aid, not a count (a new compound counts too).

    python bench/repaired_outputs.py --domain en-de --domain debian-docs-en-de \\
        --domain debian-guides-en-de --sample 200 --seed 11
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def repaired(domain: str, below: float, flag: bool = False) -> list[tuple[str, int, str]]:
    """(domain, dev line, text block) of each repaired output of `domain`'s dev set."""
    from dev_memory import dev_memory
    from unknown_words import DATA, lexicon, unknown

    known = lexicon(DATA / domain) if flag else set()

    from tm_guide.decoding.guidance import Guidance
    from tm_guide.decoding.guided import GuidedTranslator, TranslateOptions

    blocks: list[tuple[str, int, str]] = []
    with dev_memory(domain) as (bundle, dev, store, memory):
        sources, references = list(dev.sources), list(dev.references)
        translator = GuidedTranslator(bundle, store)
        options = Guidance.resolve(bundle.card).apply(TranslateOptions(memory_ids=(memory.id,)))
        for start in range(0, len(sources), 32):
            results = translator.translate(sources[start : start + 32], options)
            for k, result in enumerate(results):
                similarity = result.best_match_similarity
                if result.repaired_segment is None or similarity is None:
                    continue
                if similarity >= below:
                    continue
                [match] = store.get_segments([result.repaired_segment])
                i = start + k
                block = (
                    f"{domain} #{i} similarity {similarity:.2f}\n"
                    f"  source:    {sources[i]}\n"
                    f"  match:     {match.source}\n"
                    f"  its target: {match.target}\n"
                    f"  output:    {result.translation}\n"
                    f"  reference: {references[i]}\n"
                )
                if flag:
                    said = {"source": sources[i], "served": result.translation}
                    if words := unknown(said, known):
                        block += f"  unknown:   {', '.join(words)}\n"
                blocks.append((domain, i, block))
    return blocks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", action="append", help="repeat for several (default en-de)")
    parser.add_argument("--below", type=float, default=1.0, help="only matches below this")
    parser.add_argument("--sample", type=int, help="draw this many of them")
    parser.add_argument("--seed", type=int, default=11, help="the draw's seed")
    parser.add_argument("--flag", action="store_true", help="list words the domain never writes")
    parser.add_argument("--out", type=Path, help="write here instead of standard output")
    args = parser.parse_args(argv)

    blocks: list[tuple[str, int, str]] = []
    for domain in args.domain or ["en-de"]:
        blocks += repaired(domain, args.below, args.flag)
    blocks.sort(key=lambda block: block[:2])
    found = len(blocks)
    if args.sample is not None and args.sample < found:
        blocks = random.Random(args.seed).sample(blocks, args.sample)
        head = f"{len(blocks)} drawn (seed {args.seed}) of {found} repaired outputs"
    else:
        head = f"{found} repaired outputs"
    text = head + "\n\n" + "\n".join(f"[{n}] {block}" for n, (_, _, block) in enumerate(blocks))
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
