"""Statistics for honest comparisons (methods in docs/statistics.md): bootstrap intervals, paired tests,
Holm's adjustment, corpus-metric and stratified resampling, the LLM judge's noise floor.

A layer between ``core`` and the benchmark subpackages: it imports only ``core``, and every benchmark
(the ThaiCLI judge's noise floor and order effect, the dialect paper's intervals) and ``compare`` may use it.
"""

from thai_eval_utils.stats.align import (
    Aligned,
    DataMismatchError,
    align,
    check_same_data,
    data_hash,
    per_item,
)
from thai_eval_utils.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    Interval,
    bootstrap_indices,
    mean_interval,
    signature,
    spearman_interval,
)
from thai_eval_utils.stats.corpus import (
    CorpusMetric,
    corpus_delta_diff_interval,
    corpus_paired_bootstrap,
)
from thai_eval_utils.stats.holm import holm
from thai_eval_utils.stats.noise_floor import NoiseFloor, item_spread, noise_floor
from thai_eval_utils.stats.paired import (
    PairedResult,
    compare_paired,
    mcnemar_exact,
    results_table,
    sign_flip_test,
    with_holm,
)
from thai_eval_utils.stats.stratified import stratified_paired_bootstrap

__all__ = [
    "DEFAULT_RESAMPLES",
    "Aligned",
    "CorpusMetric",
    "bootstrap_indices",
    "mean_interval",
    "spearman_interval",
    "DataMismatchError",
    "Interval",
    "NoiseFloor",
    "PairedResult",
    "align",
    "check_same_data",
    "compare_paired",
    "corpus_delta_diff_interval",
    "corpus_paired_bootstrap",
    "data_hash",
    "holm",
    "item_spread",
    "mcnemar_exact",
    "noise_floor",
    "per_item",
    "results_table",
    "sign_flip_test",
    "signature",
    "stratified_paired_bootstrap",
    "with_holm",
]
