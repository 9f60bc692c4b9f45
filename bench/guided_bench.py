"""End-to-end guided translation time against CTranslate2's native beam search (issue 6's target).

Unlike bench/decoding_bench.py (decoding only, pieces made up from references), this times what a
caller of GuidedTranslator.translate waits for: retrieval of the M most similar TM segments,
translation pieces, and the guided search, on real TM pieces. The baseline is the same call with
no memory, which goes straight to native beam search (tokenization and detokenization on both
sides). Sentences with no piece go to native search in both, as the translator does.

    python bench/guided_bench.py --db sqlite:///help.sqlite --memory help
                                 [--sentences bench/corpus/data/en-de/test.tsv] [--count 256]
                                 [--batch 32] [--lam CARD] [--m 10] [--min-similarity 0,0.5]
                                 [--engine torch] [--repeat 1]

The memory's segments not yet word-aligned are aligned first (as `tm-guide eval` does); with
--tm FILE.tsv instead, the TSV is imported and aligned into a throwaway store first (about a
minute for the 35.9k-segment help TM). Per sentence: the best of --repeat runs of each sentence
alone, summed; per batch: the best of --repeat runs of each batch of --batch sentences, summed.
Guided and native runs alternate, so that a change of machine load affects both alike. With
references in the sentence file's second column, BLEU of both outputs is printed next to the
times, so that a faster setting (--min-similarity: guide only sentences with a close enough TM
match) shows what it costs. Target: total <= 1.5x native, per sentence and per batch.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from decoding_bench import best_time  # noqa: E402  (this script's folder is on sys.path)

from tm_guide.decoding.guidance import Guidance  # noqa: E402
from tm_guide.decoding.guided import (  # noqa: E402
    EngineOptions,
    GuidedTranslator,
    TranslateOptions,
)
from tm_guide.decoding.search import SearchOptions  # noqa: E402
from tm_guide.evaluation.runner import open_tm  # noqa: E402
from tm_guide.model import Bundle  # noqa: E402

DEFAULT_BUNDLE = ROOT / "tm_guide" / "models" / "demo-en-de"
DEFAULT_SENTENCES = ROOT / "bench" / "corpus" / "data" / "en-de" / "test.tsv"
STAGES = ("retrieval", "pieces", "decoding")


def read_pairs(path: Path, count: int) -> tuple[list[str], list[str] | None]:
    """Sources (first column) and, when every line has one, references (second column)."""
    sources: list[str] = []
    references: list[str] = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            fields = line.rstrip("\n").split("\t")
            if not fields[0].strip():
                continue
            sources.append(fields[0].strip())
            references.append(fields[1].strip() if len(fields) > 1 else "")
            if len(sources) == count:
                break
    return sources, references if all(references) else None


@dataclass
class Measured:
    """One configuration's times (seconds, summed over sentences or batches) and outputs."""

    native_single: float = 0.0
    guided_single: float = 0.0
    native_batch: float = 0.0
    guided_batch: float = 0.0
    stages_single: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    stages_batch: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    with_pieces: int = 0
    guided_outputs: list[str] = field(default_factory=list)
    native_outputs: list[str] = field(default_factory=list)


def measure(
    translator: GuidedTranslator,
    sentences: list[str],
    guided: TranslateOptions,
    repeat: int,
) -> Measured:
    """Guided and native alternate call by call, so that load changes affect both alike."""
    native = replace(guided, memory_ids=())
    out = Measured()
    for sentence in sentences:
        spent, _ = best_time(lambda s=sentence: translator.translate([s], native), repeat)
        out.native_single += spent
        spent, results = best_time(lambda s=sentence: translator.translate([s], guided), repeat)
        out.guided_single += spent
        for stage in STAGES:
            out.stages_single[stage] += results[0].timings.get(stage, 0.0)
    size = guided.engine.batch_size
    for k in range(0, len(sentences), size):
        batch = sentences[k : k + size]
        spent, results = best_time(lambda x=batch: translator.translate(x, native), repeat)
        out.native_batch += spent
        out.native_outputs.extend(r.translation for r in results)
        spent, results = best_time(lambda x=batch: translator.translate(x, guided), repeat)
        out.guided_batch += spent
        out.guided_outputs.extend(r.translation for r in results)
        out.with_pieces += sum(r.guided for r in results)
        for result in results:
            for stage in STAGES:
                out.stages_batch[stage] += result.timings.get(stage, 0.0)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE)
    parser.add_argument("--db", help="database URL holding an aligned --memory")
    parser.add_argument("--memory", help="memory name or id in --db")
    parser.add_argument("--tm", type=Path, help="TSV to import and align instead of --db")
    parser.add_argument("--sentences", type=Path, default=DEFAULT_SENTENCES)
    parser.add_argument("--count", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lam", type=float, help="default: the model card's guided_lambda, or 1")
    parser.add_argument("--m", type=int, default=10)
    parser.add_argument(
        "--min-similarity",
        default="0",
        help="comma-separated; a row each: pieces only from TM matches this similar (eq. 9), "
        "a sentence without any goes to native search",
    )
    parser.add_argument(
        "--max-length-ratio",
        type=float,
        default=2.0,
        help="output cap, x the source + 10 (guided search: each sentence's own; native: the "
        "longest of the batch), as the server and eval use it",
    )
    parser.add_argument(
        "--pieces-once",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="reward a piece of 2+ tokens once per hypothesis (SearchOptions.reward_repeats "
        "False) instead of every time it is produced (eq. 10); default: as the card's lambda "
        "was tuned",
    )
    parser.add_argument(
        "--engine",
        default="auto",
        choices=("auto", "fused", "torch", "rerank", "ct2"),
        help="auto: as the server picks it (fused where it was built, else torch)",
    )
    parser.add_argument("--threads", type=int, default=1, help="for CTranslate2 and PyTorch alike")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    if (args.tm is None) == (args.db is None or args.memory is None):
        parser.error("give either --tm FILE.tsv or both --db and --memory")
    if not args.sentences.is_file():
        parser.error(f"no sentence file at {args.sentences} (build bench/corpus first)")
    similarities = [float(x) for x in args.min_similarity.split(",") if x.strip()]

    import sacrebleu
    import torch

    torch.set_num_threads(args.threads)
    bundle = Bundle.load(args.bundle, device="cpu", intra_threads=args.threads)
    # the card's guidance (as served), with what the command line asks instead
    guidance = Guidance.resolve(
        bundle.card,
        lam=args.lam,
        reward_repeats=None if args.pieces_once is None else not args.pieces_once,
        m=args.m,
    )
    sentences, references = read_pairs(args.sentences, args.count)
    rows: list[tuple[float, Measured]] = []
    tm = str(args.tm) if args.tm is not None else args.memory
    with open_tm(tm, args.db, bundle) as (store, memory):
        translator = GuidedTranslator(bundle, store)
        base = guidance.apply(
            TranslateOptions(
                search=SearchOptions(beam_size=args.beam),
                engine=EngineOptions(
                    engine=args.engine, batch_size=args.batch, threads=args.threads
                ),
                memory_ids=(memory.id,),
                max_length_ratio=args.max_length_ratio,
            )
        )
        translator.translate(sentences[: args.batch], base)  # load the engine, warm caches
        engine = translator.engine_name(base)
        for similarity in similarities:
            options = replace(base, pieces=replace(base.pieces, min_similarity=similarity))
            rows.append((similarity, measure(translator, sentences, options, args.repeat)))

    n = len(sentences)
    batches = -(-n // args.batch)
    print(
        f"bundle {args.bundle.name}, memory {memory.name} ({memory.segment_count} segments), "
        f"{n} sentences from {args.sentences.name}; engine {engine}, beam {args.beam}, "
        f"lambda {guidance.lam:g}, {guidance.describe()}, M {args.m}, "
        f"length cap {args.max_length_ratio:g}x + 10, "
        f"threads {args.threads}, {platform.machine()}, {os.cpu_count()} CPUs"
    )
    print()
    print(
        f"{'min sim':>7} {'guided':>6} {'':13}{'native ms':>10}{'retrieval':>10}{'pieces':>8}"
        f"{'decoding':>10}{'total ms':>10}{'x native':>9}{'BLEU native':>12}{'guided':>7}"
    )
    for similarity, m in rows:
        bleu = ("", "")
        if references is not None:
            bleu = (
                f"{sacrebleu.corpus_bleu(m.native_outputs, [references]).score:.2f}",
                f"{sacrebleu.corpus_bleu(m.guided_outputs, [references]).score:.2f}",
            )
        for label, native_s, guided_s, stages, scale in (
            ("per sentence", m.native_single, m.guided_single, m.stages_single, n),
            (f"per batch {args.batch}", m.native_batch, m.guided_batch, m.stages_batch, batches),
        ):
            parts = [stages[s] / scale * 1e3 for s in STAGES]
            first = label == "per sentence"
            print(
                f"{similarity if first else '':>7} "
                f"{f'{m.with_pieces}/{n}' if first else '':>6} {label:13}"
                f"{native_s / scale * 1e3:>10.1f}{parts[0]:>10.1f}{parts[1]:>8.1f}"
                f"{parts[2]:>10.1f}{guided_s / scale * 1e3:>10.1f}{guided_s / native_s:>9.2f}"
                f"{bleu[0] if first else '':>12}{bleu[1] if first else '':>7}"
            )
    print()
    print("guided = sentences that got pieces (the rest went to native search); stages are summed")
    print("over a batch; total is the wall time of the whole translate() call, the best of")
    print("--repeat. BLEU (sacrebleu defaults) of the batch outputs. Target: x native <= 1.5.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
