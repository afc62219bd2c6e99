"""The Thai-H6 average of the paper's Table 4 (Kim et al., arXiv 2410.04795): :func:`thai_h6_score` over the task
headline scores of :func:`~thai_eval_utils.h6.evaluation.evaluate` runs, and the Table 4 row of a set of runs
with what makes it comparable (:func:`run_row`, :func:`run_tag`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from thai_eval_utils.core.provenance import Score, canonical_json, sha256_text
from thai_eval_utils.h6 import tasks as T
from thai_eval_utils.h6 import variants as V
from thai_eval_utils.h6.evaluation import H6Result

TASKS = T.TASKS
#: Table 4 column of the average.
AVERAGE_COLUMN = "thai_h6_avg"


@dataclass(frozen=True)
class H6Score:
    """The Thai-H6 average (x 100) of the tasks given, with each task's headline score.

    ``partial`` is True when some of the six tasks are missing; the average is then over those
    present and must not be compared with the paper's. The standard error treats the tasks as
    independent: ``100 * sqrt(sum(se_i^2)) / m``.
    """

    value: float
    stderr: float | None
    tasks: dict[str, Score]
    missing: tuple[str, ...]

    @property
    def partial(self) -> bool:
        return bool(self.missing)

    def row(self, model: str | None = None, stderr: bool = True) -> pd.DataFrame:
        """One row like the paper's Table 4 (``thai_h6_avg`` and the six task columns, x 100)."""
        row: dict[str, Any] = {"model": model} if model is not None else {}
        row[AVERAGE_COLUMN] = self.value
        for t in TASKS:
            row[t] = 100 * self.tasks[t].value if t in self.tasks else math.nan
        if stderr:
            row[f"{AVERAGE_COLUMN}_stderr"] = math.nan if self.stderr is None else self.stderr
            for t in TASKS:
                se = self.tasks[t].stderr if t in self.tasks else None
                row[f"{t}_stderr"] = math.nan if se is None else 100 * se
        row["partial"] = self.partial
        return pd.DataFrame([row])

    def __str__(self) -> str:
        se = f" ± {self.stderr:.2f}" if self.stderr is not None else ""
        part = f" (partial: missing {', '.join(self.missing)})" if self.partial else ""
        return f"{AVERAGE_COLUMN} = {self.value:.2f}{se} over {len(self.tasks)} tasks{part}"


def thai_h6_score(results_or_scores: Mapping[str, H6Result | Score] | Iterable[H6Result]) -> H6Score:
    """The Thai-H6 average: mean of the task headline scores x 100 (ARC acc_norm, HellaSwag acc_norm,
    MMLU acc, TruthfulQA mc2, Winogrande acc, GSM8K strict exact match).

    Args:
        results_or_scores: task -> :class:`H6Result` or headline :class:`Score` (0-1 scale), or an
            iterable of results. Fewer than six tasks give a partial score. A labelled variant's result
            (``th_gsm8k.chat``, ``th_arc.generative-mc``: :mod:`.variants`) is left out: it is not the paper's
            protocol and never enters the average.
    """
    items = (
        results_or_scores.items()
        if isinstance(results_or_scores, Mapping)
        else ((r.task, r) for r in results_or_scores)
    )
    tasks: dict[str, Score] = {}
    for name, value in items:
        if V.is_variant(name) or (isinstance(value, H6Result) and V.is_variant(value.task)):
            continue
        key = T.get_task(name).name
        tasks[key] = value.headline if isinstance(value, H6Result) else value
    if not tasks:
        raise ValueError("no task scores given (a labelled variant never enters the H6 average)")
    tasks = {t: tasks[t] for t in TASKS if t in tasks}
    ses = [s.stderr for s in tasks.values()]
    stderr = None if any(se is None for se in ses) else 100 * math.sqrt(sum(se * se for se in ses)) / len(tasks)
    value = 100 * sum(s.value for s in tasks.values()) / len(tasks)
    return H6Score(value, stderr, tasks, tuple(t for t in TASKS if t not in tasks))


def run_tag(results: Mapping[str, H6Result]) -> str:
    """A file-name tag that tells differently configured runs apart: ``full`` or ``limit<N>``, then ``cfg`` and
    8 hex digits of the tasks' configs (shots, sampler, seed, BOS, options), e.g. ``limit2-cfg1a2b3c4d``. Tables
    saved under it never overwrite another configuration's, and a cut-down run never looks like a full one."""
    limits = sorted({r.limit for r in results.values() if r.limit is not None})
    head = f"limit{'-'.join(map(str, limits))}" if limits else "full"
    configs = {task: results[task].config for task in sorted(results)}
    return f"{head}-cfg{sha256_text(canonical_json(configs))[:8]}"


def paper_results(results: Mapping[str, H6Result]) -> dict[str, H6Result]:
    """The results of the paper's six tasks (a labelled variant's left out): what the Table 4 row is made of."""
    return {name: res for name, res in results.items() if not V.is_variant(res.task)}


def run_row(results: Mapping[str, H6Result], model: str | None = None) -> pd.DataFrame:
    """:meth:`H6Score.row` of ``results`` plus what makes it comparable: ``limit`` (documents per task when cut
    short, else empty), ``shots`` (per task, Table 4 order), ``run`` (:func:`run_tag`); ``partial`` is also True
    when any task was limited (a cut-down run is never a paper row)."""
    row = thai_h6_score(results).row(model)
    limits = sorted({r.limit for r in results.values() if r.limit is not None})
    row["limit"] = "/".join(map(str, limits))
    row["shots"] = "/".join(str(results[t].config.get("num_fewshot")) for t in TASKS if t in results)
    row["run"] = run_tag(results)
    row["partial"] = bool(row["partial"].iloc[0]) or bool(limits)
    return row
