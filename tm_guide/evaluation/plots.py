"""PNG figures of a report (paper Figures 4-6, the Table 5 histogram, the dev lambda curve).

Uses matplotlib's object API with the Agg canvas, so nothing touches global pyplot state or needs a
display. matplotlib is the optional [plot] extra; without it the report is written without figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tm_guide.errors import InvalidInput


def _figure() -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as exc:
        raise InvalidInput(
            "plots need matplotlib: pip install 'tm-guide[plot]' (or pass --no-plots)"
        ) from exc
    figure = Figure(figsize=(5.0, 3.4), dpi=110)
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, format="png")
    return path


def _line(
    path: Path,
    xs: list[float],
    series: dict[str, list[float]],
    xlabel: str,
    ylabel: str,
    title: str,
    log_x: bool = False,
) -> Path:
    figure = _figure()
    axes = figure.add_subplot(1, 1, 1)
    for label, ys in series.items():
        axes.plot(xs, ys, marker="o", label=label)
    if log_x:
        axes.set_xscale("log")
        axes.set_xticks(xs)
        axes.set_xticklabels([str(int(x)) for x in xs])
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    if len(series) > 1:
        axes.legend(fontsize=8)
    return _save(figure, path)


def write_plots(results: dict[str, Any], output_dir: Path) -> dict[str, str]:
    """Write every figure the results support; returns {figure key: file name}."""
    written: dict[str, str] = {}
    sweep = results.get("m_sweep") or []
    if sweep:
        ms = [float(row["m"]) for row in sweep]
        written["fig4_pieces_time"] = _line(
            output_dir / "fig4_pieces_time_vs_m.png",
            ms,
            {
                "retrieval + pieces": [1000 * (row["retrieval"] + row["pieces"]) for row in sweep],
                "pieces only": [1000 * row["pieces"] for row in sweep],
            },
            "retrieval size M",
            "ms per sentence",
            "Figure 4: translation piece collection time",
            log_x=True,
        ).name
        written["fig5_decoding_time"] = _line(
            output_dir / "fig5_decoding_time_vs_m.png",
            ms,
            {
                "guided decoding": [1000 * row["guided_decoding"] for row in sweep],
                "unguided decoding": [1000 * results["timing"]["base_decoding"]] * len(sweep),
            },
            "retrieval size M",
            "ms per sentence",
            "Figure 5: decoding time",
            log_x=True,
        ).name
        written["fig6_bleu"] = _line(
            output_dir / "fig6_bleu_vs_m.png",
            ms,
            {
                "guided": [row["bleu"] for row in sweep],
                "unguided": [results["test"]["unguided"]["bleu"]] * len(sweep),
            },
            "retrieval size M",
            "BLEU",
            "Figure 6: BLEU by retrieval size",
            log_x=True,
        ).name
    histogram = results.get("similarity", {}).get("histogram") or []
    if histogram:
        figure = _figure()
        axes = figure.add_subplot(1, 1, 1)
        axes.bar(range(len(histogram)), [row["sentences"] for row in histogram], color="#4477aa")
        axes.set_xticks(range(len(histogram)))
        axes.set_xticklabels([row["label"] for row in histogram], rotation=60, fontsize=7)
        axes.set_xlabel("best-match similarity (eq. 11)")
        axes.set_ylabel("test sentences")
        axes.set_title("Table 5: similarity of test sentences to the TM", fontsize=10)
        written["similarity_histogram"] = _save(
            figure, output_dir / "similarity_histogram.png"
        ).name
    dev = results.get("dev")
    if dev and dev.get("guided"):
        lambdas = sorted(dev["guided"], key=float)
        written["dev_lambda"] = _line(
            output_dir / "dev_lambda.png",
            [float(lam) for lam in lambdas],
            {
                "guided": [dev["guided"][lam]["bleu"] for lam in lambdas],
                "unguided": [dev["unguided"]["bleu"]] * len(lambdas),
            },
            "lambda",
            "BLEU (dev)",
            "Tuning lambda on the dev set",
        ).name
    return written
