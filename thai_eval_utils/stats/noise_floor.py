"""The LLM judge's noise floor from k repeated judgements of the same answers (ThaiCLI, arXiv 2410.04795
section 4): how much a model's mean judge score moves when only the judge's sampling changes.

Formula. Let m_r be the mean over the n items of repeat r (one full judging pass), and s the standard
deviation of m_1..m_k (ddof=1): the spread of a ThaiCLI mean that comes from the judge alone. Two models each
judged once carry independent judge noise, so their difference has standard deviation sqrt(2) s, and a
difference smaller than ``z * sqrt(2) * s`` (z = 1.96 at level 0.95) is within the judge's noise.
With few repeats s is rough (k - 1 degrees of freedom); ``basis="pooled"`` uses instead
s = sqrt(mean_i var_i / n), the within-item variances (ddof=1) pooled over all n items: the same
quantity if items are judged independently, with n (k - 1) degrees of freedom.
With ``stratum`` (ThaiCLI: ``format``), a repeat's mean is the unweighted mean of its S strata means (ThaiCLI =
(factoid + instruction) / 2) and the pooled sd is sqrt(sum_s mean_{i in s} var_i / n_s) / S.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from thai_eval_utils.core.errors import ThaiEvalDataError


def item_spread(df: pd.DataFrame, *, key: str = "key", repeat: str = "repeat", score: str = "score") -> pd.DataFrame:
    """Per item: ``n_repeats, mean, std`` (ddof=1) and ``range`` (max - min) of its repeated judge scores.

    Raises:
        ThaiEvalDataError: a missing column, a non-numeric score, a duplicate (item, repeat), or an item
            missing from some repeat (row = 0-based row of the DataFrame).
    """
    for col in (key, repeat, score):
        if col not in df.columns:
            raise ThaiEvalDataError(f"no column {col!r}", field=col)
    values = pd.to_numeric(df[score], errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy())
    if bad.size:
        raise ThaiEvalDataError(f"not a number: {df[score].iloc[bad[0]]!r}", row=int(bad[0]), field=score)
    dup = np.flatnonzero(df.duplicated([key, repeat]).to_numpy())
    if dup.size:
        row = df.iloc[dup[0]]
        raise ThaiEvalDataError(
            f"item {row[key]!r} judged twice in repeat {row[repeat]!r}", row=int(dup[0]), field=repeat
        )
    repeats = set(df[repeat])
    for k, g in df.groupby(key, sort=False):
        missing = repeats - set(g[repeat])
        if missing:
            raise ThaiEvalDataError(
                f"item {k!r} has no score in repeat(s) {sorted(missing, key=str)}",
                row=int(df.index.get_loc(g.index[0])),
                field=repeat,
            )
    grouped = values.groupby(df[key], sort=True)
    out = pd.DataFrame(
        {
            "n_repeats": grouped.size(),
            "mean": grouped.mean(),
            "std": grouped.std(ddof=1),
            "range": grouped.max() - grouped.min(),
        }
    )
    return out.rename_axis(key).reset_index()


@dataclass(frozen=True)
class NoiseFloor:
    """The judge's noise floor; ``min_detectable_diff`` = z * sqrt(2) * ``sd_of_mean`` (see the module docstring)."""

    n_items: int
    n_repeats: int
    mean: float
    repeat_means: tuple[float, ...]
    sd_of_mean_repeats: float
    sd_of_mean_pooled: float
    mean_item_std: float
    mean_item_range: float
    max_item_range: float
    level: float
    basis: str
    sd_of_mean: float
    min_detectable_diff: float
    stratum: str | None = None

    @property
    def signature(self) -> str:
        strata = f"|strata:{self.stratum}" if self.stratum else ""
        return f"noise:{self.basis}|level:{self.level:g}|repeats:{self.n_repeats}|items:{self.n_items}{strata}"

    def exceeds(self, diff: float) -> bool:
        """True when a difference of two models' means is larger than the judge's noise floor."""
        return abs(diff) > self.min_detectable_diff

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "repeat_means": list(self.repeat_means), "signature": self.signature}

    def __str__(self) -> str:
        return (
            f"judge noise: mean {self.mean:.3f} over {self.n_items} items x {self.n_repeats} repeats; "
            f"item std {self.mean_item_std:.3f} (mean), range {self.mean_item_range:.3f} (mean) / {self.max_item_range:.3f} (max); "
            f"sd of the mean {self.sd_of_mean:.4f}; differences under {self.min_detectable_diff:.4f} "
            f"are within noise ({100 * self.level:g}%) {self.signature}"
        )


def noise_floor(
    df: pd.DataFrame,
    *,
    key: str = "key",
    repeat: str = "repeat",
    score: str = "score",
    level: float = 0.95,
    basis: Literal["repeats", "pooled"] = "repeats",
    stratum: str | None = None,
) -> NoiseFloor:
    """The judge's noise floor from a DataFrame of ``key, repeat, score`` (k >= 2 repeats of every item).

    ``stratum`` names a column giving each item's stratum: the mean is then the unweighted mean of the strata
    means, as ThaiCLI averages its two formats (see the module docstring).

    Example: two items judged (7, 9) and (5, 5): repeat means 6 and 7, sd of the mean 0.707,
    min_detectable_diff = 1.96 * sqrt(2) * 0.707 = 1.96.
    """
    if basis not in ("repeats", "pooled"):
        raise ValueError(f"basis must be 'repeats' or 'pooled', got {basis!r}")
    spread = item_spread(df, key=key, repeat=repeat, score=score)
    k = int(df[repeat].nunique())
    if k < 2:
        raise ThaiEvalDataError(f"need at least 2 repeats per item to measure judge noise, got {k}", field=repeat)
    scores = pd.to_numeric(df[score])
    repeat_means = scores.groupby(df[repeat], sort=True).mean()
    n = len(spread)
    sd_rep = float(repeat_means.std(ddof=1))
    sd_pool = math.sqrt(float((spread["std"] ** 2).mean()) / n)
    mean = float(scores.mean())
    if stratum is not None:
        repeat_means, sd_pool = _stratified(df, spread, key, repeat, stratum, scores)
        sd_rep, mean = float(repeat_means.std(ddof=1)), float(repeat_means.mean())
    sd = sd_rep if basis == "repeats" else sd_pool
    z = float(stats.norm.ppf(0.5 + level / 2))
    return NoiseFloor(
        n_items=n,
        n_repeats=k,
        mean=mean,
        repeat_means=tuple(float(m) for m in repeat_means),
        sd_of_mean_repeats=sd_rep,
        sd_of_mean_pooled=sd_pool,
        mean_item_std=float(spread["std"].mean()),
        mean_item_range=float(spread["range"].mean()),
        max_item_range=float(spread["range"].max()),
        level=level,
        basis=basis,
        sd_of_mean=sd,
        min_detectable_diff=z * math.sqrt(2) * sd,
        stratum=stratum,
    )


def _stratified(
    df: pd.DataFrame, spread: pd.DataFrame, key: str, repeat: str, stratum: str, scores: pd.Series
) -> tuple[pd.Series, float]:
    """Per repeat, the unweighted mean of the strata means; the pooled sd of that mean (module docstring)."""
    if stratum not in df.columns:
        raise ThaiEvalDataError(f"no column {stratum!r}", field=stratum)
    per_key = df.groupby(key, sort=True)[stratum].nunique()
    if (per_key > 1).any():
        bad = per_key[per_key > 1].index[0]
        raise ThaiEvalDataError(f"item {bad!r} is in more than one {stratum}", field=stratum)
    means = scores.groupby([df[repeat], df[stratum]], sort=True).mean().groupby(level=0).mean()
    strata = df.drop_duplicates(key).set_index(key)[stratum]
    var = (spread.set_index(key)["std"] ** 2).groupby(strata).agg(["mean", "size"])
    return means, math.sqrt(float((var["mean"] / var["size"]).sum())) / len(var)
