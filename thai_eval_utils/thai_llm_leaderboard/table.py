"""The leaderboard's table for the notebook: our runs' accuracies (x 100, n, interval) beside the published rows
(:mod:`.published`), one row per (model, source), one column per task key, each cell ``value [low, high] n=N``."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from thai_eval_utils.thai_llm_leaderboard.runner import NLURun
from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS

ROW_COLUMNS = ["model", "source", "task", "value", "n", "ci_low", "ci_high", "signature"]


def run_rows(model: str, runs: Iterable[NLURun]) -> pd.DataFrame:
    """One row per run: ``model, source`` ("thai-eval run"), ``task, value`` (accuracy x 100), ``n, ci_low,
    ci_high`` (x 100; None with fewer than 2 items), ``signature``."""
    rows = []
    for run in runs:
        acc = run.summary["scores"]["accuracy"]
        iv = acc.get("interval") or {}
        rows.append(
            {
                "model": model,
                "source": "thai-eval run",
                "task": run.task,
                "value": 100 * acc["value"],
                "n": acc["n"],
                "ci_low": None if iv.get("low") is None else 100 * iv["low"],
                "ci_high": None if iv.get("high") is None else 100 * iv["high"],
                "signature": acc["signature"],
            }
        )
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def _cell(row: pd.Series) -> str:
    ci = "[no interval: n < 2]" if pd.isna(row["ci_low"]) else f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
    return f"{row['value']:.1f} {ci} n={int(row['n'])}"


def leaderboard_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """The table: index (model, source), columns the task keys present (in the suite's order), cells
    ``value [low, high] n=N`` (accuracy x 100, 95% percentile bootstrap interval over items)."""
    if rows.empty:
        return pd.DataFrame()
    frame = rows.assign(cell=rows.apply(_cell, axis=1)).pivot_table(
        index=["model", "source"], columns="task", values="cell", aggfunc="first"
    )
    order = [t for t in NLU_TASKS if t in frame.columns]
    return frame[order].fillna("")
