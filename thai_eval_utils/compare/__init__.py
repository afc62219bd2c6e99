"""Compare two models' stored runs (issue 14): :func:`thai_eval_utils.compare.runs.compare_runs` (selection in
:mod:`~thai_eval_utils.compare.load`, per-item tables in :mod:`~thai_eval_utils.compare.items`, the items that
differ most in :mod:`~thai_eval_utils.compare.differ`; imported from their modules, as they read the benchmark
subpackages).

The statistics live one layer down, in :mod:`thai_eval_utils.stats` (so the benchmarks may use them too), and the
dialect paper's intervals in :mod:`thai_eval_utils.dialect.intervals`; their names are re-exported here, so
``from thai_eval_utils.compare import compare_paired`` keeps working. Methods: ``docs/statistics.md``.
"""

from thai_eval_utils.dialect.intervals import (
    delta_diff_interval,
    generation_fluency_intervals,
    kappa_interval,
    kappa_intervals,
    preference_share_intervals,
)
from thai_eval_utils.stats import *  # noqa: F403 - the statistics' names, as before issue 23
from thai_eval_utils.stats import __all__ as _STATS

__all__ = [*_STATS, "delta_diff_interval", "generation_fluency_intervals", "kappa_interval", "kappa_intervals",
           "preference_share_intervals"]
