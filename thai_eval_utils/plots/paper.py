"""Figures of the two papers' published tables (Kim et al. Tables 4-5; Limkonchotiwat et al. Tables 1-3), own runs beside them.

Each function takes a table as :mod:`thai_eval_utils.paper` returns it (printed strings or numbers;
an optional ``source`` column marks this toolkit's runs, labelled ``<model> (thai-eval)`` or
``<model> (thai-eval, partial)``)
and returns the matplotlib Figure; save it with :func:`thai_eval_utils.plots.save_figure`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..paper import CENTRAL, H6_TASKS, PAPER_SOURCE, numeric, rank_agreement

#: Preference options of Limkonchotiwat et al. Table 2, in stacking order, with legend labels.
PREFERENCE_OPTIONS = {"prefer_a": "A better", "prefer_b": "B better", "both": "Both good", "none": "Both poor"}
#: ΔDiff columns of Limkonchotiwat et al. Table 1 and their short labels.
DELTA_LABELS = {
    "qa_delta": "QA (ROUGE-L)",
    "summarization_delta": "summ. (ROUGE-L)",
    "translation_en_to_dialect_delta": "EN→dialect (BLEU)",
    "translation_dialect_to_en_delta": "dialect→EN (BLEU)",
}


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
    """ΔDiff (Central minus dialect; > 0 = worse in the dialect) per model and task, one panel per dialect."""
    df = _labelled(auto)
    deltas = DELTA_LABELS
    cols = [c for c in deltas if c in df]
    df = df.dropna(subset=cols, how="all")
    dialects = [d for d in df["dialect"].drop_duplicates() if d != CENTRAL and isinstance(d, str) and d.strip()]
    limit = float(np.nanmax(np.abs(df[cols].to_numpy(dtype=float)))) if len(df) else 1.0
    fig, axes = plt.subplots(1, len(dialects), figsize=(4.2 * len(dialects) + 1, 0.45 * df["label"].nunique() + 2), squeeze=False)
    for i, (ax, dialect) in enumerate(zip(axes[0], dialects)):
        labels = list(df.loc[df["dialect"] != CENTRAL, "label"].drop_duplicates())  # same rows in every panel
        grid = df[df["dialect"] == dialect].set_index("label")[cols].reindex(labels).rename(columns=deltas)
        sns.heatmap(grid, annot=True, fmt=".2f", cmap="RdBu_r", center=0, vmin=-limit, vmax=limit, ax=ax,
                    cbar=i == len(dialects) - 1, annot_kws={"fontsize": 7})
        ax.set(title=dialect, xlabel="", ylabel="" if i else "model")
        if i:
            ax.set_yticklabels([])
    fig.suptitle("ΔDiff = Central minus dialect (Limkonchotiwat et al. Table 1)", fontsize=10)
    fig.tight_layout()
    return fig


def preference_bars(pref: pd.DataFrame) -> plt.Figure:
    """Human preference counts per dialect as stacked bars, one panel per model pair (Limkonchotiwat et al. Table 2)."""
    df = numeric(pref)
    pairs = list(df["pair"].drop_duplicates())
    fig, axes = plt.subplots(1, len(pairs), figsize=(3.4 * len(pairs), 4), sharey=True, squeeze=False)
    colors = sns.color_palette("colorblind", len(PREFERENCE_OPTIONS))
    for ax, pair in zip(axes[0], pairs):
        sub = df[df["pair"] == pair].set_index("dialect")
        sub[list(PREFERENCE_OPTIONS)].rename(columns=PREFERENCE_OPTIONS).plot.bar(stacked=True, ax=ax, color=colors, legend=False, rot=0)
        first = sub.iloc[0]
        ax.set(title=f"A = {first['model_a']}\nB = {first['model_b']}", xlabel="", ylabel="items")
        ax.title.set_fontsize(8)
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    fig.suptitle("Pairwise human preference (Limkonchotiwat et al. Table 2)", fontsize=10)
    fig.tight_layout()
    return fig


def generation_fluency_bars(gf: pd.DataFrame) -> plt.Figure:
    """Generation and Fluency scores (0-100) per dialect and model (Limkonchotiwat et al. Table 3)."""
    df = _labelled(gf)
    long = df.melt(id_vars=["label", "dialect"], value_vars=["generation", "fluency"], var_name="measure", value_name="score")
    grid = sns.catplot(data=long, x="dialect", y="score", hue="measure", col="label", kind="bar", height=3.6, aspect=1.1)
    grid.set_titles("{col_name}")
    grid.set(ylim=(0, 100), xlabel="", ylabel="score (0-100)")
    grid.figure.suptitle("Generation and Fluency in the dialect (Limkonchotiwat et al. Table 3)", fontsize=10, y=1.03)
    return grid.figure


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
