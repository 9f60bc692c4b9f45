"""`tm-guide eval`: the paper's section-4 analyses on a test set and a TM, written as a report."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from tm_guide.config import BUNDLED_MODEL
from tm_guide.evaluation.options import PAPER_LAMBDAS, PAPER_M_VALUES, EvalOptions


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from exc


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from exc


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate guided vs unguided translation and write a report (paper section 4)",
        description="Translate a test (and dev) set unguided and guided by a TM, and write "
        "README.md, results.json and PNG figures with the paper's tables into --output.",
    )
    parser.add_argument("--test", type=Path, required=True, help="test TSV: source<TAB>reference")
    parser.add_argument("--dev", type=Path, help="dev TSV on which lambda is tuned")
    parser.add_argument(
        "--tm",
        required=True,
        help="memory name in the --db store, or a TSV of TM pairs (imported and aligned into a "
        "throwaway SQLite store)",
    )
    parser.add_argument("--model", type=Path, default=BUNDLED_MODEL, help="model bundle")
    parser.add_argument("--output", type=Path, required=True, help="report directory")
    parser.add_argument(
        "--lambdas",
        type=_floats,
        default=None,
        help="lambdas tuned on dev (default: the model card's guided_lambda, as served; "
        f"without one the paper's {','.join(f'{x:g}' for x in PAPER_LAMBDAS)})",
    )
    rule = parser.add_mutually_exclusive_group()
    rule.add_argument(
        "--pieces-once",
        action="store_const",
        dest="reward_rule",
        const="once",
        help="reward a piece of 2+ tokens once per hypothesis instead of every time it is "
        "produced (eq. 10)",
    )
    rule.add_argument(
        "--clipped",
        action="store_const",
        dest="reward_rule",
        const="clipped",
        help="reward each piece, single tokens included, at most as often as its TM target "
        "holds it",
    )
    rule.add_argument(
        "--eq10",
        action="store_const",
        dest="reward_rule",
        const="eq10",
        help="reward every occurrence of a piece (eq. 10)",
    )
    parser.add_argument(
        "--weighting",
        help="piece weight from the match similarity s: linear (s), power:P or step:T:H "
        "(default: the model card's guided_weighting, else linear)",
    )
    parser.add_argument(
        "--repair",
        help="repair the best match's target from this similarity: off, T or T:SCALE:MARGIN "
        "(default: the model card's guided_repair, else off)",
    )
    parser.add_argument(
        "--choice",
        help="from which best-match similarity the served candidate is chosen by the model's "
        "score: off or T:MATCH:REPAIRED:GUIDED (default: the model card's guided_choice, else off)",
    )
    parser.add_argument("--m", type=int, default=10, help="retrieval size of the main run")
    parser.add_argument(
        "--m-values",
        type=_ints,
        default=PAPER_M_VALUES,
        help="retrieval sizes of Figures 4-6 (default 1,5,10,20,50,100)",
    )
    parser.add_argument(
        "--engines",
        default="auto",
        help="comma-separated decoding engines; the first gives the quality numbers (default "
        "auto: the fastest exact engine for the model here)",
    )
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--max-length-ratio",
        type=float,
        default=2.0,
        help="stop outputs at RATIO x source length + 10 tokens, guided and unguided (0 = no cap)",
    )
    parser.add_argument("--limit", type=int, help="seeded random sample of N sentences per set")
    parser.add_argument(
        "--timing-limit",
        type=int,
        default=50,
        help="sentences timed for each extra engine (default 50)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="intra-op threads of CTranslate2 and PyTorch alike (default 1; 0 = their defaults)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bootstrap-samples", type=int, default=1000)
    parser.add_argument("--no-plots", action="store_true", help="write no PNG figures")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from tm_guide.evaluation.report import write_report
    from tm_guide.evaluation.runner import run_evaluation

    options = EvalOptions(
        test=args.test,
        dev=args.dev,
        tm=args.tm,
        model=args.model,
        output_dir=args.output,
        db_url=args.db,
        lambdas=args.lambdas,
        reward_repeats=None if args.reward_rule is None else args.reward_rule == "eq10",
        clipped=None if args.reward_rule is None else args.reward_rule == "clipped",
        weighting=args.weighting,
        repair=args.repair,
        choice=args.choice,
        m=args.m,
        m_values=args.m_values,
        engines=tuple(e.strip() for e in args.engines.split(",") if e.strip()),
        device=args.device,
        beam_size=args.beam_size,
        batch_size=args.batch_size,
        max_length_ratio=args.max_length_ratio,
        limit=args.limit,
        timing_limit=args.timing_limit,
        threads=args.threads,
        seed=args.seed,
        bootstrap_samples=args.bootstrap_samples,
        progress=not args.quiet,
    )
    command = "tm-guide " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "tm-guide eval"
    results = run_evaluation(options, command)
    written = write_report(results, options.output_dir, plots=not args.no_plots)
    test = results["test"]
    print(f"report: {written['markdown']}")
    for key in ("unguided", "guided", "served", "binary_reward", "best_match"):
        if key in test:
            print(f"  {key:14s} BLEU {test[key]['bleu']:6.2f}  chrF {test[key]['chrf']:6.2f}")
    return 0
