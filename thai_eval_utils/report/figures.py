"""The figures as inline SVG for the report: each suite's own (``Suite.figures``: e.g. task scores,
judge-score distributions, ΔDiff) and the two-model forest plot (``plots.compare``), labelled with model names
(never paths). Text is drawn as paths, so no font is needed when the file is opened elsewhere."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # the report is written without a display
import matplotlib.pyplot as plt

from thai_eval_utils.compare.items import Headline
from thai_eval_utils.compare.runs import Comparison
from thai_eval_utils.core import registry
from thai_eval_utils.plots import compare as compare_plots
from thai_eval_utils.report.runs import ReportRuns


def svg(fig: plt.Figure) -> str:
    """The figure as an ``<svg>`` element (text as paths), and the figure closed."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def forest_figure(cmp: Comparison) -> plt.Figure:
    """Paired differences of two models with their intervals (``plots.compare.forest_plot``)."""
    return compare_plots.forest_plot(cmp, title=f"{cmp.label_a} minus {cmp.label_b} (paired, Holm-adjusted)")


def suite_figures(runs: ReportRuns, heads: dict[str, list[Headline]]) -> list[tuple[str, plt.Figure | None]]:
    """(caption, figure or None) of every registered suite, in registry order."""
    by_model = {model: dict(sel.runs) for model, sel in runs.selections.items()}
    out: list[tuple[str, plt.Figure | None]] = []
    for suite in registry.suites().values():
        mine = {model: [h for h in hs if h.family == suite.name] for model, hs in heads.items()}
        out += suite.figures(by_model, mine)
    return out


def report_figures(runs: ReportRuns, heads: dict[str, list[Headline]], cmp: Comparison | None) -> list[tuple[str, str]]:
    """(caption, inline SVG) of every figure the runs allow."""
    figs = suite_figures(runs, heads)
    if cmp is not None and cmp.rows:
        figs.append((f"{cmp.label_a} vs {cmp.label_b}: paired differences", forest_figure(cmp)))
    return [(caption, svg(f)) for caption, f in figs if f is not None]
