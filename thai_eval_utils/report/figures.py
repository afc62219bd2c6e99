"""The notebooks' figures as inline SVG for the report (issue 22): Thai-H6 task scores (``plots.h6``), ThaiCLI
score distributions (``plots.thaicli``), dialect ΔDiff (``plots.dialect``) and the two-model forest plot
(``plots.compare``), labelled with model names (never paths). Text is drawn as paths, so no font is needed
when the file is opened elsewhere."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # the report is written without a display
import matplotlib.pyplot as plt
import pandas as pd

from thai_eval_utils.compare.items import Headline
from thai_eval_utils.compare.runs import Comparison
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.dialect.metrics import delta_diff
from thai_eval_utils.h6.average import thai_h6_score
from thai_eval_utils.plots import compare as compare_plots
from thai_eval_utils.plots import dialect as dialect_plots
from thai_eval_utils.plots import h6 as h6_plots
from thai_eval_utils.plots import thaicli as thaicli_plots
from thai_eval_utils.report.runs import ReportRuns


def svg(fig: plt.Figure) -> str:
    """The figure as an ``<svg>`` element (text as paths), and the figure closed."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def h6_figure(runs: ReportRuns) -> plt.Figure | None:
    """Each model's Thai-H6 task headline scores (x 100, ± 1 s.e.) and average, grouped by model."""
    per_model = {}
    for model, sel in runs.selections.items():
        tasks = {}
        for bench, run in sel.runs.items():
            scores = (run.summary or {}).get("scores") or {}
            if bench.startswith("thai_h6/") and scores:
                first = next(iter(scores.values()))  # the headline metric comes first (h6.evaluate)
                tasks[bench.split("/")[-1]] = Score(first["name"], first["value"], first["n"], first.get("stderr"))
        if tasks:
            per_model[model] = thai_h6_score(tasks)
    if not per_model:
        return None
    return h6_plots.task_scores_figure(per_model, title="Thai-H6 headline scores (0-100, ± 1 s.e.)")


def thaicli_figures(heads: dict[str, list[Headline]]) -> dict[str, plt.Figure]:
    """model -> its ThaiCLI judge-score distribution (per format and theme)."""
    out = {}
    for model, hs in heads.items():
        parts = [h for h in hs if h.family == "thaicli"]
        if parts:
            items = pd.concat([h.items.assign(format=h.stratum, score=h.items["value"]) for h in parts], ignore_index=True)
            items["status"] = items["status"].fillna("scored")
            items["theme"] = items["theme"].fillna("")
            out[model] = thaicli_plots.score_distribution(items, title=f"ThaiCLI judge scores: {model}")
    return out


def dialect_figure(runs: ReportRuns) -> plt.Figure | None:
    """ΔDiff (Central minus dialect) per model and task, from the runs' summary scores; None without a dialect
    beside Central."""
    rows = []
    for model, sel in runs.selections.items():
        run = sel.runs.get("dialect/generation")
        for key, entry in (((run.summary or {}).get("scores") or {}) if run else {}).items():
            parts = key.split("/")
            if len(parts) == 3 and entry.get("value") is not None:
                rows.append({"model": model, "dialect": parts[0], "task": parts[1], "metric": parts[2], "value": float(entry["value"])})
    scores = pd.DataFrame(rows, columns=["model", "dialect", "task", "metric", "value"])
    if scores.empty or set(scores["dialect"]) <= {"center"}:
        return None
    deltas = delta_diff(scores)
    return dialect_plots.delta_heatmap(deltas) if len(deltas) else None


def forest_figure(cmp: Comparison) -> plt.Figure:
    """Paired differences of two models with their intervals (``plots.compare.forest_plot``)."""
    return compare_plots.forest_plot(cmp, title=f"{cmp.label_a} minus {cmp.label_b} (paired, Holm-adjusted)")


def report_figures(runs: ReportRuns, heads: dict[str, list[Headline]], cmp: Comparison | None) -> list[tuple[str, str]]:
    """(caption, inline SVG) of every figure the runs allow."""
    figs: list[tuple[str, plt.Figure | None]] = [("Thai-H6: headline score per task and the average", h6_figure(runs))]
    figs += [(f"ThaiCLI: {m}", f) for m, f in thaicli_figures(heads).items()]
    figs.append(("Thai dialects: ΔDiff (Central minus dialect; > 0 = worse in the dialect)", dialect_figure(runs)))
    if cmp is not None and cmp.rows:
        figs.append((f"{cmp.label_a} vs {cmp.label_b}: paired differences", forest_figure(cmp)))
    return [(caption, svg(f)) for caption, f in figs if f is not None]
