"""Forest plot of a model comparison: each headline score's difference A - B with its paired
bootstrap interval, one panel per benchmark (their scales differ: Thai-H6 0-100, ThaiCLI 0-10, ROUGE-L/BLEU)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from thai_eval_utils.compare.runs import Comparison

_PANELS = {
    "thai_h6": "Thai-H6 (points, 0-100)",
    "thaicli": "ThaiCLI (judge score, 0-10)",
    "dialect": "Dialects (ROUGE-L / BLEU, 0-100)",
}


def forest_plot(cmp: Comparison | pd.DataFrame, *, title: str | None = None, alpha: float = 0.05) -> plt.Figure:
    """Differences (dots) with their intervals (lines) against a zero line; rows whose Holm-adjusted p is
    below ``alpha`` are drawn filled, the others hollow.

    Args:
        cmp: a :class:`~thai_eval_utils.compare.runs.Comparison` or its ``table()``.
    """
    table = cmp.table() if isinstance(cmp, Comparison) else cmp
    present = list(dict.fromkeys(table["score"].str.split("/").str[0]))
    fams = [f for f in _PANELS if f in present] + [f for f in present if f not in _PANELS]  # other suites: own panel
    heights = [max(1, int((table["score"].str.split("/").str[0] == f).sum())) for f in fams]
    fig, axes = plt.subplots(
        len(fams),
        1,
        figsize=(7.5, 0.9 + 0.38 * sum(heights) + 0.5 * len(fams)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, fam in zip(axes[:, 0], fams):
        part = table[table["score"].str.split("/").str[0] == fam].iloc[::-1]
        y = range(len(part))
        sig = (part["p_holm"] < alpha).to_numpy()
        ax.hlines(list(y), part["ci_low"], part["ci_high"], color="tab:blue", lw=2)
        ax.scatter(
            part["diff"],
            list(y),
            s=36,
            zorder=3,
            edgecolors="tab:blue",
            facecolors=["tab:blue" if s else "white" for s in sig],
        )
        ax.axvline(0, color="0.3", lw=1, ls="--")
        ax.set_yticks(list(y), [s.split("/", 1)[1] for s in part["score"]])
        ax.set_title(_PANELS.get(fam, fam), fontsize=9, loc="left")
    label = f"difference A - B ({cmp.label_a} - {cmp.label_b})" if isinstance(cmp, Comparison) else "difference A - B"
    axes[-1, 0].set_xlabel(label + f"; filled: Holm p < {alpha:g}")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
