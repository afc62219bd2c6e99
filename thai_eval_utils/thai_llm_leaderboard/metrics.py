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
from thai_eval_utils.tasks.metrics import Metric

#: The bootstrap of the intervals (the tasks' and the report's: percentile over items, 1000 resamples, seed 0).
N_RESAMPLES, LEVEL, SEED = 1000, 0.95, 0


def runner_metrics(golds: Sequence[int], preds: Sequence[int]) -> dict[str, float]:
    """The runner's ten metric values of one task, in the column order of ``metrics_nlu/nlu_results_tha_{m}.csv``
    (``:253-268``)."""
    from sklearn.metrics import classification_report, precision_recall_fscore_support

    with warnings.catch_warnings():  # undefined precision/recall -> 0, as the runner's default does (with a warning)
        warnings.simplefilter("ignore")
        report = classification_report(list(golds), list(preds), output_dict=True)
        micro_f1, micro_prec, micro_rec, _ = precision_recall_fscore_support(list(golds), list(preds), average="micro")
    # "accuracy" is always in the report: with labels=None the micro average is the accuracy.
    micro = {"micro_prec": float(micro_prec), "micro_rec": float(micro_rec), "micro_f1_score": float(micro_f1)}
    averages = {  # macro_prec, macro_rec, macro_f1_score, then the weighted ones
        f"{avg}_{column}": report[f"{avg} avg"][key]
        for avg in ("macro", "weighted")
        for column, key in (("prec", "precision"), ("rec", "recall"), ("f1_score", "f1-score"))
    }
    return {"accuracy": float(report["accuracy"]), **micro, **averages}


def accuracy_interval(correct: Sequence[int]) -> Interval | None:
    """Percentile bootstrap interval of the accuracy over items (None with fewer than 2 items; a constant's own
    value at both ends when every item is alike)."""
    x = np.asarray(correct, dtype=float)
    if x.size < 2:
        return None
    if np.all(x == x[0]):
        v = float(x[0])
        fields = ("accuracy", v, v, v, LEVEL, "percentile", N_RESAMPLES, SEED, int(x.size), N_RESAMPLES)
        return Interval(*fields, design="bootstrap over items", note="every item has the same value")
    return mean_interval(x, name="accuracy", method="percentile", level=LEVEL, n_resamples=N_RESAMPLES, seed=SEED)


def macro_f1_interval(golds: Sequence[int], preds: Sequence[int]) -> Interval | None:
    """Percentile bootstrap interval of the runner's macro F1 over items (None with fewer than 2 items): each
    resample's value is :class:`MacroF1`'s closed form on its summed per-item statistics, where a
    ``classification_report`` per resample would be slow."""
    if len(golds) < 2:
        return None
    metric = MacroF1()
    stats = metric.statistics(preds, golds)

    def stat(idx: np.ndarray) -> tuple[float, str]:
        return metric.score(stats[idx].sum(axis=0)), ""

    return loop_bootstrap("macro_f1_score", len(golds), stat, level=LEVEL, n_resamples=N_RESAMPLES, seed=SEED)


# ---------------------------------------------------------------------------------------------- metric objects
class Accuracy(Metric):
    """The leaderboard's number as a metric object: 1.0 per item whose predicted label (the protocol's argmax,
    :func:`~.scoring.item_record`) is the gold one, averaged; its interval :func:`accuracy_interval`."""

    name = "accuracy"
    kind = "binary"
    scale = 100.0
    task_kind = "multiple_choice"

    def score_item(self, prediction: int, reference: int) -> float:  # type: ignore[override]
        return float(int(prediction) == int(reference))

    def interval(self, predictions: Sequence[int], references: Sequence[int]) -> Interval | None:
        """Percentile bootstrap interval over items (:func:`accuracy_interval`)."""
        return accuracy_interval([int(p == g) for p, g in zip(predictions, references, strict=True)])


class MacroF1(Metric):
    """The runner's ``macro_f1_score`` as a corpus-level metric over the predicted labels: scikit-learn's macro F1
    over the labels in golds and predictions (:func:`runner_metrics`). Its sufficient statistics per item are each
    label's (tp, fp, fn) counts over ``n_labels`` labels; :meth:`score` is :func:`macro_f1`'s closed form."""

    name = "macro_f1_score"
    kind = "corpus"
    scale = 100.0
    task_kind = "multiple_choice"

    def __init__(self, n_labels: int = 26) -> None:
        self.n_labels = n_labels

    def parameters(self) -> dict[str, int]:
        return {"n_labels": self.n_labels}

    def statistics(self, hypotheses: Sequence[int], references: Sequence[int]) -> np.ndarray:  # type: ignore[override]
        """Per item, ``(tp, fp, fn)`` of each label ``0 .. n_labels - 1`` (shape ``(n, 3 * n_labels)``)."""
        out = np.zeros((len(hypotheses), self.n_labels, 3), dtype=np.int64)
        for i, (p, g) in enumerate(zip(hypotheses, references, strict=True)):
            if p == g:
                out[i, int(g), 0] = 1
            else:
                out[i, int(p), 1] = out[i, int(g), 2] = 1
        return out.reshape(len(hypotheses), -1)

    def score(self, totals: np.ndarray) -> float:
        """The mean over the labels seen (in golds or predictions) of ``2 tp / (2 tp + fp + fn)``."""
        tp, fp, fn = np.asarray(totals, dtype=float).reshape(self.n_labels, 3).T
        seen = (tp + fp + fn) > 0
        return float(np.mean(2 * tp[seen] / (2 * tp[seen] + fp[seen] + fn[seen])))

    def __call__(self, hypotheses: Sequence[int], references: Sequence[int]) -> float:  # type: ignore[override]
        """scikit-learn's value (the runner's number), NaN without items."""
        if not len(hypotheses):
            return float("nan")
        return float(runner_metrics(list(references), list(hypotheses))["macro_f1_score"])

    def interval(self, predictions: Sequence[int], references: Sequence[int]) -> Interval | None:
        """Percentile bootstrap interval over items (:func:`macro_f1_interval`)."""
        return macro_f1_interval(references, predictions)
