"""The paired difference of two models' unweighted average over tasks (the Thai-H6 average of six task scores,
ThaiCLI's two formats), each task's items resampled within the task (docs/statistics.md); hand-written
because ``scipy.stats.bootstrap`` does not resample within strata."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.stats.align import RunValues, align, check_same_data
from thai_eval_utils.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    bootstrap_indices,
    percentile_ci,
)
from thai_eval_utils.stats.paired import PairedResult


def _by_task(run: pd.DataFrame | Mapping[str, RunValues], task: str) -> dict[str, RunValues]:
    if isinstance(run, pd.DataFrame):
        if task not in run.columns:
            raise ThaiEvalDataError(f"no column {task!r}", field=task)
        return {str(t): g for t, g in run.groupby(task, sort=True)}
    return {str(t): v for t, v in run.items()}


def stratified_paired_bootstrap(
    run_a: pd.DataFrame | Mapping[str, RunValues],
    run_b: pd.DataFrame | Mapping[str, RunValues],
    *,
    name: str = "average",
    task: str = "task",
    key: str = "key",
    value: str = "value",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    data_hash_a: str | None = None,
    data_hash_b: str | None = None,
    allow_different_data: bool = False,
) -> PairedResult:
    """Difference of two models' unweighted average over tasks (e.g. the Thai-H6 average of six task
    scores), each task's items resampled within the task, paired by key.

    ``run_a``/``run_b``: a DataFrame with ``task``, ``key``, ``value`` columns, or ``task -> per-item values``.
    Each task's score is the mean of its item values (MMLU's macro average over subjects is not modelled).
    The p-value is a stratified paired sign-flip test: each item's difference flips sign with probability
    1/2, ``p = (1 + #{|T*| >= |T|}) / (R + 1)``.
    """
    note = check_same_data(data_hash_a, data_hash_b, allow_different_data=allow_different_data)
    ta, tb = _by_task(run_a, task), _by_task(run_b, task)
    if set(ta) != set(tb):
        raise ThaiEvalDataError(
            f"the runs cover different tasks: only A {sorted(set(ta) - set(tb))}, only B {sorted(set(tb) - set(ta))}",
            field=task,
        )
    names = sorted(ta)
    aligned = [align(ta[t], tb[t], key=key, value=value) for t in names]
    diffs = [al.a - al.b for al in aligned]
    observed = float(np.mean([d.mean() for d in diffs]))
    rng = np.random.default_rng(seed)
    boot, flips = np.zeros(n_resamples), np.zeros(n_resamples)
    for d in diffs:  # tasks in sorted order, each drawing its own indices: same seed -> same numbers
        start = 0
        for idx in bootstrap_indices(rng, d.size, n_resamples):  # after each block, that block's sign flips
            r = len(idx)
            boot[start : start + r] += d[idx].mean(axis=1) / len(diffs)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(r, d.size))
            flips[start : start + r] += (signs * d).mean(axis=1) / len(diffs)
            start += r
    low, high = percentile_ci(boot, level)
    mean_a = float(np.mean([al.a.mean() for al in aligned]))
    mean_b = float(np.mean([al.b.mean() for al in aligned]))
    only_a = tuple((t, k) for t, al in zip(names, aligned) for k in al.only_in_a)
    only_b = tuple((t, k) for t, al in zip(names, aligned) for k in al.only_in_b)
    p = (
        1.0
        if all(np.all(d == 0) for d in diffs)
        else float((1 + np.sum(np.abs(flips) >= abs(observed) - 1e-12)) / (n_resamples + 1))
    )
    return PairedResult(
        metric=name,
        n_paired=sum(d.size for d in diffs),
        n_only_a=len(only_a),
        n_only_b=len(only_b),
        mean_a=mean_a,
        mean_b=mean_b,
        diff=mean_a - mean_b,
        ci_low=low,
        ci_high=high,
        level=level,
        method="percentile",
        n_resamples=n_resamples,
        seed=seed,
        test="stratified-sign-flip",
        p_value=p,
        only_in_a=only_a,
        only_in_b=only_b,
        note="; ".join(filter(None, [note, f"resampled within {len(names)} tasks: {', '.join(names)} (hand-written)"])),
    )
