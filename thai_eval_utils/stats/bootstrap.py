"""Bootstrap intervals with a printed signature, and the one wrapper around ``scipy.stats.bootstrap``
(Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13-14: percentile and BCa)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

#: Default number of bootstrap resamples (the issue's default; tests use fewer).
DEFAULT_RESAMPLES = 10_000
#: Interval methods this package offers through scipy (hand-written resampling offers percentile only).
METHODS = ("percentile", "BCa")


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
            text += f"; {self.n_undefined} of {self.n_resamples} resamples undefined and dropped: {self.undefined_reason}"
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
            res = stats.bootstrap(tuple(data), statistic, n_resamples=n_resamples, paired=paired, vectorized=True,
                                  confidence_level=level, method=m, rng=np.random.default_rng(seed))
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
