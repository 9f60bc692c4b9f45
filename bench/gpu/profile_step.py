"""Where a guided step's GPU time goes: PyTorch's profiler over one batch, by kernel.

    python bench/gpu/profile_step.py --bundle DIR [--batch 128] [--max-length 64]

Runs one guided batch (pieces from the engine's own unguided output, as gpu_bench.py) on the
torch engine in float16 with the steps launched one by one (a CUDA graph hides its kernels from
the profiler), and prints the kernels and operators by total GPU time; then times torch.topk
on the two shapes a step can rank (per sentence [batch, beam x vocab], per row [batch x beam,
vocab]).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "gpu"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the script")
    args = parser.parse_args(argv)

    import torch
    from decoding_bench import SAMPLE, read_lines
    from gpu_bench import _rewards_from
    from torch.profiler import ProfilerActivity, profile

    from tm_guide.decoding.search import SearchOptions, beam_search
    from tm_guide.decoding.torch_engine import TorchStepDecoder
    from tm_guide.model import Bundle

    bundle = Bundle.load(args.bundle, device="cpu")
    sentences = read_lines(None, SAMPLE, args.batch)
    inputs = [bundle.source_input(bundle.encode_source(s)) for s in sentences]
    decoder = TorchStepDecoder(args.bundle, device=args.device, fixed_steps=False)
    on_gpu = args.device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])

    def sync() -> None:
        if on_gpu:
            torch.cuda.synchronize()

    unguided = SearchOptions(beam_size=args.beam, max_length=args.max_length, lam=0.0)
    guided = SearchOptions(beam_size=args.beam, max_length=args.max_length, lam=1.0)
    found = beam_search(decoder, inputs, unguided)
    rewards = _rewards_from(bundle, [h[0].token_ids for h in found])
    beam_search(decoder, inputs, guided, rewards)
    sync()
    with profile(activities=activities) as prof:
        beam_search(decoder, inputs, guided, rewards)
        sync()
    print(f"batch {args.batch}, guided, float16, steps one by one:")
    averages = prof.key_averages()
    order = "cuda_time_total" if on_gpu else "cpu_time_total"
    print(averages.table(sort_by=order, row_limit=25, max_name_column_width=60))

    vocab = decoder.vocab_size
    rows = args.batch * args.beam
    k = 2 * args.beam
    for shape in ((args.batch, args.beam * vocab), (rows, vocab)):
        x = torch.randn(shape, device=args.device)
        for _ in range(3):
            torch.topk(x, k, dim=1)
        sync()
        started = time.perf_counter()
        for _ in range(20):
            torch.topk(x, k, dim=1)
        sync()
        seconds = (time.perf_counter() - started) / 20
        print(f"torch.topk {list(shape)} k={k}: {seconds * 1e3:.3f} ms")
    _reorders(args, decoder, sync)
    return 0


def _reorders(args: argparse.Namespace, decoder: object, sync: object) -> None:
    """The beam reorder of one layer's cache three ways (time-major index_select, advanced
    indexing, row-major index_select), for the next change to the cache's layout."""
    import torch

    model = decoder.model  # type: ignore[attr-defined]
    rows = args.batch * args.beam
    shape = (args.max_length, rows, model.heads, model.head_dim)
    dtype = torch.float16 if args.device == "cuda" else torch.float32
    time_major = torch.randn(shape, device=args.device).to(dtype)
    row_major = time_major.transpose(0, 1).contiguous()
    out = torch.empty_like(time_major)
    parents = torch.randint(0, rows, (rows,), device=args.device)
    variants = {
        "index_select(time-major, 1, out=)": lambda: torch.index_select(
            time_major, 1, parents, out=out
        ),
        "time_major[:, parents]": lambda: time_major[:, parents],
        "index_select(row-major, 0)": lambda: torch.index_select(row_major, 0, parents),
    }
    for name, run in variants.items():
        for _ in range(3):
            run()
        sync()  # type: ignore[operator]
        started = time.perf_counter()
        for _ in range(20):
            run()
        sync()  # type: ignore[operator]
        seconds = (time.perf_counter() - started) / 20
        print(f"reorder {list(shape)} {name}: {seconds * 1e3:.3f} ms")


if __name__ == "__main__":
    sys.exit(main())
