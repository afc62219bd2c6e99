"""Thai-H6 figures (Kim et al., arXiv 2410.04795, Table 4): per-task scores with standard-error bars."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from thai_eval_utils.h6.average import AVERAGE_COLUMN, TASKS, H6Score, thai_h6_score

if TYPE_CHECKING:  # matplotlib and seaborn are imported when a figure is drawn
    import matplotlib.pyplot as plt


def _scores_frame(scores: H6Score | Mapping[str, H6Score], average: bool) -> pd.DataFrame:
    """Long table (model, task, score, stderr) on the 0-100 scale."""
    per_model = scores if isinstance(scores, Mapping) else {"": scores}
    rows: list[tuple[str, str, float, float]] = []
    for model, s in per_model.items():
        parts = [(t, s.tasks[t]) for t in TASKS if t in s.tasks]
        rows += [(model, t, 100 * sc.value, math.nan if sc.stderr is None else 100 * sc.stderr) for t, sc in parts]
        if average:
            rows.append((model, AVERAGE_COLUMN, s.value, math.nan if s.stderr is None else s.stderr))
    return pd.DataFrame(rows, columns=["model", "task", "score", "stderr"])


def task_scores_figure(
    scores: H6Score | Mapping[str, H6Score] | Mapping[str, object],
    *,
    title: str | None = None,
    average: bool = True,
) -> plt.Figure:
    """Bars of each task's headline score (x 100) with ± 1 standard error, and the H6 average.

    Args:
        scores: an :class:`H6Score`, task -> H6Result / Score (passed to ``thai_h6_score``), or
            model name -> H6Score for grouped bars.
        title: figure title (default: "Thai-H6", marked partial when tasks are missing).
        average: add a bar for the Thai-H6 average.

    Returns:
        The matplotlib Figure (save it with ``plots.save_figure``).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.container import BarContainer

    if isinstance(scores, Mapping) and scores and not all(isinstance(v, H6Score) for v in scores.values()):
        scores = thai_h6_score(scores)
    df = _scores_frame(scores, average)
    many = isinstance(scores, Mapping)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    order = [t for t in (*TASKS, AVERAGE_COLUMN) if t in set(df["task"])]
    sns.barplot(data=df, x="task", y="score", hue="model" if many else None, order=order, errorbar=None, ax=ax)
    # one BarContainer per model (hue level); a bar's task is the category under its centre
    hues = list(dict.fromkeys(df["model"])) if many else [""]
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    for model, container in zip(hues, containers):
        for bar in container:
            x = bar.get_x() + bar.get_width() / 2
            task = order[int(round(x))]
            hit = df[(df["model"] == model) & (df["task"] == task)]
            if hit.empty or math.isnan(hit["stderr"].iloc[0]):
                continue
            ax.errorbar(x, bar.get_height(), yerr=hit["stderr"].iloc[0], color="black", capsize=3, linewidth=1)
    ax.set_xlabel("")
    ax.set_ylabel("score (x 100)")
    ax.set_ylim(0, 100)
    partial = any(s.partial for s in (scores.values() if many else [scores]))
    ax.set_title(title or ("Thai-H6 (partial)" if partial else "Thai-H6"))
    ax.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    return fig
