"""Writing a report: raw numbers as JSON, PNG figures, a Markdown page laid out like the paper.

The Markdown is rendered from the same dictionary that is written as JSON, so they cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tm_guide.evaluation.analysis import CLOSE_MATCH
from tm_guide.evaluation.plots import write_plots

RESULTS_JSON = "results.json"
REPORT_MD = "README.md"

SYSTEM_LABELS = {
    "unguided": "NMT (unguided)",
    "guided": "Guided (ours)",
    "served": "Served (a 100 match's target, else guided)",
    "binary_reward": "1/0 reward",
    "best_match": "Best TM match only",
}


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{1000 * seconds:.1f}"


def render_markdown(results: dict[str, Any], figures: dict[str, str]) -> str:
    """The report page. Every number shown comes from `results` (also written as JSON)."""
    sig = results["signature"]
    data = results["data"]
    out: list[str] = [
        f"# tm-guide evaluation: {sig['model']['name']} on {data['test']['name']}",
        "",
    ]
    out += [
        "Reproduces the analyses of Zhang et al. (NAACL 2018), section 4, on our data. "
        f"Raw numbers: [{RESULTS_JSON}]({RESULTS_JSON}).",
        "",
        "## What was run",
        "",
        "```",
        results["command"],
        "```",
        "",
        _table(
            ["set", "file", "sentences evaluated", "sentences in file"],
            [
                [key, data[key]["path"], data[key]["sentences"], data[key]["total"]]
                for key in ("test", "dev")
                if data.get(key)
            ],
        ),
        "",
        f"TM: `{data['tm']['name']}`, {data['tm']['segments']} segments, "
        f"revision {data['tm']['revision']}. "
        f"Main run: engine `{results['options']['engines'][0]}`, "
        f"beam {results['options']['beam_size']}, "
        f"M = {results['options']['m']}, lambda = {results['best_lambda']} "
        f"({results['lambda_choice']}), {_reward_rule(results)}.",
        "",
    ]
    for note in results.get("notes", []):
        out += [f"> {note}", ""]

    systems = [key for key in SYSTEM_LABELS if key in results["test"]]
    out += ["## Table 2/3 analogue: translation quality", ""]
    rows = []
    for split in ("dev", "test"):
        block = results["dev_systems"] if split == "dev" else results["test"]
        if not block:
            continue
        for key in SYSTEM_LABELS:
            if key in block:
                score = block[key]
                rows.append(
                    [
                        split,
                        SYSTEM_LABELS[key],
                        score["bleu"],
                        score["chrf"],
                        f"{score['length_ratio']:.3f}",
                        score.get("repeated_outputs", "-"),
                        score["sentences"],
                    ]
                )
    out += [
        _table(
            [
                "set",
                "system",
                "BLEU",
                "chrF",
                "length ratio (Table 3)",
                "repeated outputs",
                "sentences",
            ],
            rows,
        ),
        "",
        "Repeated outputs: outputs that say a word or phrase (up to 4 words) again right after "
        "itself more often than their source does (tm_guide/evaluation/repetition.py); a guided "
        "system should have no more than the unguided one.",
        "",
    ]

    dev = results.get("dev")
    if dev:
        out += ["### Tuning lambda on dev", ""]
        out += [
            _table(
                ["lambda", "BLEU", "chrF"],
                [["0 (unguided)", dev["unguided"]["bleu"], dev["unguided"]["chrf"]]]
                + [[lam, score["bleu"], score["chrf"]] for lam, score in dev["guided"].items()],
            ),
            "",
        ]
        if "dev_lambda" in figures:
            out += [f"![lambda on dev]({figures['dev_lambda']})", ""]

    boot = results.get("bootstrap")
    if boot:
        out += ["### Significance: paired bootstrap resampling (sacrebleu)", ""]
        out += [
            _table(
                ["system", "metric", "score", "mean +- 95% CI", "p-value vs unguided"],
                [
                    [
                        SYSTEM_LABELS.get(r["system"], r["system"]),
                        r["metric"],
                        r["score"],
                        f"{r['mean']:.2f} +- {r['ci']:.2f}",
                        "(baseline)" if r["p_value"] is None else f"{r['p_value']:.4f}",
                    ]
                    for r in boot["results"]
                ],
            ),
            "",
        ]
        out += [f"- `{metric}`: `{text}`" for metric, text in boot["signatures"].items()] + [""]

    simi = results["similarity"]
    out += [
        "## Tables 4 and 5: similarity to the TM",
        "",
        f"Best-match similarity per test sentence (eq. 11, at M = {results['options']['m']}); "
        f"the test set is split at the median ({simi['median']:.3f}) into half-H and half-L.",
        "",
    ]
    out += [
        _table(
            ["", "whole", "half-H", "half-L"],
            [
                ["similarity (eq. 12)", simi["whole"], simi["high"], simi["low"]],
                [
                    "sentences",
                    simi["sentences"]["whole"],
                    simi["sentences"]["high"],
                    simi["sentences"]["low"],
                ],
            ],
        ),
        "",
    ]
    halves = results["halves"]
    out += [
        _table(
            ["BLEU", "whole", "half-H", "half-L"],
            [
                [SYSTEM_LABELS[key], halves["whole"][key], halves["high"][key], halves["low"][key]]
                for key in systems
            ],
        ),
        "",
    ]
    out += [
        _table(
            ["similarity", "sentences", "percent"],
            [
                [row["label"], row["sentences"], f"{row['percent']:.1f}%"]
                for row in simi["histogram"]
            ],
        ),
        "",
    ]
    if "similarity_histogram" in figures:
        out += [f"![similarity histogram]({figures['similarity_histogram']})", ""]

    deciles = results.get("deciles")
    if deciles:
        keys = [k for k in SYSTEM_LABELS if k in deciles[0]["bleu"]]
        out += [
            "## Quality by similarity of the best TM match",
            "",
            "BLEU of each system on the test sentences whose best TM match (eq. 9) falls in each "
            f"decile. From {CLOSE_MATCH} up the suggestion has to beat the best match's target, "
            "below it the unguided model; the next column compares the served suggestion with "
            "that baseline (paired bootstrap, p-value of the difference), and the last counts "
            "the sentences where the served suggestion scores higher, the same or lower than "
            "the best match's target (sentence chrF).",
            "",
            _table(
                [
                    "similarity",
                    "sentences",
                    *[SYSTEM_LABELS[k] for k in keys],
                    "served - baseline (p)",
                    "vs best match: wins / ties / losses",
                ],
                [
                    [
                        f"{row['low']:.1f}-{row['high']:.1f}",
                        row["sentences"],
                        *["-" if row["bleu"][k] is None else row["bleu"][k] for k in keys],
                        _against(row),
                        _duel(row.get("versus_best_match")),
                    ]
                    for row in deciles
                ],
            ),
            "",
        ]

    counts = results["count_gamma"]
    gammas = counts["gammas"]
    out += [
        "## Table 7: correctly translated n-grams by how often they occur in the TM",
        "",
        "Count_gamma = number of distinct n-grams (n = 1..4, 13a tokens) per test sentence that "
        "are in both the output and the reference and occur in exactly gamma TM target sentences, "
        "summed over the test set.",
        "",
    ]
    rows = [[SYSTEM_LABELS[key], *counts[key]] for key in ("unguided", "guided")]
    rows.append(
        [
            "Ratio (guided/unguided)",
            *[
                (f"{g / u:.2f}" if u else "n/a")
                for u, g in zip(counts["unguided"], counts["guided"], strict=True)
            ],
        ]
    )
    out += [_table(["gamma", *[str(g) for g in gammas]], rows), ""]

    timing = results["timing"]
    out += [
        "## Table 8: time per sentence (ms)",
        "",
        f"Machine: {sig['machine']['cpu']}, {sig['machine']['usable_cpus']} usable CPUs, "
        f"device `{results['options']['device']}`, {_threads(results['options'])}. "
        f"Per-sentence means over batches of {results['options']['batch_size']}.",
        "",
    ]
    header = ["stage", *timing["engines"].keys()]
    stages = [
        ("native CTranslate2 beam search (unguided)", "base_decoding"),
        ("search engine retrieval", "retrieval"),
        ("translation piece collection", "pieces"),
        ("guided decoding", "guided_decoding"),
        ("sentences timed", "sentences"),
    ]
    rows = []
    for label, key in stages:
        row: list[Any] = [label]
        for engine in timing["engines"].values():
            value = engine.get(key)
            row.append(value if key == "sentences" else _ms(value))
        rows.append(row)
    out += [_table(header, rows), ""]

    sweep = results.get("m_sweep")
    if sweep:
        out += ["## Figures 4-6: retrieval size M", ""]
        out += [
            _table(
                ["M", "retrieval (ms)", "pieces (ms)", "guided decoding (ms)", "BLEU", "chrF"],
                [
                    [
                        row["m"],
                        _ms(row["retrieval"]),
                        _ms(row["pieces"]),
                        _ms(row["guided_decoding"]),
                        row["bleu"],
                        row["chrf"],
                    ]
                    for row in sweep
                ],
            ),
            "",
        ]
        for key, caption in (
            ("fig4_pieces_time", "Figure 4"),
            ("fig5_decoding_time", "Figure 5"),
            ("fig6_bleu", "Figure 6"),
        ):
            if key in figures:
                out += [f"![{caption}]({figures[key]})", ""]

    out += [
        "## Reproducibility signature",
        "",
        "Word alignment is sampled: eflomal seeds itself from /dev/urandom and has no seed "
        "option, so a TM aligned afresh (`--tm` given as a TSV) yields slightly different pieces "
        "from run to run, and the guided scores move with them by tenths of a point (the "
        "unguided and best-match scores do not). To compare systems on the same alignments, "
        "give `--db`: the TM is then imported and aligned into that store once and reused.",
        "",
        "```json",
        json.dumps(sig, indent=2, sort_keys=True),
        "```",
        "",
    ]
    return "\n".join(out)


def write_report(results: dict[str, Any], output_dir: Path, plots: bool = True) -> dict[str, Path]:
    """Write results.json, the figures and README.md into output_dir; returns the paths written."""
    output_dir.mkdir(parents=True, exist_ok=True)
    figures = write_plots(results, output_dir) if plots else {}
    results = {**results, "figures": figures}
    json_path = output_dir / RESULTS_JSON
    json_path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path = output_dir / REPORT_MD
    md_path.write_text(render_markdown(results, figures), encoding="utf-8")
    return {
        "json": json_path,
        "markdown": md_path,
        **{key: output_dir / name for key, name in figures.items()},
    }


def _threads(options: dict[str, Any]) -> str:
    """How many compute threads the engines had (reports written before the option: unknown)."""
    threads = options.get("threads")
    if threads is None:
        return "engine threads not recorded"
    if threads == 0:
        return "engine threads: the libraries' defaults"
    return f"{threads} engine thread{'s' if threads != 1 else ''} (CTranslate2 and PyTorch alike)"


def _against(row: dict[str, Any]) -> str:
    """The served suggestion against its decile's baseline: '+1.23 (p 0.04)' (reports written
    before deciles had p-values: '-')."""
    if row.get("p_value") is None:
        return "-"
    bleu = row["bleu"]
    difference = bleu["served"] - bleu[row["against"]]
    baseline = "best match" if row["against"] == "best_match" else "unguided"
    return f"{difference:+.2f} vs {baseline} (p {row['p_value']:.3f})"


def _duel(counts: dict[str, int] | None) -> str:
    """'166 / 61 / 41' (reports written before these were counted: '-')."""
    if not counts:
        return "-"
    return f"{counts['wins']} / {counts['ties']} / {counts['losses']}"


def _reward_rule(results: dict[str, Any]) -> str:
    """The reward rule as the results name it (reports written before they did: from options)."""
    if "reward_rule" in results:
        return str(results["reward_rule"])
    from tm_guide.decoding.guidance import RULE_SETTINGS, Guidance

    options = results["options"]
    return Guidance.resolve(None, **{name: options.get(name) for name in RULE_SETTINGS}).describe()
