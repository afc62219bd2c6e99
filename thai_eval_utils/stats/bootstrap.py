"""Bootstrap intervals with a printed signature (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993,
ch. 13-14: percentile and BCa): the one wrapper around ``scipy.stats.bootstrap``, the one source of resampled
item indices for the hand-written resamplings (:func:`bootstrap_indices`), and the intervals of one sample's
mean and of a Spearman correlation. Every interval speaks of ``n_resamples`` and ``level``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

#: Default number of bootstrap resamples (tests use fewer).
DEFAULT_RESAMPLES = 10_000
#: Interval methods this package offers through scipy (hand-written resampling offers percentile only).
METHODS = ("percentile", "BCa")
#: Resampled index cells (rows x items) drawn per block: bounds the memory of a vectorised resampling.
MAX_CELLS = 2_000_000


def signature(method: str, level: float, n_resamples: int, seed: int | None) -> str:
    """The provenance line of every interval, e.g. ``bootstrap:BCa|level:0.95|resamples:10000|seed:0``."""
    return f"bootstrap:{method}|level:{level:g}|resamples:{n_resamples}|seed:{seed}"


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap confidence interval and how it was made.

    ``n_undefined`` resamples had no defined statistic (e.g. kappa with a single label); they were
    dropped and the interval uses the ``n_used`` others. ``design`` says what was resampled
    (e.g. "paired over 120 aligned items"); ``note`` records a fallback (BCa -> percentile) and why.
    """

    name: str
    estimate: float
    low: float
    high: float
    level: float
    method: str
    n_resamples: int
    seed: int | None
    n: int
    n_used: int
    n_undefined: int = 0
    undefined_reason: str = ""
    design: str = ""
    note: str = ""

    @property
    def signature(self) -> str:
        return signature(self.method, self.level, self.n_resamples, self.seed)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "signature": self.signature}

    def __str__(self) -> str:
        pct = f"{100 * self.level:g}%"
        text = f"{self.name} = {self.estimate:.4f} [{pct} CI {self.low:.4f}, {self.high:.4f}] (n={self.n}"
        if self.design:
            text += f"; {self.design}"
        if self.n_undefined:
            text += (
                f"; {self.n_undefined} of {self.n_resamples} resamples undefined and dropped: {self.undefined_reason}"
            )
        if self.note:
            text += f"; {self.note}"
        return f"{text}) {self.signature}"


def percentile_ci(boot: np.ndarray, level: float) -> tuple[float, float]:
    """Percentile interval of a bootstrap distribution (NaN, NaN when it is empty)."""
    if boot.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(boot, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def scipy_bootstrap(
    data: Sequence[np.ndarray],
    statistic: Callable[..., np.ndarray],
    *,
    paired: bool,
    method: str,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> tuple[float, float, str, str]:
    """``scipy.stats.bootstrap`` (vectorised statistic taking ``axis``), seeded with ``rng=default_rng(seed)``.

    BCa needs a non-degenerate bootstrap and jackknife distribution; when every resample gives the same
    value (e.g. all paired differences equal) scipy warns and returns NaN. Then the percentile interval
    is computed instead, and the reason is returned.

    Returns:
        ``(low, high, method_used, note)``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    scipy_method = {"percentile": "percentile", "BCa": "BCa"}[method]

    def run(m: str) -> tuple[float, float, list[warnings.WarningMessage]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = stats.bootstrap(
                tuple(data),
                statistic,
                n_resamples=n_resamples,
                paired=paired,
                vectorized=True,
                confidence_level=level,
                method=m,
                rng=np.random.default_rng(seed),
            )
        ci = res.confidence_interval
        return float(ci.low), float(ci.high), caught

    low, high, caught = run(scipy_method)
    if method == "BCa" and (np.isnan(low) or np.isnan(high)):
        degenerate = [str(w.message) for w in caught if issubclass(w.category, stats.DegenerateDataWarning)]
        why = degenerate[0] if degenerate else "BCa returned NaN"
        low, high, _ = run("percentile")
        return low, high, "percentile", f"BCa degenerate ({why.split('.')[0]}); percentile used"
    return low, high, method, ""


def mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Vectorised ``mean(x) - mean(y)`` along ``axis`` (scipy's bootstrap/permutation statistic)."""
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def mean_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Vectorised mean along ``axis``."""
    return np.mean(x, axis=axis)


def bootstrap_indices(
    rng: np.random.Generator, n: int, n_resamples: int, *, max_cells: int = MAX_CELLS
) -> Iterator[np.ndarray]:
    """Resampled item indices (with replacement) as blocks of rows, shape ``(r, n)``, ``n_resamples`` rows in all.

    Hand-written resamplings (statistics that may be undefined, corpus metrics, strata) draw here. The rows are the
    draws of ``n_resamples`` calls of ``rng.integers(0, n, n)`` in order (numpy draws a block row by row), whatever
    ``max_cells``; a caller may draw from ``rng`` between blocks (the stratified sign flips do).
    """
    step = max(1, max_cells // max(n, 1))
    for start in range(0, n_resamples, step):
        yield rng.integers(0, n, (min(step, n_resamples - start), n))


def loop_bootstrap(
    name: str,
    n: int,
    stat: Callable[[np.ndarray], tuple[float, str]],
    *,
    level: float,
    n_resamples: int,
    seed: int | None,
) -> Interval:
    """Percentile bootstrap over ``n`` items of a statistic that may be undefined: ``stat(indices)`` returns
    ``(value, "")`` or ``(NaN, reason)``; undefined resamples are counted by reason and dropped, which
    ``scipy.stats.bootstrap`` cannot do (kappa with one label, Spearman with a constant side)."""
    estimate, why = stat(np.arange(n))
    if np.isnan(estimate):
        return Interval(
            name,
            float("nan"),
            float("nan"),
            float("nan"),
            level,
            "percentile",
            n_resamples,
            seed,
            n,
            0,
            n_resamples,
            f"undefined on the full data: {why}",
            "bootstrap over items",
        )
    boot, reasons = [], {}
    for block in bootstrap_indices(np.random.default_rng(seed), n, n_resamples):
        for idx in block:
            value, why = stat(idx)
            if np.isnan(value):
                reasons[why] = reasons.get(why, 0) + 1
            else:
                boot.append(value)
    low, high = percentile_ci(np.asarray(boot), level)
    reason = "; ".join(f"{k} ({v})" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return Interval(
        name,
        estimate,
        low,
        high,
        level,
        "percentile",
        n_resamples,
        seed,
        n,
        len(boot),
        n_resamples - len(boot),
        reason,
        "bootstrap over items",
    )


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float, str]:
    """Spearman's rho and its p-value (``scipy.stats.spearmanr``, ties get average ranks), or NaN, NaN and why:
    rho is undefined with fewer than 3 items or a constant side."""
    if len(x) < 3:
        return float("nan"), float("nan"), "fewer than 3 items"
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan"), float("nan"), "constant scores on one side"
    res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue), ""


def spearman_interval(
    judge: Sequence[float],
    human: Sequence[float],
    *,
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    name: str = "spearman_rho",
) -> Interval:
    """Judge-vs-human Spearman's rho (:func:`spearman`) with a percentile bootstrap interval over items
    (:func:`loop_bootstrap`: undefined resamples are counted and dropped)."""
    x, y = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"judge and human scores differ in length ({x.size} vs {y.size})")

    def stat(idx: np.ndarray) -> tuple[float, str]:
        rho, _, why = spearman(x[idx], y[idx])
        return rho, why

    return loop_bootstrap(name, len(x), stat, level=level, n_resamples=n_resamples, seed=seed)


def mean_interval(
    values: Sequence[float],
    *,
    name: str = "mean",
    method: str = "BCa",
    level: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = 0,
    scale: float = 1.0,
) -> Interval:
    """Mean of per-item values (times ``scale``) with a ``scipy.stats.bootstrap`` interval over items."""
    x = np.asarray(values, dtype=float) * scale
    if x.size < 2:
        raise ValueError("a bootstrap interval needs at least 2 items")
    low, high, used, note = scipy_bootstrap(
        (x,), mean_stat, paired=False, method=method, level=level, n_resamples=n_resamples, seed=seed
    )
    return Interval(
        name,
        float(x.mean()),
        low,
        high,
        level,
        used,
        n_resamples,
        seed,
        x.size,
        n_resamples,
        design="bootstrap over items",
        note=note,
    )
