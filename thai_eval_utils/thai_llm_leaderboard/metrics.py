"""The NLU metrics as the runner computes them (spec thai_llm_leaderboard.md 2.6; ``evaluation/main_nlu_prompt_batch.py:
242-269``): scikit-learn's ``classification_report`` and micro ``precision_recall_fscore_support`` of golds and
predictions. The leaderboard shows ``accuracy`` (``scripts/transform_result.py:37``); the F1s sit beside it.

The runner unpacks the micro tuple ``(P, R, F, support)`` into ``micro_f1, micro_prec, micro_rec``, so its
``micro_f1_score`` column holds the precision and ``micro_rec`` the F1 (all three equal accuracy for single-label
predictions); the names are kept as the runner writes them. Macro and weighted averages run over the labels present
in golds and predictions together, with 0 for an undefined precision or recall (scikit-learn's ``"warn"`` default).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from thai_eval_utils.stats.bootstrap import Interval, loop_bootstrap, mean_interval

#: The metric columns of ``metrics_nlu/nlu_results_tha_{m}.csv`` after ``prompt_lang`` (``:253-268``).
RUNNER_METRICS = (
    "accuracy",
    "micro_prec",
    "micro_rec",
    "micro_f1_score",
    "macro_prec",
    "macro_rec",
    "macro_f1_score",
    "weighted_prec",
    "weighted_rec",
    "weighted_f1_score",
)
#: The bootstrap of the intervals (the tasks' and the report's: percentile over items, 1000 resamples, seed 0).
N_RESAMPLES, LEVEL, SEED = 1000, 0.95, 0


def runner_metrics(golds: Sequence[int], preds: Sequence[int]) -> dict[str, float]:
    """The runner's ten metric values (:data:`RUNNER_METRICS`) of one task."""
    from sklearn.metrics import classification_report, precision_recall_fscore_support

    with warnings.catch_warnings():  # undefined precision/recall -> 0, as the runner's default does (with a warning)
        warnings.simplefilter("ignore")
        report = classification_report(list(golds), list(preds), output_dict=True)
        micro_f1, micro_prec, micro_rec, _ = precision_recall_fscore_support(list(golds), list(preds), average="micro")
    # "accuracy" is always in the report: with labels=None the micro average is the accuracy.
    return {
        "accuracy": float(report["accuracy"]),
        "micro_prec": float(micro_prec),
        "micro_rec": float(micro_rec),
        "micro_f1_score": float(micro_f1),
        "macro_prec": report["macro avg"]["precision"],
        "macro_rec": report["macro avg"]["recall"],
        "macro_f1_score": report["macro avg"]["f1-score"],
        "weighted_prec": report["weighted avg"]["precision"],
        "weighted_rec": report["weighted avg"]["recall"],
        "weighted_f1_score": report["weighted avg"]["f1-score"],
    }


def accuracy_interval(correct: Sequence[int]) -> Interval | None:
    """Percentile bootstrap interval of the accuracy over items (None with fewer than 2 items; a constant's own
    value at both ends when every item is alike)."""
    x = np.asarray(correct, dtype=float)
    if x.size < 2:
        return None
    if np.all(x == x[0]):
        v = float(x[0])
        return Interval(
            "accuracy",
            v,
            v,
            v,
            LEVEL,
            "percentile",
            N_RESAMPLES,
            SEED,
            int(x.size),
            N_RESAMPLES,
            design="bootstrap over items",
            note="every item has the same value",
        )
    return mean_interval(x, name="accuracy", method="percentile", level=LEVEL, n_resamples=N_RESAMPLES, seed=SEED)


def macro_f1(golds: np.ndarray, preds: np.ndarray) -> float:
    """scikit-learn's macro F1 over the labels in golds and predictions, in closed form: the mean over those labels
    of ``2 tp / (2 tp + fp + fn)`` (never 0/0: each label occurs on one side). A resample's statistic, where a
    ``classification_report`` per resample would be slow; the tests check it against scikit-learn."""
    labels = np.union1d(golds, preds)
    tp = np.array([np.sum((golds == c) & (preds == c)) for c in labels], dtype=float)
    fp = np.array([np.sum((golds != c) & (preds == c)) for c in labels], dtype=float)
    fn = np.array([np.sum((golds == c) & (preds != c)) for c in labels], dtype=float)
    return float(np.mean(2 * tp / (2 * tp + fp + fn)))


def macro_f1_interval(golds: Sequence[int], preds: Sequence[int]) -> Interval | None:
    """Percentile bootstrap interval of the runner's macro F1 over items (None with fewer than 2 items)."""
    g, p = np.asarray(golds), np.asarray(preds)
    if g.size < 2:
        return None

    def stat(idx: np.ndarray) -> tuple[float, str]:
        return macro_f1(g[idx], p[idx]), ""

    return loop_bootstrap("macro_f1_score", int(g.size), stat, level=LEVEL, n_resamples=N_RESAMPLES, seed=SEED)
