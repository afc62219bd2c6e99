"""SEA-HELM's Thai tasks declared as the package's declared tasks (:mod:`thai_eval_utils.tasks.declared`), built
from the task table (:func:`~.config.task_configs`): each task's prompt and gold as functions of a row, its answer
tag as the reply filter (:class:`~thai_eval_utils.tasks.shaping.AnswerTag`, the free-text tasks), its budget, and
its metric class as a metric object.

SEA-HELM scores a run, not an item (F1AccMetric's labels are those of the run's gold answers, SummarizationMetric's
ROUGE-L is a bootstrap over the run's items, MetricX reads every row at once): each metric object here is a
:class:`RunMetric` whose :meth:`~RunMetric.score_run` gives one run's metrics, per-item values (SEA-HELM's
``individual_scores``) and predictions from the run's stored records. Its ``name`` is the task's headline metric.
:mod:`.task_run` runs the declarations with ``tasks.runner.run_task`` in SEA-HELM's stored run layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from thai_eval_utils.seahelm.config import SEAHELM_COMMIT, TaskConfig
from thai_eval_utils.seahelm.generation import probability
from thai_eval_utils.seahelm.metrics import f1_acc_metrics, qa_metrics, summarization_metrics
from thai_eval_utils.seahelm.prompts import first_label, build_messages
from thai_eval_utils.seahelm.translation import MetricX, metricx_input, metricx_metrics, translation_metrics
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.metrics import Metric
from thai_eval_utils.tasks.shaping import AnswerTag, OfTableEntry

#: The version every declaration records (the SEA-HELM commit whose prompts and metrics they follow).
VERSION = f"seahelm@{SEAHELM_COMMIT}"
#: The metric classes whose answer is the rest of the answer tag's line (F1AccMetric reads a label after it).
TEXT_METRICS = ("QuestionAnsweringMetric", "SummarizationMetric", "TranslationMetric")
#: The metric classes whose per-item values (SEA-HELM's individual scores) are on 0-1; ROUGE-L, MetricX, chrF++ and
#: the gold probability are on 0-100 already.
UNIT_METRICS = ("F1AccMetric", "QuestionAnsweringMetric", "IFEvalMetric", "MTBenchJudgeMetric")

Scored = tuple[dict[str, Any], list[float], list[Any]]


class RunMetric(Metric):
    """One of SEA-HELM's metric classes over a run: :meth:`score_run` (the run's records, in item order, each with
    its ``label`` and its reply with the thinking cut, ``scored``) -> (metrics, per-item values, predictions); for
    F1AccMetric, QuestionAnsweringMetric and SummarizationMetric, :data:`SCORERS`' function of the labels, the
    replies and the answer tag."""

    def __init__(self, task: TaskConfig) -> None:
        self.name, self.answer_tag, self.metric_class = task.metric, task.answer_tag, task.metric_class
        self.scale = 100.0 if task.metric_class in UNIT_METRICS else 1.0  # what turns a value into the 0-100 tables

    def parameters(self) -> dict[str, Any]:
        return {"metric_class": self.metric_class, "answer_tag": self.answer_tag}

    def score_run(self, records: Sequence[Mapping[str, Any]]) -> Scored:
        labels, replies = [r["label"] for r in records], [r["scored"] for r in records]
        return SCORERS[self.metric_class](labels, replies, self.answer_tag)


#: SEA-HELM's metric classes a :class:`RunMetric` scores with a function of the run's labels and replies.
SCORERS: dict[str, Callable[[list[Any], list[str], str], Scored]] = {
    "F1AccMetric": f1_acc_metrics,
    "QuestionAnsweringMetric": qa_metrics,
    "SummarizationMetric": summarization_metrics,
}


class Translation(RunMetric):
    """TranslationMetric: MetricX-24 with the model the user gives (its headline), else chrF++ (ours, the
    headline then: ``chrf_pp_ours``); a reply whose thinking never closed reaches MetricX as SEA-HELM's ``None``."""

    def __init__(self, task: TaskConfig, metricx: MetricX | None = None) -> None:
        super().__init__(task)
        self.metricx = metricx
        self.name = task.metric if metricx else "chrf_pp_ours"

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "metricx": self.metricx.model if self.metricx else None}

    def score_run(self, records: Sequence[Mapping[str, Any]]) -> Scored:
        labels = [r["label"] for r in records]
        metrics, per_item, preds = translation_metrics(labels, [r["scored"] for r in records], self.answer_tag)
        if self.metricx is not None:
            inputs = [
                metricx_input(r["source"], None if r.get("failed") else p, r["label"]) for r, p in zip(records, preds)
            ]
            mx, per_item = metricx_metrics(self.metricx.score(inputs))
            metrics.update(mx)
        return metrics, per_item, preds


class GoldProbability(RunMetric):
    """A ``-logprobs`` twin: the gold answer's log-probability after the tag (``gold_logprob`` on each record);
    per item its probability (x 100, :func:`~.generation.probability`)."""

    def score_run(self, records: Sequence[Mapping[str, Any]]) -> Scored:
        lps = [r["gold_logprob"] for r in records if r.get("gold_logprob") is not None]
        probs = [probability(r.get("gold_logprob")) for r in records]
        metrics = {
            "null_count": sum(r.get("gold_logprob") is None for r in records),
            "average_cumulative_logprobs": float(np.mean(lps)) if len(lps) >= 2 else 0,
            "average_cumulative_probabilities": float(np.mean(probs)),
        }
        return metrics, probs, [None] * len(records)


def run_metric(task: TaskConfig, metricx: MetricX | None = None) -> RunMetric:
    """The metric object that scores ``task``'s runs (a ``-logprobs`` twin: its gold probability)."""
    if task.is_logprobs:
        return GoldProbability(task)
    if task.metric_class == "TranslationMetric":
        return Translation(task, metricx)
    if task.metric_class not in SCORERS:
        raise ValueError(f"{task.key}: metric class {task.metric_class} is scored by another module")
    return RunMetric(task)


class Prompt(OfTableEntry[TaskConfig]):
    """The user message SEA-HELM sends for a row (its preamble and task template; the shots go before it as chat
    turns, :func:`~.prompts.build_messages`)."""

    def __call__(self, row: Mapping[str, Any]) -> str:
        return build_messages(self.task, row)[-1]["content"]


class Label(OfTableEntry[TaskConfig]):
    """A row's gold answer as text (a QA row's first answer)."""

    def __call__(self, row: Mapping[str, Any]) -> str:
        return str(first_label(row.get("label")))


def declare(task: TaskConfig, metric: Metric) -> GenerationTask:
    """The declaration of one SEA-HELM Thai task, scored by ``metric`` (:func:`run_metric`; IF-Eval's and the
    MT-Bench judge's own): its budget, its answer tag as the reply filter of the free-text tasks, unseeded (each run
    brings its own seed, :data:`~.config.SEEDS`), its table entry recorded in ``extra``."""
    return GenerationTask(
        name=task.key,
        data=task.filepath or "",
        prompt=Prompt(task),
        reference=Label(task),
        metrics=(metric,),
        max_new_tokens=task.max_tokens,
        seed=None,
        title=task.name,
        version=VERSION,
        extra={"competency": task.competency, "aggregation_group": task.aggregation_group},
        filters=(AnswerTag(task.answer_tag),) if task.metric_class in TEXT_METRICS else (),
    )
