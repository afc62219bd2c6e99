"""Figures of the two papers' published tables (Kim et al. Tables 4-5; Limkonchotiwat et al. Tables 1-3), own runs beside them.

Each function takes a table as :mod:`thai_eval_utils.paper.published` returns it (printed strings or numbers;
an optional ``source`` column marks this toolkit's runs, labelled ``<model> (thai-eval)``, with the run's
``setting`` and ``partial`` where they apply: ``<model> (thai-eval, shots:0, partial)``)
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


def _flag(df: pd.DataFrame, column: str) -> pd.Series:
    """A true/false column as booleans (``True`` or ``"True"``, as a table read back from CSV holds it); False
    where the column is missing."""
    if column not in df:
        return pd.Series(False, index=df.index)
    return df[column].map(lambda v: str(v).strip().lower() in ("true", "1", "1.0"))


def _run_label(key: str, partial: bool) -> str:
    """A run's key (``<model> (thai-eval[, <setting>])``) with ``, partial`` added inside the brackets."""
    return f"{key[:-1]}, partial)" if partial else key


def _labelled(df: pd.DataFrame) -> pd.DataFrame:
    """Numeric copy with ``key`` (the model; for one of this toolkit's runs ``<model> (thai-eval)``, with its
    setting when it has one: one key per table row of a model), ``partial_run`` and ``label`` (the key, marked
    ``partial`` for a partial run)."""
    out = numeric(df)
    is_run = out["source"].ne(PAPER_SOURCE) if "source" in out else pd.Series(False, index=out.index)
    setting = out["setting"].astype(str).str.strip() if "setting" in out else pd.Series("", index=out.index)
    run_key = out["model"].astype(str) + " (thai-eval" + setting.map(lambda s: f", {s}" if s else "") + ")"
    out["key"] = np.where(is_run, run_key, out["model"].astype(str))
    out["partial_run"] = is_run & _flag(out, "partial")
    out["label"] = [_run_label(k, p) for k, p in zip(out["key"], out["partial_run"])]
    return out


def _one_per_key(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` and ``partial_run`` indexed by the rows' key, the first row of a key kept: own_runs builds one row
    per key, and a table with a repeated one (a hand-made or concatenated table) must not reach a join."""
    out = _labelled(df)
    return out.loc[~out["key"].duplicated(), ["key", column, "partial_run"]].set_index("key")


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
    a, b = _one_per_key(h6, "thai_h6_avg"), _one_per_key(thaicli, "thaicli_avg")
    both = a.join(b, how="inner", lsuffix="_h6").dropna(subset=["thai_h6_avg", "thaicli_avg"])
    # a model's row in both tables (the same key); marked partial when either of its runs is
    both.index = [_run_label(k, p) for k, p in zip(both.index, both["partial_run_h6"] | both["partial_run"])]
    both = both[["thai_h6_avg", "thaicli_avg"]]
    agreement = rank_agreement(both["thai_h6_avg"], both["thaicli_avg"])
    fig, (ax, ax_rank) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.3, 1]})
    sns.scatterplot(data=both, x="thai_h6_avg", y="thaicli_avg", ax=ax, s=60)
    for label, row in both.iterrows():
        ax.annotate(
            label, (row["thai_h6_avg"], row["thaicli_avg"]), fontsize=7, xytext=(4, 3), textcoords="offset points"
        )
    ax.set(
        xlabel="Thai-H6 average",
        ylabel="ThaiCLI average (judge score 1-10)",
        title="Core capability vs cultural alignment",
    )
    ranks = both.rank(ascending=False, method="min")
    for label, row in ranks.iterrows():
        ax_rank.plot([0, 1], [row["thai_h6_avg"], row["thaicli_avg"]], marker="o")
        ax_rank.annotate(
            f"({row['thaicli_avg']:.0f}) {label}",
            (1, row["thaicli_avg"]),
            fontsize=7,
            xytext=(6, -2),
            textcoords="offset points",
        )
        ax_rank.annotate(
            f"{label} ({row['thai_h6_avg']:.0f})",
            (0, row["thai_h6_avg"]),
            fontsize=7,
            xytext=(-6, -2),
            textcoords="offset points",
            ha="right",
        )
    ax_rank.set(
        xticks=[0, 1],
        xticklabels=["Thai-H6 rank", "ThaiCLI rank"],
        xlim=(-1.1, 2.1),
        yticks=[],
        title="Ranks (1 = best)",
    )
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
        ax.annotate(
            row["label"], (row["factoid"], row["instruction"]), fontsize=7, xytext=(4, 3), textcoords="offset points"
        )
    low = np.nanmin(df[["factoid", "instruction"]].to_numpy()) - 0.5
    high = np.nanmax(df[["factoid", "instruction"]].to_numpy()) + 0.5
    ax.plot([low, high], [low, high], color="grey", lw=0.8, ls="--")
    ax.set(
        xlim=(low, high),
        ylim=(low, high),
        xlabel="factoid (1-10)",
        ylabel="instruction (1-10)",
        title="ThaiCLI: factoid vs instruction (Kim et al. Table 5)",
    )
    return fig


def dialect_delta_heatmap(auto: pd.DataFrame) -> plt.Figure:
    """ΔDiff per model and task, one panel per dialect (Limkonchotiwat et al. Table 1 layout, runs marked).

    The wide published layout is turned into :func:`thai_eval_utils.dialect.metrics.delta_diff`'s tidy form and drawn
    by :func:`thai_eval_utils.dialect.plots.delta_heatmap`, the same figure the dialect notebook draws.
    """
    df = _labelled(auto)
    rows = [
        {"model": label, "dialect": dialect, "task": task, "metric": metric, "delta": float(delta)}
        for task, (metric, _) in TABLE1_TASKS.items()
        if f"{task}_delta" in df
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
    return dialect_plots.generation_fluency_bars(
        df.assign(model=df["label"])[["dialect", "model", "generation", "fluency"]]
    )


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
