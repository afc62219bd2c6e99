"""SEA-HELM's aggregation across runs (spec ``seahelm_thai.md`` 5.2): the leaderboard's mean and standard error,
``helpers/results_aggregation.ipynb`` cells 2-4 (a run's own results-JSON totals, 5.1, are the ``seahelm`` export's:
``thai_eval_utils.export.seahelm.results_document``).

The standard error is the code's, not the documentation's: ``docs/score_calculations.md:41`` says clustered
standard errors (Miller 2024), but the notebook computes the standard error of the mean of 30 bootstrap
replicates, ``sqrt(variance(v) / 30)``, where each replicate v_b takes, for every item, its score in one run drawn
at random (items are not resampled). One ``numpy.random.default_rng(94370244)`` is consumed task by task in the
order the tasks are given (SEA-HELM: run 0's config order, over every language of that run; P3).
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The notebook's bootstrap replicates and seed (ipynb ``aggregate_scores(n_bootstraps=30, seed=94370244)``).
N_BOOTSTRAPS, AGGREGATION_SEED = 30, 94370244


def stderr(values: Sequence[float]) -> float:
    """``sqrt(statistics.variance(values) / len(values))``; 0.0 for no value (the notebook's ``calculate_stderr``;
    one value raises there, as ``statistics.variance`` does)."""
    if len(values) == 0:
        return 0.0
    return math.sqrt(statistics.variance(values) / len(values))


def _balanced(labels: Sequence[Any], preds: Sequence[Any]) -> float:
    from sklearn.metrics import balanced_accuracy_score

    with warnings.catch_warnings():  # "" (a wrong answer) is no gold class: sklearn warns, the notebook ignores it
        warnings.simplefilter("ignore")
        return float(balanced_accuracy_score(labels, preds))


def _normalized(acc: float, k: int) -> float:
    """The notebook's ``normalize_scores(acc, 1/K, 1) * 100``. With one gold label (K = 1, possible only on a
    small ``--limit``) the notebook divides by zero; here that is 0, as the per-run ``normalize_score`` gives."""
    return 0.0 if k <= 1 else max((acc - 1 / k) / (1 - 1 / k), 0) * 100


@dataclass
class OverRuns:
    """One task's leaderboard numbers: ``mean`` and ``stderr`` of the 30 replicates ``mean_list``; ``runs`` with
    data; ``incomplete`` when some run had none; ``branch`` says which of the notebook's three branches ran."""

    mean: float
    stderr: float
    mean_list: list[float]
    runs: int
    incomplete: bool
    branch: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "stderr": self.stderr,
            "mean_list": self.mean_list,
            "runs": self.runs,
            "is_incomplete": self.incomplete,
            "branch": self.branch,
        }


def task_over_runs(
    scores: Sequence[Sequence[float]],
    labels: Sequence[Sequence[Any]],
    rng: np.random.Generator,
    *,
    single_run_logprobs: bool = False,
    n_bootstraps: int = N_BOOTSTRAPS,
) -> OverRuns:
    """One task's mean and standard error over runs, exactly as the notebook's ``aggregate_scores`` (ipynb:459-546).

    Args:
        scores: per run (in run order; ``[]`` for a run without data), the per-item values as SEA-HELM's
            ``individual_scores`` hold them (None/NaN already 0.0).
        labels: per run, the items' gold labels (``[]`` when the rows have none: IF-Eval, MT-Bench).
        rng: the model's one generator (``np.random.default_rng(94370244)``), consumed here.
        single_run_logprobs: the ``max_n_runs == 1`` branch (the ``-logprobs`` twins): replicate b counts item i
            right when ``U[b, i] > p_i`` with p_i the run-0 score, as the notebook does (P1: it compares U(0,1) with a
            0-100 value).
    """
    valid = [s for s in scores if len(s) > 0]
    if not valid:
        return OverRuns(0, 0, [0] * n_bootstraps, 0, True, "no data")
    if single_run_logprobs:
        p, lab = np.asarray(scores[0], dtype=float), list(labels[0])
        correct = rng.random(size=(n_bootstraps, len(p))) > p
        preds = np.strings.multiply(lab, correct.astype(int))
        values = [_normalized(_balanced(lab, row), len(set(lab))) for row in preds]
        return OverRuns(statistics.mean(values), stderr(values), values, 1, False, "single-run logprobs")
    lab = list(labels[0]) if labels else []
    try:
        multi_choice = lab != [] and len(set(lab)) != len(lab)
    except TypeError:  # list labels (QA) are unhashable
        multi_choice = False
    n = len(valid[0])
    idx = rng.integers(0, len(valid), size=(n_bootstraps, n))
    picked = np.array(valid)[idx, np.arange(n)]
    if multi_choice:
        preds = np.strings.multiply(lab, picked.astype(int))
        values = [_normalized(_balanced(lab, row), len(set(lab))) for row in preds]
        branch = "balanced accuracy"
    else:
        means = np.mean(picked, axis=1)
        if np.max([v for s in scores for v in s]) <= 1:  # the notebook's x100 heuristic (P11)
            means = means * 100
        values = means.tolist()
        branch = "mean"
    return OverRuns(statistics.mean(values), stderr(values), values, len(valid), len(valid) != len(scores), branch)


def _mean_lists(lists: Sequence[Sequence[float]]) -> list[float]:
    return np.mean(lists, axis=0).tolist()


def language_over_runs(
    tasks: Mapping[str, OverRuns], competency: Mapping[str, str], group: Mapping[str, str | None]
) -> dict[str, Any]:
    """Competency and language rows from the tasks' replicates (ipynb:550-627): a group's list = the element-wise
    mean of its members' lists (a ``-logprobs`` suffix dropped from its name); a competency's = the element-wise
    mean of its ungrouped tasks' and its groups' lists; the language's = over competencies. Each row: mean,
    stderr = sqrt(var/30), mean_list."""
    comps: dict[str, dict[str, list[list[float]]]] = {}
    groups: dict[tuple[str, str], list[list[float]]] = {}
    for task, res in tasks.items():
        comp = competency[task]
        comps.setdefault(comp, {"tasks": []})
        g = group.get(task)
        if g:
            groups.setdefault((comp, g.replace("-logprobs", "")), []).append(res.mean_list)
        else:
            comps[comp]["tasks"].append(res.mean_list)
    out: dict[str, Any] = {"competencies": {}, "groups": {}}
    lang_lists = []
    for comp, parts in comps.items():
        lists = list(parts["tasks"])
        for (c, g), members in groups.items():
            if c == comp:
                gl = _mean_lists(members)
                out["groups"][g] = {"mean": statistics.mean(gl), "stderr": stderr(gl), "mean_list": gl}
                lists.append(gl)
        cl = _mean_lists(lists)
        out["competencies"][comp] = {"mean": statistics.mean(cl), "stderr": stderr(cl), "mean_list": cl}
        lang_lists.append(cl)
    ll = _mean_lists(lang_lists) if lang_lists else [0.0]
    out["language"] = {"mean": statistics.mean(ll), "stderr": stderr(ll), "mean_list": ll}
    return out
