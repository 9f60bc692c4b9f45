"""Guided decoding on a GPU: the torch engine against transformers' generate and the CPU engines.

    python bench/decoding_bench.py --device cuda --bundle DIR [--checkpoint DIR]
                                   [--int8-bundle DIR] [--batches 1,32,128] [--max-length 64]

(or this file with the same arguments). DIR is a float32 bundle (bench/random_bundle.py
--quantization float32 for an OPUS-sized one); --checkpoint is the transformers checkpoint it was
converted from (random_bundle.py leaves it beside the bundle as DIR-checkpoint), for
`MarianMTModel.generate(num_beams=5)` in float16 on the same weights; --int8-bundle the same
checkpoint converted to int8, for the fused engine and CTranslate2 on the CPU's cores.

Each sentence gets translation pieces as a close TM match would give them: every 1..4-gram of the
engine's own unguided output, scored 0.8 (so guidance changes little, and the output length stays
the same for both). Per batch size: ms per sentence, best of --repeat, the same sentences for
every row; batch 1 over the first --single sentences one at a time. Then the checks that make the
times mean something: the search ranked on the GPU equals the search ranked on the host, bit for
bit (float32); float16 at lambda 0 against float32; where the time of a step goes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _best(run: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        _sync()
        started = time.perf_counter()
        out = run()
        _sync()
        best = min(best, time.perf_counter() - started)
    return best, out


def _rewards_from(bundle: Any, outputs: Sequence[Sequence[int]]) -> list[Any]:
    """Pieces as a close match would give them: every 1..4-gram of each output, scored 0.8."""
    from decoding_bench import piece_rewards

    vocabulary = bundle.vocabularies.target
    return piece_rewards(bundle, [[vocabulary[i] for i in ids] for ids in outputs])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path)
    parser.add_argument("--int8-bundle", type=Path)
    parser.add_argument("--batches", default="1,32,128")
    parser.add_argument("--single", type=int, default=8, help="sentences timed one at a time")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--torch-device", default="cuda", help="cpu: a dry run of the script (float32 only)"
    )
    args, _ = parser.parse_known_args(argv)

    import torch
    from decoding_bench import SAMPLE, read_lines

    from tm_guide.decoding.search import SearchOptions, beam_search, python_beam_search
    from tm_guide.decoding.torch_engine import TorchStepDecoder
    from tm_guide.model import Bundle

    on = args.torch_device
    if on == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    batches = [int(b) for b in args.batches.split(",")]
    largest = max(batches)
    bundle = Bundle.load(args.bundle, device="cpu", intra_threads=args.threads)
    sentences = read_lines(None, SAMPLE, largest)
    inputs = [bundle.source_input(bundle.encode_source(s)) for s in sentences]
    unguided = SearchOptions(beam_size=args.beam, max_length=args.max_length, lam=0.0)
    guided = SearchOptions(beam_size=args.beam, max_length=args.max_length, lam=1.0)
    gpu = torch.cuda.get_device_name(0) if on == "cuda" else "CPU (dry run)"
    print(
        f"{gpu}, torch {torch.__version__}, bundle {args.bundle.name}, beam {args.beam}, "
        f"max length {args.max_length}, {len(inputs)} sentences, {os.cpu_count()} CPUs"
    )
    half_type = "float16" if on == "cuda" else "float32"
    engines = {
        "half": TorchStepDecoder(args.bundle, device=on, compute_type=half_type),
        "half, no graphs": TorchStepDecoder(
            args.bundle, device=on, compute_type=half_type, fixed_steps=False
        ),
        "float32": TorchStepDecoder(args.bundle, device=on, compute_type="float32"),
    }
    half = engines["half"]
    # pieces from the engine's own unguided output, and warm-up (graphs, cuBLAS)
    found = beam_search(half, inputs, unguided)
    rewards = _rewards_from(bundle, [h[0].token_ids for h in found])
    lengths = [len(h[0].token_ids) for h in found]
    print(f"unguided output length: mean {sum(lengths) / len(lengths):.1f} tokens")
    for decoder in engines.values():
        for batch in batches:
            beam_search(decoder, inputs[:batch], guided, rewards[:batch])

    print(f"CUDA graphs recorded by the {half_type} engine: {half.recorded_graphs}")
    rows: list[dict[str, Any]] = []

    def timed(name: str, batch: int, run: Callable[[Sequence[int]], Any]) -> None:
        try:
            if batch == 1:
                total = 0.0
                for i in range(min(args.single, len(inputs))):
                    seconds, _ = _best(lambda i=i: run([i]), args.repeat)
                    total += seconds
                per = total / min(args.single, len(inputs))
            else:
                seconds, _ = _best(lambda: run(list(range(batch))), args.repeat)
                per = seconds / batch
        except Exception as exc:  # noqa: BLE001 - a row that cannot run says why
            print(f"{name} batch {batch}: {type(exc).__name__}: {exc}")
            return
        rows.append({"row": name, "batch": batch, "ms_per_sentence": per * 1000})
        print(f"  {name:<40} batch {batch:>4}: {per * 1000:8.2f} ms/sentence", flush=True)

    def ours(decoder: Any, options: SearchOptions, with_rewards: bool) -> Callable[[Any], Any]:
        return lambda ids: beam_search(
            decoder,
            [inputs[i] for i in ids],
            options,
            [rewards[i] for i in ids] if with_rewards else None,
        )

    generate = _generate(args, sentences, on) if args.checkpoint else None
    native = _ct2_cuda(args, inputs) if on == "cuda" else None
    for batch in batches:
        print(f"batch {batch}:")
        timed(f"torch {on} {half_type}, lambda 0", batch, ours(half, unguided, False))
        timed(f"torch {on} {half_type}, guided", batch, ours(half, guided, True))
        timed(
            f"torch {on} {half_type}, guided, no graphs",
            batch,
            ours(engines["half, no graphs"], guided, True),
        )
        timed(f"torch {on} float32, guided", batch, ours(engines["float32"], guided, True))
        if generate is not None:
            timed("transformers generate float16", batch, generate)
        if native is not None:
            timed("CTranslate2 CUDA float16, unguided", batch, native)
    if args.int8_bundle:
        _cpu_rows(args, inputs, rewards, guided, timed)
    # the same float32 engine, every score copied to the host and ranked there
    on_host = TorchStepDecoder(args.bundle, device=on, compute_type="float32", rank_on_device=False)
    _checks(engines, on_host, inputs, rewards, guided, unguided, python_beam_search)
    _agreement(on, half_type, args.beam)
    for batch in (1, largest):
        _profile(half, inputs[:batch], rewards[:batch], guided)
    _table(rows, gpu, args, f"torch {on} {half_type}, guided")
    if args.json:
        args.json.write_text(json.dumps({"gpu": gpu, "rows": rows}, indent=1), encoding="utf-8")
    return 0


def _generate(
    args: argparse.Namespace, sentences: Sequence[str], on: str
) -> Callable[[Any], Any] | None:
    """transformers' MarianMTModel.generate(num_beams) in float16 on the checkpoint's weights."""
    import torch

    try:
        import transformers

        tokenizer = transformers.MarianTokenizer.from_pretrained(args.checkpoint)
        model = transformers.MarianMTModel.from_pretrained(args.checkpoint).eval()
        model = model.half().cuda() if on == "cuda" else model
    except Exception as exc:  # noqa: BLE001
        print(f"transformers generate: not loaded: {type(exc).__name__}: {exc}")
        return None

    @torch.inference_mode()
    def run(ids: Sequence[int]) -> Any:
        batch = tokenizer([sentences[i] for i in ids], return_tensors="pt", padding=True)
        return model.generate(
            **batch.to(on),
            num_beams=args.beam,
            max_new_tokens=args.max_length,
            min_new_tokens=args.max_length,
        )

    run([0, 1])
    return run


def _cpu_rows(
    args: argparse.Namespace,
    inputs: Sequence[Sequence[str]],
    rewards: Sequence[Any],
    guided: Any,
    timed: Callable[[str, int, Callable[[Any], Any]], None],
) -> None:
    """The fused engine (guided) and CTranslate2 (unguided) on the host's cores, batch 32."""
    from tm_guide.decoding.search import beam_search
    from tm_guide.model import Bundle

    try:
        from tm_guide.decoding.fused_engine import FusedDecoder

        fused = FusedDecoder(args.int8_bundle, threads=args.threads)
        timed(
            f"fused CPU {args.threads} threads, guided",
            min(32, len(inputs)),
            lambda ids: beam_search(
                fused, [inputs[i] for i in ids], guided, [rewards[i] for i in ids]
            ),
        )
    except Exception as exc:  # noqa: BLE001
        print(f"fused engine: {type(exc).__name__}: {exc}")
    translator = Bundle.load(args.int8_bundle, device="cpu", intra_threads=args.threads).translator
    timed(
        f"CTranslate2 CPU {args.threads} threads, unguided",
        min(32, len(inputs)),
        lambda ids: translator.translate_batch(
            [list(inputs[i]) for i in ids],
            beam_size=args.beam,
            max_decoding_length=args.max_length,
        ),
    )


def _ct2_cuda(
    args: argparse.Namespace, inputs: Sequence[Sequence[str]]
) -> Callable[[Any], Any] | None:
    """CTranslate2's own beam search on CUDA in float16 (unguided), where it runs here."""
    try:
        import ctranslate2

        translator = ctranslate2.Translator(str(args.bundle), device="cuda", compute_type="float16")

        def run(ids: Sequence[int]) -> Any:
            return translator.translate_batch(
                [list(inputs[i]) for i in ids],
                beam_size=args.beam,
                max_decoding_length=args.max_length,
            )

        run([0])
        return run
    except Exception as exc:  # noqa: BLE001
        print(f"CTranslate2 CUDA: does not run here: {type(exc).__name__}: {exc}")
        return None


def _checks(
    engines: dict[str, Any],
    host_ranked: Any,
    inputs: Sequence[Sequence[str]],
    rewards: Sequence[Any],
    guided: Any,
    unguided: Any,
    python_beam_search: Callable[..., Any],
) -> None:
    """Ranking on the GPU (the compiled search) equals ranking every score on the host
    (search.py, `host_ranked`: the same float32 engine), guided, 32 sentences; the graphs'
    fixed steps against the dynamic steps; float16 against float32 at lambda 0."""
    from tm_guide.decoding.search import beam_search

    full = engines["float32"]
    some = list(inputs[:32])
    on_host = python_beam_search(host_ranked, some, guided, list(rewards[:32]))
    on_device = beam_search(full, some, guided, list(rewards[:32]))
    print(f"check: guided search ranked on the GPU == ranked on the host: {on_host == on_device}")
    graphs = beam_search(engines["half"], list(inputs), unguided)
    steps = beam_search(engines["half, no graphs"], list(inputs), unguided)
    b = beam_search(full, list(inputs), unguided)

    def same(x: Any, y: Any) -> int:
        return sum(p[0].token_ids == q[0].token_ids for p, q in zip(x, y, strict=True))

    print(f"check: graphs == no graphs at lambda 0: {same(graphs, steps)} of {len(b)}")
    print(f"check: float16 == float32 at lambda 0: {same(graphs, b)} of {len(b)}")


def _agreement(on: str, compute_type: str, beam: int, count: int = 128) -> None:
    """The issue's agreement check on a trained model (the bundled demo, whose next-token
    distributions are not flat as random weights' are): the torch engine at lambda 0 on the
    device in `compute_type` against CTranslate2's own beam search on the CPU in float32 (the
    same weights, dequantized), over the bench's sentences. Identical outputs, and of the rest
    how many are in CTranslate2's n-best within 0.02 of its best (a near-tie)."""
    import ctranslate2
    from decoding_bench import SAMPLE, read_lines

    from tm_guide.config import BUNDLED_MODEL
    from tm_guide.decoding.search import SearchOptions, beam_search
    from tm_guide.decoding.torch_engine import TorchStepDecoder
    from tm_guide.model import Bundle

    bundle = Bundle.load(BUNDLED_MODEL, device="cpu")
    sentences = read_lines(None, SAMPLE, count)
    inputs = [bundle.source_input(bundle.encode_source(s)) for s in sentences]
    reference = ctranslate2.Translator(str(BUNDLED_MODEL), device="cpu", compute_type="float32")
    native = reference.translate_batch(
        inputs, beam_size=beam, num_hypotheses=beam, max_decoding_length=64, return_scores=True
    )
    decoder = TorchStepDecoder(BUNDLED_MODEL, device=on, compute_type=compute_type)
    found = beam_search(decoder, inputs, SearchOptions(beam_size=beam, max_length=64, lam=0.0))
    vocabulary = bundle.vocabularies.target
    same = near = 0
    for output, hypotheses in zip(native, found, strict=True):
        ours = [vocabulary[t] for t in hypotheses[0].token_ids]
        if ours == output.hypotheses[0]:
            same += 1
        elif ours in output.hypotheses:
            rank = output.hypotheses.index(ours)
            near += output.scores[0] - output.scores[rank] <= 0.02
    print(
        f"agreement (demo model, {on} {compute_type} vs CTranslate2 CPU float32, lambda 0): "
        f"{same} of {len(inputs)} identical, {near} of the rest a near-tie (in its n-best "
        "within 0.02 of its best)"
    )


def _profile(decoder: Any, inputs: Sequence[Any], rewards: Sequence[Any], options: Any) -> None:
    """Where a guided batch's time goes: the engine's step (model and ranking, synchronised)
    against the search's host work."""
    from tm_guide.decoding.search import beam_search

    spent = [0.0, 0]
    original = decoder.step_candidates

    def step_candidates(*a: Any, **k: Any) -> Any:
        started = time.perf_counter()
        out = original(*a, **k)
        spent[0] += time.perf_counter() - started
        spent[1] += 1
        return out

    decoder.step_candidates = step_candidates
    try:
        _sync()
        started = time.perf_counter()
        beam_search(decoder, list(inputs), options, list(rewards))
        total = time.perf_counter() - started
    finally:
        del decoder.step_candidates
    print(
        f"profile: batch {len(inputs)} guided {decoder.compute_type}: {total * 1000:.0f} ms, "
        f"{spent[1]} steps, engine step {spent[0] * 1000:.0f} ms "
        f"({spent[0] / max(spent[1], 1) * 1000:.2f} ms/step), "
        f"host search {(total - spent[0]) * 1000:.0f} ms"
    )


def _table(rows: list[dict[str, Any]], gpu: str, args: argparse.Namespace, guided: str) -> None:
    """The rows as a Markdown table, each with its ratio to `guided` (the GPU engine, guided)
    at the same batch size (CPU rows: at their own batch)."""
    print()
    print(f"{gpu}; beam {args.beam}, max length {args.max_length}; x {guided} at that batch")
    print("| row | batch | ms/sentence | x guided |")
    print("|---|---|---|---|")
    reference = {r["batch"]: r["ms_per_sentence"] for r in rows if r["row"] == guided}
    for r in rows:
        ref = reference.get(r["batch"])
        ratio = f"{r['ms_per_sentence'] / ref:.2f}" if ref else ""
        print(f"| {r['row']} | {r['batch']} | {r['ms_per_sentence']:.2f} | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
