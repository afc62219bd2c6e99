"""Bootstrap intervals for the dialect paper's analyses that print none (arXiv 2504.05898, Tables 2, 3 and 6):
Cohen's kappa, ΔDiff, Generation/Fluency and preference shares (the judge-vs-human Spearman interval
is :func:`thai_eval_utils.stats.bootstrap.spearman_interval`, which ``human_eval.judge_human_spearman`` uses).

Kappa is resampled by :func:`~thai_eval_utils.stats.bootstrap.loop_bootstrap` because a resample can leave it
undefined (one label only), and such resamples must be counted and dropped, which ``scipy.stats.bootstrap``
cannot do; its intervals are percentile intervals. Means and ΔDiff of per-item scores go through
``scipy.stats.bootstrap`` (percentile or BCa).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from thai_eval_utils.dialect.human_eval import (
    PREFERENCE_CHOICES,
    annotator_pairs,
    cohen_kappa,
    human_item_scores,
)
from thai_eval_utils.dialect.metrics import delta_diff
from thai_eval_utils.stats.align import RunValues, per_item, sort_key
from thai_eval_utils.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    Interval,
    loop_bootstrap,
    mean_diff,
    mean_interval,
    scipy_bootstrap,
)


def kappa_interval(
    a: Sequence[float | str],
    b: Sequence[float | str],
    *,
    weights: str | None = None,
    labels: Sequence[float | str] | None = None,
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    name: str = "kappa",
) -> Interval:
    """Cohen's kappa of two annotators (:func:`~thai_eval_utils.dialect.human_eval.cohen_kappa`) with a bootstrap
    interval over items; undefined resamples (every rating one label: chance agreement 1) are counted and dropped."""
    x, y = list(a), list(b)
    if len(x) != len(y):
        raise ValueError(f"annotators rated different numbers of items ({len(x)} vs {len(y)})")

    # kappa depends on the resample only through its confusion matrix, i.e. the counts of each distinct
    # (a, b) label pair: cohen_kappa is called once per distinct count vector (exact; sklearn is slow).
    pairs = {p: i for i, p in enumerate(dict.fromkeys(zip(x, y)))}
    pair_id = np.array([pairs[p] for p in zip(x, y)], dtype=int)
    cache: dict[tuple[int, ...], tuple[float, str]] = {}

    def stat(idx: np.ndarray) -> tuple[float, str]:
        counts = tuple(np.bincount(pair_id[idx], minlength=len(pairs)).tolist())
        if counts not in cache:
            r = cohen_kappa([x[i] for i in idx], [y[i] for i in idx], weights=weights, labels=labels)
            cache[counts] = (r.value, "") if r.defined else (float("nan"), "one label only, chance agreement 1 (0/0)")
        return cache[counts]

    return loop_bootstrap(name, len(x), stat, level=level, n_resamples=n_resamples, seed=seed)


def delta_diff_interval(
    central: RunValues,
    dialect: RunValues,
    *,
    name: str = "delta_diff",
    key: str = "key",
    value: str = "value",
    method: str = "BCa",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """ΔDiff = Central minus dialect mean per-item score (e.g. ROUGE-L), with a ``scipy.stats.bootstrap`` interval.

    When both sides have the same item ids the items are paired (the same resampled ids on both sides);
    otherwise each side is resampled independently. ``Interval.design`` states which. The point estimate
    is :func:`thai_eval_utils.dialect.metrics.delta_diff` of the two means.
    """
    vc = per_item(central, key=key, value=value, name="Central")
    vd = per_item(dialect, key=key, value=value, name="dialect")
    paired, ids = vc.keys() == vd.keys(), sorted(vc, key=sort_key)
    c = np.array([vc[k] for k in ids])
    d = np.array([vd[k] for k in (ids if paired else sorted(vd, key=sort_key))])  # paired: the same ids in order
    design = (
        f"paired over {c.size} aligned items"
        if paired
        else f"independent resampling of Central ({c.size}) and dialect ({d.size}) items: ids do not align "
        f"({len(vc.keys() & vd.keys())} shared)"
    )
    tidy = pd.DataFrame(
        {"model": "m", "dialect": ["center", "east"], "task": name, "metric": name, "value": [c.mean(), d.mean()]}
    )
    estimate = float(delta_diff(tidy)["delta"].iloc[0])
    low, high, used, note = scipy_bootstrap(
        (c, d), mean_diff, paired=paired, method=method, level=level, n_resamples=n_resamples, seed=seed
    )
    return Interval(
        name,
        estimate,
        low,
        high,
        level,
        used,
        n_resamples,
        seed,
        max(c.size, d.size),
        n_resamples,
        design=design,
        note=note,
    )


def _table(rows: list[tuple[dict[str, object], Interval]]) -> pd.DataFrame:
    """One row per interval: its keys, then estimate, bounds, n, undefined resamples, signature and the interval."""
    return pd.DataFrame(
        [
            {
                **keys,
                "estimate": iv.estimate,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "n": iv.n,
                "n_undefined": iv.n_undefined,
                "signature": iv.signature,
                "interval": iv,
            }
            for keys, iv in rows
        ]
    )


def generation_fluency_intervals(
    df: pd.DataFrame,
    *,
    aspect: str = "avg",
    method: str = "BCa",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> pd.DataFrame:
    """Paper Table 3 cells with intervals: per (dialect, model), 100 x mean over items of the annotators' mean
    ``generation``, ``fluency`` or ``avg`` (``df`` from ``human_eval.load_generation_fluency``); bootstrap over items."""
    opts = dict(method=method, level=level, n_resamples=n_resamples, seed=seed)
    rows = []
    for (d, m), g in human_item_scores(df, aspect=aspect).groupby(["dialect", "model"], sort=False):
        iv = mean_interval(g["human_score"].to_numpy(), name=f"{aspect}:{d}/{m}", scale=100.0, **opts)
        rows.append(({"dialect": d, "model": m, "aspect": aspect}, iv))
    return _table(rows)


def preference_share_intervals(
    df: pd.DataFrame, *, method: str = "BCa", level: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> pd.DataFrame:
    """Paper Table 2 as shares with intervals: per (dialect, model pair, choice), the mean over items of the
    fraction of annotators choosing it (``df`` from ``human_eval.load_preferences``); times n_items it is
    Table 2's annotator-averaged count. Bootstrap over items."""
    rows, opts = [], dict(method=method, level=level, n_resamples=n_resamples, seed=seed)
    for (d, ma, mb), g in df.groupby(["dialect", "model_a", "model_b"], sort=False):
        for choice in PREFERENCE_CHOICES:
            share = (g["choice"] == choice).groupby([g["task"], g["item_id"]], sort=True).mean()
            iv = mean_interval(share.to_numpy(), name=f"share:{choice}:{d}", **opts)
            rows.append(({"dialect": d, "model_a": ma, "model_b": mb, "choice": choice}, iv))
    return _table(rows)


def kappa_intervals(
    df: pd.DataFrame,
    *,
    weights: str | None = None,
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> pd.DataFrame:
    """Paper Table 6 with intervals: kappa per dialect for Generation and Fluency (two annotators, ratings paired
    by task, item and model, as ``human_eval.agreement_table``), bootstrap over those rated units."""
    rows, opts = [], dict(weights=weights, level=level, n_resamples=n_resamples, seed=seed)
    for dialect, aspect, _, a, b in annotator_pairs(df):
        iv = kappa_interval(a, b, name=f"kappa:{dialect}/{aspect}", **opts)
        rows.append(({"dialect": dialect, "aspect": aspect}, iv))
    return _table(rows)
