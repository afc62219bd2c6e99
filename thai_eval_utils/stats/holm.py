"""Holm's step-down adjustment of p-values across the rows of one table (Holm 1979, Scand. J. Statist. 6:65-70).

Hand-written because scipy offers only Benjamini-Hochberg/Yekutieli (``scipy.stats.false_discovery_control``),
which control the false discovery rate, not the family-wise error rate that Holm controls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the input order.

    With the m non-NaN p-values sorted ascending p_(1) <= ... <= p_(m), the adjusted value of p_(i) is
    ``min(1, max_{j <= i} (m - j + 1) * p_(j))``. NaN p-values (rows without a test) stay NaN and do not
    count in m.

    Example: ``holm([0.01, 0.04, 0.03, 0.005])`` -> ``[0.03, 0.06, 0.06, 0.02]``.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    if np.any((p[valid] < 0) | (p[valid] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = (m - np.arange(m)) * p[order]
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out
