"""Paired comparison of two models on the same items: paired bootstrap CI of the difference of
means (Efron and Tibshirani 1993), exact McNemar test for 0/1 items (McNemar 1947; the exact binomial form),
and a paired sign-flip permutation test for other metrics (Fisher 1935; Good, *Permutation Tests*, 2005)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from thai_eval_utils.stats.align import RunValues, align, check_same_data
from thai_eval_utils.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    mean_diff,
    scipy_bootstrap,
    signature,
)
from thai_eval_utils.stats.holm import holm

Test = Literal["auto", "mcnemar", "permutation"]


@dataclass(frozen=True)
class PairedResult:
    """One row of a comparison table: A against B on the items both have (``diff = mean_a - mean_b``)."""

    metric: str
    n_paired: int
    n_only_a: int
    n_only_b: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    level: float
    method: str
    n_resamples: int
    seed: int | None
    test: str
    p_value: float
    p_holm: float = float("nan")
    only_in_a: tuple[Hashable, ...] = ()
    only_in_b: tuple[Hashable, ...] = ()
    note: str = ""

    @property
    def signature(self) -> str:
        return f"{signature(self.method, self.level, self.n_resamples, self.seed)}|test:{self.test}"

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["only_in_a"], d["only_in_b"] = list(self.only_in_a), list(self.only_in_b)
        return {**d, "signature": self.signature}

    def __str__(self) -> str:
        text = (
            f"{self.metric}: A {self.mean_a:.4f} vs B {self.mean_b:.4f}, diff {self.diff:+.4f} "
            f"[{100 * self.level:g}% CI {self.ci_low:+.4f}, {self.ci_high:+.4f}] (n={self.n_paired}"
        )
        if self.n_only_a or self.n_only_b:
            text += f"; left out: {self.n_only_a} only in A, {self.n_only_b} only in B"
        text += f"; {self.test} p={self.p_value:.4g}"
        if not math.isnan(self.p_holm):
            text += f", Holm p={self.p_holm:.4g}"
        return f"{text}) {self.signature}" + (f" [{self.note}]" if self.note else "")


def mcnemar_exact(a: Sequence[float], b: Sequence[float]) -> tuple[int, int, float]:
    """Exact McNemar test of paired 0/1 outcomes: ``scipy.stats.binomtest(b, b + c, 0.5)``, two-sided.

    ``b`` counts items A got right and B wrong, ``c`` the reverse; concordant pairs carry no information.
    p = 1 when there is no discordant pair. Example: b=7, c=2 -> p = 0.1797.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not np.all(np.isin(x, (0.0, 1.0))) or not np.all(np.isin(y, (0.0, 1.0))):
        raise ValueError("McNemar's test needs 0/1 outcomes")
    n_b, n_c = int(np.sum((x == 1) & (y == 0))), int(np.sum((x == 0) & (y == 1)))
    p = 1.0 if n_b + n_c == 0 else float(stats.binomtest(n_b, n_b + n_c, 0.5, alternative="two-sided").pvalue)
    return n_b, n_c, p


def sign_flip_test(
    a: Sequence[float], b: Sequence[float], *, n_resamples: int = DEFAULT_RESAMPLES, seed: int | None = 0
) -> float:
    """Two-sided paired permutation (sign-flip) test of ``mean(a) - mean(b)`` via ``scipy.stats.permutation_test``.

    ``permutation_type="samples"`` swaps A and B within each pair, i.e. flips the sign of each difference;
    under H0 (exchangeable within pairs) every flip is equally likely. Exact (all 2^n flips) when
    2^n <= n_resamples, else Monte Carlo with ``rng=default_rng(seed)``; scipy's two-sided p is
    ``min(1, 2 * min(p_less, p_greater))``, valid here since the sign-flip distribution is symmetric.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if np.all(x == y):
        return 1.0
    res = stats.permutation_test(
        (x, y),
        mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


def compare_paired(
    run_a: RunValues,
    run_b: RunValues,
    *,
    metric: str,
    key: str = "key",
    value: str = "value",
    test: Test = "auto",
    method: str = "BCa",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    data_hash_a: str | None = None,
    data_hash_b: str | None = None,
    allow_different_data: bool = False,
) -> PairedResult:
    """Compare two runs' per-item values of one metric, paired by item key.

    Args:
        run_a, run_b: ``key -> value`` mappings or DataFrames with ``key`` and ``value`` columns.
        metric: the row's name, e.g. ``"th_arc/acc_norm"``.
        test: ``"mcnemar"`` (0/1 items), ``"permutation"`` (sign-flip), or ``"auto"`` (McNemar when every
            value is 0 or 1).
        method: ``"BCa"`` (default) or ``"percentile"``; BCa falls back to percentile when degenerate.
        data_hash_a, data_hash_b: the runs' data hashes (see :func:`~.align.data_hash`); different ones
            raise :class:`~.align.DataMismatchError` unless ``allow_different_data``.

    Items are sorted by key before resampling, so the input order never changes a result.
    """
    note = check_same_data(data_hash_a, data_hash_b, allow_different_data=allow_different_data)
    al = align(run_a, run_b, key=key, value=value)
    x, y = al.a, al.b
    binary = bool(np.all(np.isin(x, (0.0, 1.0))) and np.all(np.isin(y, (0.0, 1.0))))
    chosen = ("mcnemar" if binary else "permutation") if test == "auto" else test
    if chosen == "mcnemar":
        n_b, n_c, p = mcnemar_exact(x, y)
        test_name = "mcnemar-exact"
        note = "; ".join(filter(None, [note, f"discordant: b={n_b} (A right, B wrong), c={n_c} (A wrong, B right)"]))
    elif chosen == "permutation":
        p, test_name = sign_flip_test(x, y, n_resamples=n_resamples, seed=seed), "sign-flip-permutation"
    else:
        raise ValueError(f"test must be auto, mcnemar or permutation, got {test!r}")
    if len(x) < 2:
        low = high = float("nan")
        used, extra = method, "fewer than 2 paired items: no interval"
    else:
        low, high, used, extra = scipy_bootstrap(
            (x, y), mean_diff, paired=True, method=method, level=level, n_resamples=n_resamples, seed=seed
        )
    return PairedResult(
        metric=metric,
        n_paired=len(x),
        n_only_a=len(al.only_in_a),
        n_only_b=len(al.only_in_b),
        mean_a=float(x.mean()),
        mean_b=float(y.mean()),
        diff=float(x.mean() - y.mean()),
        ci_low=low,
        ci_high=high,
        level=level,
        method=used,
        n_resamples=n_resamples,
        seed=seed,
        test=test_name,
        p_value=p,
        only_in_a=al.only_in_a,
        only_in_b=al.only_in_b,
        note="; ".join(filter(None, [note, extra])),
    )


def with_holm(rows: Sequence[PairedResult]) -> list[PairedResult]:
    """The rows with ``p_holm`` filled in, Holm-adjusted across the rows of this table."""
    adjusted = holm([r.p_value for r in rows])
    return [replace(r, p_holm=float(p)) for r, p in zip(rows, adjusted)]


def results_table(rows: Sequence[PairedResult]) -> pd.DataFrame:
    """One table row per comparison, Holm-adjusted across these rows; key lists omitted."""
    records = []
    for r in with_holm(rows):
        d = r.to_dict()
        del d["only_in_a"], d["only_in_b"]
        records.append(d)
    return pd.DataFrame(records)
