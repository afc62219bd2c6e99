"""Figures of this toolkit's own dialect runs and annotations (arXiv 2504.05898 Tables 1-3, appendix B):
ΔDiff heatmap, preference stacked bars, Generation/Fluency bars, judge-vs-human scatter.

Each function takes the table that :mod:`thai_eval_utils.dialect.metrics` or :mod:`thai_eval_utils.dialect.human_eval`
returns and gives back the matplotlib Figure (save it with :func:`thai_eval_utils.plots.save_figure`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from thai_eval_utils.dialect.human_eval import PREFERENCE_CHOICES
from thai_eval_utils.dialect.metrics import DIALECT_NAMES, TABLE1_TASKS

if TYPE_CHECKING:  # matplotlib and seaborn are imported when a figure is drawn
    import matplotlib.pyplot as plt

#: Short labels of the Table 1 task families and their headline metric.
TASK_LABELS = {
    "qa": "QA\n(ROUGE-L)",
    "summarization": "summ.\n(ROUGE-L)",
    "translation_en_to_dialect": "EN→dialect\n(BLEU)",
    "translation_dialect_to_en": "dialect→EN\n(BLEU)",
}
#: Legend labels of the preference options.
CHOICE_LABELS = {"A": "A better", "B": "B better", "Both": "both good", "None": "both poor"}


def _name(dialect: str) -> str:
    return DIALECT_NAMES.get(dialect, dialect)


def delta_heatmap(deltas: pd.DataFrame) -> plt.Figure:
    """ΔDiff (Central minus dialect, > 0 = worse in the dialect) per model x task, one panel per dialect.

    Args:
        deltas: :func:`thai_eval_utils.dialect.metrics.delta_diff` output; only each task's headline metric is drawn.
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    primary = deltas[[TABLE1_TASKS.get(t, ("", ""))[0] == m for t, m in zip(deltas["task"], deltas["metric"])]]
    dialects = list(primary["dialect"].drop_duplicates())
    cols = [t for t in TASK_LABELS if t in set(primary["task"])]
    limit = float(np.nanmax(np.abs(primary["delta"].to_numpy(float)))) if len(primary) else 1.0
    n_panels, n_models = max(len(dialects), 1), max(primary["model"].nunique(), 1)
    fig, axes = plt.subplots(1, n_panels, figsize=(3.6 * n_panels + 1, 0.5 * n_models + 2.2), squeeze=False)
    style = {"annot": True, "fmt": ".2f", "cmap": "RdBu_r", "center": 0, "annot_kws": {"fontsize": 8}}
    for i, (ax, dialect) in enumerate(zip(axes[0], dialects)):
        sub = primary[primary["dialect"] == dialect]
        grid = sub.pivot_table(index="model", columns="task", values="delta", aggfunc="first")
        grid = grid.reindex(columns=cols).rename(columns=TASK_LABELS)
        sns.heatmap(grid, vmin=-limit or -1, vmax=limit or 1, ax=ax, cbar=i == len(dialects) - 1, **style)
        ax.set(title=_name(dialect), xlabel="", ylabel="" if i else "model")
        ax.tick_params(axis="x", labelsize=7)
        if i:
            ax.set_yticklabels([])
    fig.suptitle("ΔDiff = Central minus dialect (> 0: worse in the dialect)", fontsize=10)
    fig.tight_layout()
    return fig


def preference_bars(table: pd.DataFrame) -> plt.Figure:
    """Stacked bars of the annotator-averaged preference counts per dialect, one panel per model pair.

    Args:
        table: :func:`thai_eval_utils.dialect.human_eval.preference_table` output (without ``by_task``).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    pairs = list(table[["model_a", "model_b"]].drop_duplicates().itertuples(index=False, name=None))
    fig, axes = plt.subplots(1, len(pairs), figsize=(3.8 * len(pairs) + 1.2, 3.8), sharey=True, squeeze=False)
    colors = sns.color_palette("colorblind", len(PREFERENCE_CHOICES))
    for ax, (a, b) in zip(axes[0], pairs):
        sub = table[(table["model_a"] == a) & (table["model_b"] == b)].set_index("dialect")
        sub.index = [_name(d) for d in sub.index]
        bars = sub[list(PREFERENCE_CHOICES)].rename(columns=CHOICE_LABELS)
        bars.plot.bar(stacked=True, ax=ax, color=colors, legend=False, rot=0)
        ax.set(title=f"A = {a}\nB = {b}", xlabel="", ylabel="items (mean over annotators)")
        ax.title.set_fontsize(8)
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.suptitle("Pairwise human preference", fontsize=10)
    fig.tight_layout()
    return fig


def generation_fluency_bars(table: pd.DataFrame) -> plt.Figure:
    """Generation and Fluency (0-100) per dialect, one panel per model.

    Args:
        table: :func:`thai_eval_utils.dialect.human_eval.generation_fluency` output (without ``by_task``).
    """
    import seaborn as sns

    long = table.melt(
        id_vars=["dialect", "model"], value_vars=["generation", "fluency"], var_name="measure", value_name="score"
    )
    long["dialect"] = long["dialect"].map(_name)
    grid = sns.catplot(
        data=long, x="dialect", y="score", hue="measure", col="model", kind="bar", height=3.4, aspect=1.1
    )
    grid.set_titles("{col_name}")
    grid.set(ylim=(0, 100), xlabel="", ylabel="score (0-100)")
    grid.figure.suptitle("Generation and Fluency in the dialect (human annotation)", fontsize=10, y=1.04)
    return grid.figure


def judge_human_scatter(merged: pd.DataFrame, correlations: pd.DataFrame | None = None) -> plt.Figure:
    """Judge score against human score per item, one panel per dialect, Spearman's rho in each title.

    Args:
        merged: :func:`thai_eval_utils.dialect.human_eval.merge_judge_human` output (``judge_score``, ``human_score``).
        correlations: :func:`thai_eval_utils.dialect.human_eval.judge_human_spearman` output (optional).
    """
    import matplotlib.pyplot as plt

    dialects = list(merged["dialect"].drop_duplicates())
    n = len(dialects)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 3.4), sharex=True, sharey=True, squeeze=False)
    rng = np.random.default_rng(0)  # horizontal jitter only, so tied human scores stay visible
    for ax, dialect in zip(axes[0], dialects):
        sub = merged[merged["dialect"] == dialect]
        x = sub["human_score"].to_numpy(float) + rng.uniform(-0.02, 0.02, len(sub))
        ax.scatter(x, sub["judge_score"], s=18, alpha=0.7)
        title = _name(dialect)
        if correlations is not None:
            row = correlations[correlations["dialect"] == dialect]
            if len(row) and not np.isnan(row["rho"].iloc[0]):
                r = row.iloc[0]
                title += f"\nρ = {r['rho']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}], n = {int(r['n'])}"
            else:
                title += "\nρ undefined"
        ax.set_title(title, fontsize=8)
        ax.set(xlabel="human score (0-1)")
    axes[0][0].set_ylabel("judge score")
    fig.suptitle("LLM judge vs human annotation (Spearman)", fontsize=10)
    fig.tight_layout()
    return fig
