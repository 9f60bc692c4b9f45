"""Speed of guided decoding per engine against CTranslate2's native (unguided) beam search.

    python bench/decoding_bench.py [--bundle DIR] [--sentences FILE] [--references FILE]
                                   [--threads 1] [--beam 5] [--lam 1.0] [--exact-sentences 8]
    python bench/decoding_bench.py --device cuda --bundle DIR ...   (bench/gpu/gpu_bench.py)

Measures decoding only (retrieval and piece collection: bench/pieces_bench.py). Each sentence gets
translation pieces as a TM match would give them: all 1..4-grams of its reference translation
(--references) or, without references, of the native search's second-best output, scored 0.8.
Times are the best of --repeat runs, per sentence (batch of 1, the best time of each sentence
summed over the sentences) and per batch of --batch sentences; native and the engines alternate
sentence by sentence, so that a change of machine load affects them alike. "agree" is the share
of sentences whose guided output is token for token that of the exact CTranslate2 engine
(computed on the first --exact-sentences sentences, because that engine is slow); the next
column compares every engine with the fast exact engine (fused, else torch-int8, else torch) on
all sentences, which is how often the approximate rerank mode finds what the exact search finds.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tm_guide.decoding.ct2_engine import CT2StepDecoder  # noqa: E402
from tm_guide.decoding.rerank import rerank_search  # noqa: E402
from tm_guide.decoding.rewards import PieceReward  # noqa: E402
from tm_guide.decoding.search import Hypothesis, SearchOptions, beam_search  # noqa: E402
from tm_guide.model import Bundle  # noqa: E402

DEFAULT_BUNDLE = ROOT / "tm_guide" / "models" / "demo-en-de"
SAMPLE = [
    "Click the Save button to save the current document.",
    "Choose Format - Cells and select the Numbers tab.",
    "Select the cell range that you want to sort.",
    "To insert a new sheet, right-click a sheet tab and choose Insert Sheet.",
    "The Print dialog opens with the default printer selected.",
    "Enter the name of the new style in the text box.",
    "This function returns the number of days between two dates.",
    "You can change the default font in the Options dialog.",
    "Drag the column border to change the column width.",
    "Opens a dialog where you can define the page layout.",
    "Deletes the selected rows from the table.",
    "If you enable this option, hidden paragraphs are printed.",
    "Specifies the position of the chart legend.",
    "Use the Navigator to move quickly between the objects in your document.",
    "Choose Tools - Options - Load/Save - General.",
    "The formula is recalculated whenever a cell value changes.",
    "Click the arrow next to the icon to open a toolbar.",
    "Select the text that you want to format as a heading.",
    "Press Enter to confirm the entry.",
    "Shows or hides the grid lines in the current sheet.",
    "Inserts a footnote or an endnote at the cursor position.",
    "The selected objects are grouped together.",
    "Enter the password again to confirm it.",
    "You can export the document as a PDF file.",
    "Choose Edit - Find & Replace to search for text.",
    "The table of contents is updated automatically.",
    "Specifies the number of decimal places that are displayed.",
    "Select a data source and click OK.",
    "Removes the direct formatting from the selection.",
    "Defines the line spacing of the current paragraph.",
    "To add a comment, choose Insert - Comment.",
    "The slide show starts from the current slide.",
]


def best_time(run: Callable[[], object], repeat: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def interleaved_times(
    runs: dict[str, Callable[[list[int]], object]], ids: list[int], repeat: int, singles: int
) -> tuple[dict[str, float], dict[str, float], dict[str, object]]:
    """Per run: the sum over the first `singles` sentences of the best per-sentence time, the
    best batch time, and the batch output. Runs alternate sentence by sentence (and batch by
    batch), so that a machine whose load changes during the bench slows all of them alike."""
    single = {name: [float("inf")] * singles for name in runs}
    batch = dict.fromkeys(runs, float("inf"))
    outputs: dict[str, object] = {}
    for _ in range(repeat):
        for position, i in enumerate(ids[:singles]):
            for name, run in runs.items():
                started = time.perf_counter()
                run([i])
                single[name][position] = min(single[name][position], time.perf_counter() - started)
        for name, run in runs.items():
            started = time.perf_counter()
            outputs[name] = run(ids)
            batch[name] = min(batch[name], time.perf_counter() - started)
    return {name: sum(times) for name, times in single.items()}, batch, outputs


def read_lines(path: Path | None, fallback: Sequence[str], count: int) -> list[str]:
    lines = list(fallback)
    if path is not None:
        lines = [x.strip() for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    while len(lines) < count:
        lines = lines + lines
    return lines[:count]


def piece_rewards(bundle: Bundle, targets: Sequence[Sequence[str]]) -> list[PieceReward]:
    index = {token: i for i, token in enumerate(bundle.vocabularies.target)}
    rewards = []
    for tokens in targets:
        grams = {
            tuple(tokens[s : s + n]): 0.8
            for s in range(len(tokens))
            for n in range(1, 5)
            if s + n <= len(tokens)
        }
        rewards.append(PieceReward.from_tokens(grams, index))
    return rewards


def on_kernel(
    compiled: Any, path: str, run: Callable[[list[int]], list[tuple[int, ...]]]
) -> Callable[[list[int]], list[tuple[int, ...]]]:
    """`run` on one kernel path of the fused engine (fused:avx2 and the like: the paths give the
    same bits, so only the time differs)."""

    def on(ids: list[int]) -> list[tuple[int, ...]]:
        compiled.set_kernel(path)
        return run(ids)

    return on


def main(argv: Sequence[str] | None = None) -> int:
    device = argparse.ArgumentParser(add_help=False)
    device.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    if device.parse_known_args(argv)[0].device == "cuda":  # the GPU table: bench/gpu/gpu_bench.py
        sys.path.insert(0, str(ROOT / "bench" / "gpu"))
        from gpu_bench import main as gpu_main

        return int(gpu_main(argv))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="cuda: the GPU table"
    )
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE)
    parser.add_argument("--sentences", type=Path)
    parser.add_argument("--references", type=Path)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--lam", type=float, default=1.0)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="for CTranslate2 and PyTorch alike")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--exact-sentences", type=int, default=8)
    parser.add_argument(
        "--single-sentences",
        type=int,
        help="time one sentence at a time over only the first N (default: all; under emulation "
        "the batch of all is what a run has time for)",
    )
    parser.add_argument(
        "--engines",
        default="fused,torch,torch-int8,rerank,ct2",
        help="comma-separated; native always; fused:PATH runs the fused engine on one kernel "
        "path of this CPU (avx512-vnni, avx2, neon-dotprod, neon, portable)",
    )
    parser.add_argument(
        "--scaling",
        action="store_true",
        help="also time one batch of all sentences on 1, 2 and all cores (fused and native)",
    )
    args = parser.parse_args(argv)
    if not (args.bundle / "model.bin").exists():
        print(f"no model bundle at {args.bundle}; pass --bundle DIR", file=sys.stderr)
        return 2

    wanted = [e.strip() for e in args.engines.split(",") if e.strip()]
    if "torch" in wanted or "torch-int8" in wanted:  # only these need the [torch] extra
        import torch

        torch.set_num_threads(args.threads)
    bundle = Bundle.load(args.bundle, device="cpu", intra_threads=args.threads)
    sentences = read_lines(args.sentences, SAMPLE, args.batch)
    inputs = [bundle.source_input(bundle.encode_source(s)) for s in sentences]
    options = SearchOptions(beam_size=args.beam, max_length=args.max_length, lam=args.lam)
    translator = bundle.translator

    def native(batch: Sequence[Sequence[str]]) -> list[list[str]]:
        outputs = translator.translate_batch(
            list(batch), beam_size=args.beam, max_decoding_length=args.max_length
        )
        return [o.hypotheses[0] for o in outputs]

    def native_ids(ids: list[int]) -> list[list[str]]:
        return native([inputs[i] for i in ids])

    if args.references is not None:
        refs = read_lines(args.references, [], args.batch)
        targets = [bundle.encode_target(r) for r in refs]
    else:
        outputs = translator.translate_batch(
            inputs, beam_size=args.beam, num_hypotheses=2, max_decoding_length=args.max_length
        )
        targets = [o.hypotheses[-1] for o in outputs]
    rewards = piece_rewards(bundle, targets)
    index = {token: i for i, token in enumerate(bundle.vocabularies.target)}
    vocabulary = bundle.vocabularies.target

    engines: dict[str, Callable[[list[int]], list[tuple[int, ...]]]] = {}

    def via(decoder: object) -> Callable[[list[int]], list[tuple[int, ...]]]:
        def run(ids: list[int]) -> list[tuple[int, ...]]:
            found = beam_search(
                decoder,  # type: ignore[arg-type]
                [inputs[i] for i in ids],
                options,
                [rewards[i] for i in ids],
            )
            return [h[0].token_ids for h in found]

        return run

    if "torch" in wanted or "torch-int8" in wanted:
        from tm_guide.decoding.torch_engine import TorchStepDecoder
    if "torch" in wanted:
        engines["torch"] = via(TorchStepDecoder(bundle.path))
    if "torch-int8" in wanted:
        engines["torch-int8"] = via(TorchStepDecoder(bundle.path, quantize=True))
    fused_paths = [e for e in wanted if e == "fused" or e.startswith("fused:")]
    if fused_paths:
        from tm_guide.decoding import compiled, fused_engine

        fused = fused_engine.FusedDecoder(bundle.path)
        best_path = compiled.kernel()
        for name in fused_paths:
            path = name.partition(":")[2] or best_path
            engines[name if name != "fused" else f"fused ({path})"] = on_kernel(
                compiled, path, via(fused)
            )
    if "rerank" in wanted:

        def rerank(ids: list[int]) -> list[tuple[int, ...]]:
            found: list[list[Hypothesis]] = rerank_search(
                translator, [inputs[i] for i in ids], options, [rewards[i] for i in ids], index
            )
            return [h[0].token_ids for h in found]

        engines["rerank"] = rerank
    exact = via(CT2StepDecoder(translator, vocabulary))

    every = list(range(len(inputs)))
    few = every[: args.exact_sentences]
    print(
        f"bundle {args.bundle.name} ({bundle.card.quantization}), {len(inputs)} sentences, "
        f"beam {args.beam}, lambda {args.lam}, threads {args.threads}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    )
    reference_outputs = exact(few) if "ct2" in wanted else None

    rows = []
    timed: dict[str, Callable[[list[int]], object]] = {"native (unguided)": native_ids, **engines}
    singles = min(args.single_sentences or len(every), len(every))
    single_times, batch_times, outputs = interleaved_times(timed, every, args.repeat, singles)
    # The exact CTranslate2 engine is too slow for every sentence; the fast exact engine, which
    # agrees with it, stands in as the reference over the whole set.
    fast_exact = next(
        (e for e in engines if e.startswith("fused")),
        next((e for e in ("torch-int8", "torch") if e in engines), None),
    )
    native_single = single_times["native (unguided)"]
    native_batch = batch_times["native (unguided)"]
    for name in timed:
        agree = None
        if reference_outputs is not None and name in engines:
            got = outputs[name][: len(few)]  # type: ignore[index]
            agree = sum(a == b for a, b in zip(got, reference_outputs, strict=True)) / len(few)
        agree_all = None
        if fast_exact is not None and name in engines:
            pairs = zip(outputs[name], outputs[fast_exact], strict=True)  # type: ignore[call-overload]
            agree_all = sum(a == b for a, b in pairs) / len(every)
        rows.append((name, single_times[name], batch_times[name], agree, agree_all))
    if "ct2" in wanted:
        single, _ = best_time(lambda: [exact([i]) for i in few], 1)
        batch, _ = best_time(lambda: exact(few), 1)
        n_single, _ = best_time(lambda: [native([inputs[i]]) for i in few], args.repeat)
        n_batch, _ = best_time(lambda: native([inputs[i] for i in few]), args.repeat)
        # scaled to the same sentences as the others through its ratio to native on `few`
        rows.append(
            (
                f"ct2 exact (first {len(few)})",
                single / n_single * native_single,
                batch / n_batch * native_batch,
                1.0,
                None,
            )
        )

    print()
    print(
        f"{'engine':<24}{'ms/sentence':>12}{'x native':>10}{'ms/batch':>12}{'x native':>10}"
        f"{'agree':>8}{'= ' + (fast_exact or '-'):>14}"
    )
    for name, single, batch, agree, agree_all in rows:
        per_sentence = single / singles * 1000
        print(
            f"{name:<24}{per_sentence:>12.1f}{single / native_single:>10.2f}"
            f"{batch * 1000:>12.0f}{batch / native_batch:>10.2f}"
            f"{'' if agree is None else f'{agree:.0%}':>8}"
            f"{'' if agree_all is None else f'{agree_all:.0%}':>14}"
        )
    if singles < len(every):
        print(f"ms/sentence: the first {singles} sentences, one at a time")
    if "ct2" in wanted:
        print(f"agree: same output as the exact CTranslate2 engine (first {len(few)} sentences)")
    if fast_exact is not None:
        print(f"= {fast_exact}: same output as that exact engine on all {len(every)} sentences")
    if args.scaling:
        first = next((e for e in wanted if e.startswith("fused")), "fused")
        thread_scaling(args, inputs, rewards, options, first.partition(":")[2] or None)
    return 0


def thread_scaling(
    args: argparse.Namespace,
    inputs: list[list[str]],
    rewards: list[PieceReward],
    options: SearchOptions,
    kernel: str | None,
) -> None:
    """One batch of every sentence on 1, 2 and all cores: the fused engine's threads (on
    `kernel`, else the CPU's fastest path) against CTranslate2's intra_threads (native,
    unguided), best of --repeat, runs alternating."""
    from tm_guide.decoding import compiled, fused_engine

    compiled.set_kernel(kernel or compiled.kernels()[0])
    counts = sorted({1, 2, os.cpu_count() or 1})
    runs: dict[str, Callable[[], object]] = {}
    for n in counts:
        decoder = fused_engine.FusedDecoder(args.bundle, threads=n)
        translator = Bundle.load(args.bundle, device="cpu", intra_threads=n).translator
        runs[f"fused {n}"] = lambda d=decoder: beam_search(d, inputs, options, rewards)
        runs[f"native {n}"] = lambda t=translator: t.translate_batch(
            inputs, beam_size=args.beam, max_decoding_length=args.max_length
        )
    times = dict.fromkeys(runs, float("inf"))
    outputs: dict[str, object] = {}
    for _ in range(args.repeat):
        for name, run in runs.items():
            started = time.perf_counter()
            outputs[name] = run()
            times[name] = min(times[name], time.perf_counter() - started)
    same = all(outputs[f"fused {n}"] == outputs["fused 1"] for n in counts)
    print()
    print(
        f"one batch of {len(inputs)} on N threads ({compiled.kernel()} kernels); "
        f"fused outputs identical across thread counts: {same}"
    )
    print(
        f"{'threads':>8}{'fused ms':>10}{'speed-up':>10}{'native ms':>11}{'speed-up':>10}"
        f"{'x native':>10}"
    )
    for n in counts:
        fused, native = times[f"fused {n}"], times[f"native {n}"]
        print(
            f"{n:>8}{fused * 1000:>10.0f}{times['fused 1'] / fused:>10.2f}"
            f"{native * 1000:>11.0f}{times['native 1'] / native:>10.2f}{fused / native:>10.2f}"
        )


if __name__ == "__main__":
    sys.exit(main())
