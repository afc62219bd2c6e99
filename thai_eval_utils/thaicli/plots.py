"""ThaiCLI figures (Kim et al., arXiv 2410.04795, section 4): judge score distribution, per-theme means,
and the judge-free log-likelihood win rates. Each returns the Figure; save it with ``plots.save_figure``.
Thai theme names are not used as labels (the data's themes are English), so no Thai font is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # matplotlib and seaborn are imported when a figure is drawn
    import matplotlib.pyplot as plt

FORMAT_ORDER = ["factoid", "instruction"]


def score_distribution(items: pd.DataFrame, title: str = "") -> plt.Figure:
    """Left: the share of judge scores 0-10 per format (0 = fallback after the last judge call);
    right: mean score per theme and format with standard-error bars. Unjudged items are left out (and counted).

    Args:
        items: ``judge_answers(...).items`` (columns format, theme, score, status).
        title: figure title (e.g. the evaluated model and the judge).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    judged = items[items["status"] != "unjudged"].copy()
    judged["score"] = judged["score"].astype(float)
    hue_order = [f for f in FORMAT_ORDER if f in set(judged["format"])]
    fig, (ax_hist, ax_theme) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.2, 1]})
    if judged.empty:
        for ax in (ax_hist, ax_theme):
            ax.text(0.5, 0.5, "no judged items", ha="center", va="center", transform=ax.transAxes)
    else:
        sns.histplot(
            data=judged,
            x="score",
            hue="format",
            hue_order=hue_order,
            discrete=True,
            stat="percent",
            common_norm=False,
            multiple="dodge",
            binrange=(0, 10),
            shrink=0.8,
            ax=ax_hist,
        )
        sns.barplot(
            data=judged, x="score", y="theme", hue="format", hue_order=hue_order, errorbar="se", ax=ax_theme, orient="h"
        )
        sns.move_legend(ax_hist, "upper left")
        sns.move_legend(ax_theme, "upper left", bbox_to_anchor=(1.01, 1.0))
    n_unjudged = int((items["status"] == "unjudged").sum())
    n_zero = int((judged["status"] == "fallback_zero").sum())
    ax_hist.set(
        xlabel="judge score (0 = no parsable judgement in the allowed calls)",
        ylabel="% of the format's items",
        xticks=range(11),
        xlim=(-0.6, 10.6),
        title=f"score distribution (n={len(judged)}, {n_zero} zero fallbacks, {n_unjudged} unjudged)",
    )
    ax_theme.set(xlabel="mean judge score ± s.e.", ylabel="", xlim=(0, 10), title="per theme")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def judge_free_rates(prefs: pd.DataFrame, title: str = "") -> plt.Figure:
    """Share of items where the chosen answer is more likely than the rejected one, per theme and format,
    raw and per-character (``thaicli.loglikelihood_preferences`` output); 0.5 marks chance."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = prefs.melt(
        id_vars=["format", "theme"], value_vars=["win_raw", "win_norm"], var_name="comparison", value_name="chosen wins"
    )
    long["comparison"] = long["comparison"].map({"win_raw": "summed log-likelihood", "win_norm": "per character"})
    long["group"] = long["format"] + " / " + long["comparison"]
    hue_order = [f"{f} / {c}" for f in FORMAT_ORDER for c in ("summed log-likelihood", "per character")]
    hue_order = [h for h in hue_order if h in set(long["group"])]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    sns.barplot(
        data=long, x="chosen wins", y="theme", hue="group", hue_order=hue_order, errorbar="se", orient="h", ax=ax
    )
    ax.axvline(0.5, color="0.4", linestyle="--", linewidth=1)
    ax.set(
        xlim=(0, 1),
        xlabel="share of items where chosen beats rejected (± s.e.)",
        ylabel="",
        title=title or "judge-free ThaiCLI: log-likelihood of chosen vs rejected",
    )
    ax.legend(title="", fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
