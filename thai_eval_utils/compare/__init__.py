"""Compare two models' stored runs: :func:`thai_eval_utils.compare.runs.compare_runs` (selection in
:mod:`~thai_eval_utils.compare.load`, per-item tables in :mod:`~thai_eval_utils.compare.items`, the items that
differ most in :mod:`~thai_eval_utils.compare.differ`; imported from their modules). What each benchmark
contributes (its headline scores, averages, side-by-side view) comes from its suite (:mod:`thai_eval_utils.core.registry`).

The statistics live one layer down, in :mod:`thai_eval_utils.stats` (so the benchmarks may use them too); their
names are re-exported here, so ``from thai_eval_utils.compare import compare_paired`` keeps working. A benchmark's
own intervals live in its package (the dialect paper's: ``thai_eval_utils.dialect.intervals``). Methods:
``docs/statistics.md``.
"""

from thai_eval_utils.stats import *  # noqa: F403 - the statistics' names, importable here as before they moved to stats
from thai_eval_utils.stats import __all__ as _STATS

__all__ = [*_STATS]
