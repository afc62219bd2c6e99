"""The leaderboard's table for the notebook: our runs' accuracies (x 100, n, interval) beside the published rows
(:mod:`.published`), one row per (model, source), one column per task key, each cell ``value [low, high] n=N``."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from thai_eval_utils.thai_llm_leaderboard.generation import NLG_TASKS, NlgRun
from thai_eval_utils.thai_llm_leaderboard.runner import NLURun
from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS

ROW_COLUMNS = ["model", "source", "task", "value", "n", "ci_low", "ci_high", "signature"]


def run_rows(model: str, runs: Iterable[NLURun]) -> pd.DataFrame:
    """One row per run: ``model, source`` ("thai-eval run"), ``task, value`` (accuracy x 100), ``n, ci_low,
    ci_high`` (x 100; None with fewer than 2 items), ``signature``."""
    rows = []
    for run in runs:
        acc = run.summary["scores"]["accuracy"]
        low, high = ((acc.get("interval") or {}).get(k) for k in ("low", "high"))
        low, high = (None if v is None else 100 * v for v in (low, high))
        rows.append((model, "thai-eval run", run.task, 100 * acc["value"], acc["n"], low, high, acc["signature"]))
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


def chosen_tasks(tasks: Iterable[str] | None, catalogue: Iterable[str]) -> list[str]:
    """The keys of ``catalogue`` a run asks for, in the catalogue's order when ``tasks`` is None or empty (every one),
    else in the order asked; a key of another catalogue (``tasks`` may mix NLU, NLG and ``mt_bench_thai``) is skipped.

    Example:
        >>> chosen_tasks(["mt_bench_thai", "b"], ["a", "b"]), chosen_tasks(None, ["a", "b"])
        (['b'], ['a', 'b'])
    """
    known = list(catalogue)
    return [t for t in (tasks or known) if t in known]


def runner_metrics_frame(runs: Iterable[NLURun]) -> pd.DataFrame:
    """One row per log-likelihood run: ``task, n``, the rows ``excluded`` and ``truncated``, and the runner's own
    metric columns (:func:`.metrics.runner_metrics`)."""
    counts = {"n": "n", "excluded": "n_excluded", "truncated": "n_truncated"}  # column -> summary key
    return pd.DataFrame(
        [{"task": r.task, **{c: r.summary[k] for c, k in counts.items()}, **r.summary["runner_metrics"]} for r in runs]
    )


def nlg_frame(runs: Iterable[NlgRun]) -> pd.DataFrame:
    """One row per (generation run, metric): ``task, metric, value, n, ci_low, ci_high``, ``displayed`` (the metric
    the leaderboard shows for the task, :attr:`.generation.NlgTask.displayed`) and the ``signature``."""
    rows = []
    for r in runs:
        for k, s in r.scores.items():
            iv = s["interval"] or {}
            ci = {"ci_low": iv.get("low"), "ci_high": iv.get("high"), "displayed": k == NLG_TASKS[r.task].displayed}
            rows.append(
                {"task": r.task, "metric": k, "value": s["value"], "n": s["n"], **ci, "signature": s["signature"]}
            )
    return pd.DataFrame(rows)
