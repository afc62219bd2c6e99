"""Honest model comparisons (issue 14): paired significance, bootstrap intervals, the judge's noise floor.

See ``docs/statistics.md`` for each method, its scipy function (or why it is hand-written) and defaults.
Stored runs are compared with :func:`thai_eval_utils.compare.runs.compare_runs` (selection in
:mod:`~thai_eval_utils.compare.load`; imported from their modules, as they read the benchmark subpackages).
"""

from thai_eval_utils.compare.align import (
    Aligned,
    DataMismatchError,
    align,
    check_same_data,
    data_hash,
    per_item,
)
from thai_eval_utils.compare.holm import holm
from thai_eval_utils.compare.interval import DEFAULT_RESAMPLES, Interval, signature
from thai_eval_utils.compare.intervals import (
    delta_diff_interval,
    generation_fluency_intervals,
    kappa_interval,
    kappa_intervals,
    mean_interval,
    preference_share_intervals,
    spearman_interval,
)
from thai_eval_utils.compare.noise import NoiseFloor, item_spread, noise_floor
from thai_eval_utils.compare.paired import (
    PairedResult,
    compare_paired,
    mcnemar_exact,
    results_table,
    sign_flip_test,
    with_holm,
)
from thai_eval_utils.compare.resample import (
    corpus_delta_diff_interval,
    corpus_paired_bootstrap,
    stratified_paired_bootstrap,
)

__all__ = [
    "DEFAULT_RESAMPLES", "Aligned", "DataMismatchError", "Interval", "NoiseFloor", "PairedResult", "align",
    "check_same_data", "compare_paired", "corpus_delta_diff_interval", "corpus_paired_bootstrap", "data_hash",
    "delta_diff_interval", "generation_fluency_intervals", "holm", "item_spread", "kappa_interval",
    "kappa_intervals", "mcnemar_exact", "mean_interval", "noise_floor", "per_item", "preference_share_intervals",
    "results_table", "sign_flip_test", "signature", "spearman_interval", "stratified_paired_bootstrap", "with_holm",
]
