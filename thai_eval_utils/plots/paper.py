"""Figures of the two papers' published tables (Kim et al. Tables 4-5; Limkonchotiwat et al. Tables 1-3), own runs beside them.

Each function takes a table as :mod:`thai_eval_utils.paper.published` returns it (printed strings or numbers;
an optional ``source`` column marks this toolkit's runs, labelled ``<model> (thai-eval)`` or
``<model> (thai-eval, partial)``)
and returns the matplotlib Figure; save it with :func:`thai_eval_utils.plots.save_figure`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from thai_eval_utils.dialect import plots as dialect_plots
from thai_eval_utils.dialect.metrics import TABLE1_TASKS
from thai_eval_utils.paper.published import (
    CENTRAL,
    H6_TASKS,
    PAPER_SOURCE,
    numeric,
    rank_agreement,
)

#: Preference columns of Limkonchotiwat et al. Table 2 -> the annotation labels of :mod:`thai_eval_utils.dialect.human_eval`.
PREFERENCE_COLUMNS = {"prefer_a": "A", "prefer_b": "B", "both": "Both", "none": "None"}


def _labelled(df: pd.DataFrame) -> pd.DataFrame:
    """Numeric copy with a ``label`` column: the model, marked when the row is one of this toolkit's runs."""
    out = numeric(df)
    is_run = out["source"].ne(PAPER_SOURCE) if "source" in out else pd.Series(False, index=out.index)
    partial = out["partial"].astype(bool) if "partial" in out else pd.Series(False, index=out.index)
    mark = np.where(partial, " (thai-eval, partial)", " (thai-eval)")
    out["label"] = np.where(is_run, out["model"].astype(str) + mark, out["model"].astype(str))
    return out


def h6_task_scores(h6: pd.DataFrame) -> plt.Figure:
    """Thai-H6 score of each task per model (grouped bars), the H6 average as the last group."""
    df = _labelled(h6)
    cols = [c for c in (*H6_TASKS, "thai_h6_avg") if c in df]
    long = df.melt(id_vars="label", value_vars=cols, var_name="task", value_name="score").dropna(subset=["score"])
    fig, ax = plt.subplots(figsize=(11, 4.5))
    sns.barplot(data=long, x="task", y="score", hue="label", ax=ax)
    ax.set(xlabel="", ylabel="score (x100)", title="Thai-H6 per task (Kim et al. Table 4)", ylim=(0, 100))
    ax.legend(title="", fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def h6_vs_thaicli(h6: pd.DataFrame, thaicli: pd.DataFrame) -> plt.Figure:
    """Thai-H6 average against ThaiCLI average per model, and the two rankings side by side, with rank correlations."""
    a = _labelled(h6).set_index("label")["thai_h6_avg"]
    b = _labelled(thaicli).set_index("label")["thaicli_avg"]
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    agreement = rank_agreement(both["thai_h6_avg"], both["thaicli_avg"])
    fig, (ax, ax_rank) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.3, 1]})
    sns.scatterplot(data=both, x="thai_h6_avg", y="thaicli_avg", ax=ax, s=60)
    for label, row in both.iterrows():
        ax.annotate(label, (row["thai_h6_avg"], row["thaicli_avg"]), fontsize=7, xytext=(4, 3), textcoords="offset points")
    ax.set(xlabel="Thai-H6 average", ylabel="ThaiCLI average (judge score 1-10)", title="Core capability vs cultural alignment")
    ranks = both.rank(ascending=False, method="min")
    for label, row in ranks.iterrows():
        ax_rank.plot([0, 1], [row["thai_h6_avg"], row["thaicli_avg"]], marker="o")
        ax_rank.annotate(f"({row['thaicli_avg']:.0f}) {label}", (1, row["thaicli_avg"]), fontsize=7, xytext=(6, -2),
                         textcoords="offset points")
        ax_rank.annotate(f"{label} ({row['thai_h6_avg']:.0f})", (0, row["thai_h6_avg"]), fontsize=7, xytext=(-6, -2),
                         textcoords="offset points", ha="right")
    ax_rank.set(xticks=[0, 1], xticklabels=["Thai-H6 rank", "ThaiCLI rank"], xlim=(-1.1, 2.1), yticks=[], title="Ranks (1 = best)")
    ax_rank.invert_yaxis()
    ax_rank.grid(False)
    fig.suptitle(f"Thai-H6 vs ThaiCLI ranking of the same models: {agreement}", fontsize=9)
    fig.tight_layout()
    return fig


def thaicli_factoid_vs_instruction(thaicli: pd.DataFrame) -> plt.Figure:
    """ThaiCLI factoid against instruction score per model (Kim et al. Table 5), the diagonal for reference."""
    df = _labelled(thaicli).dropna(subset=["factoid", "instruction"])
    if "group" in df and "source" in df:  # runs have no closed/open group: show their source instead
        df["group"] = df["group"].where(df["group"].astype(str).str.strip() != "", df["source"])
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    sns.scatterplot(data=df, x="factoid", y="instruction", hue="group" if "group" in df else None, s=60, ax=ax)
    for _, row in df.iterrows():
        ax.annotate(row["label"], (row["factoid"], row["instruction"]), fontsize=7, xytext=(4, 3), textcoords="offset points")
    low = np.nanmin(df[["factoid", "instruction"]].to_numpy()) - 0.5
    high = np.nanmax(df[["factoid", "instruction"]].to_numpy()) + 0.5
    ax.plot([low, high], [low, high], color="grey", lw=0.8, ls="--")
    ax.set(xlim=(low, high), ylim=(low, high), xlabel="factoid (1-10)", ylabel="instruction (1-10)",
           title="ThaiCLI: factoid vs instruction (Kim et al. Table 5)")
    return fig


def dialect_delta_heatmap(auto: pd.DataFrame) -> plt.Figure:
    """ΔDiff per model and task, one panel per dialect (Limkonchotiwat et al. Table 1 layout, runs marked).

    The wide published layout is turned into :func:`thai_eval_utils.dialect.metrics.delta_diff`'s tidy form and drawn
    by :func:`thai_eval_utils.dialect.plots.delta_heatmap`, the same figure the dialect notebook draws.
    """
    df = _labelled(auto)
    rows = [
        {"model": label, "dialect": dialect, "task": task, "metric": metric, "delta": float(delta)}
        for task, (metric, _) in TABLE1_TASKS.items() if f"{task}_delta" in df
        for label, dialect, delta in zip(df["label"], df["dialect"], df[f"{task}_delta"])
        if dialect != CENTRAL and pd.notna(delta)
    ]
    return dialect_plots.delta_heatmap(pd.DataFrame(rows, columns=["model", "dialect", "task", "metric", "delta"]))


def preference_bars(pref: pd.DataFrame) -> plt.Figure:
    """Human preference counts per dialect as stacked bars, one panel per model pair (Limkonchotiwat et al. Table 2)."""
    df = numeric(pref).rename(columns=PREFERENCE_COLUMNS)
    return dialect_plots.preference_bars(df)


def generation_fluency_bars(gf: pd.DataFrame) -> plt.Figure:
    """Generation and Fluency scores (0-100) per dialect and model (Limkonchotiwat et al. Table 3, runs marked)."""
    df = _labelled(gf)
    return dialect_plots.generation_fluency_bars(df.assign(model=df["label"])[["dialect", "model", "generation", "fluency"]])


#: Figure name -> (function, the table keys it takes), for drawing and saving all of them at once
#: (the notebook saves them as ``figures/paper_<name>``, apart from the benchmark notebooks' figures).
PAPER_FIGURES = {
    "thai_h6_task_scores": (h6_task_scores, ("h6",)),
    "thai_h6_vs_thaicli": (h6_vs_thaicli, ("h6", "thaicli")),
    "thaicli_factoid_vs_instruction": (thaicli_factoid_vs_instruction, ("thaicli",)),
    "dialect_delta_heatmap": (dialect_delta_heatmap, ("dialect_auto",)),
    "dialect_preference": (preference_bars, ("dialect_preference",)),
    "dialect_generation_fluency": (generation_fluency_bars, ("dialect_gen_fluency",)),
}
