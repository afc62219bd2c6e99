"""SEA-HELM's Thai tasks as declared generation tasks (seahelm/declarations.py): each task of the table declared
with its budget, its answer tag as the reply filter of the free-text tasks and SEA-HELM's metric class as a metric
object that scores a run from its stored records, as the runner stores them."""

from __future__ import annotations

import pytest

from tests.fakes import FakeModel
from thai_eval_utils.seahelm import Protocol, run_seahelm_task
from thai_eval_utils.seahelm.config import SEEDS
from thai_eval_utils.seahelm.config import task_config
from thai_eval_utils.seahelm.declarations import (
    GoldProbability,
    RunMetric,
    Translation,
    declare,
    run_metric,
)
from thai_eval_utils.seahelm.extract import extract_text
from thai_eval_utils.seahelm.runner import RUN_BY_DEFAULT
from thai_eval_utils.seahelm.translation import MetricX
from thai_eval_utils.tasks.declared import GenerationTask
from thai_eval_utils.tasks.shaping import AnswerTag


def _records(labels, replies):
    return [{"label": g, "scored": r, "source": "s", "failed": False} for g, r in zip(labels, replies)]


def test_every_generation_task_of_the_table_declares_with_its_metric_object():
    for key in [k for k in RUN_BY_DEFAULT if k not in ("if-eval", "mt-bench-judge")]:
        task = task_config(key)
        decl = declare(task, run_metric(task))
        assert isinstance(decl, GenerationTask) and decl.name == key
        assert decl.max_new_tokens == task.max_tokens and decl.seed is None and decl.version == "seahelm@6844e6c"
        assert [m.name for m in decl.scorers] == [task.metric if key[:11] != "translation" else "chrf_pp_ours"]
    qa, sentiment = task_config("qa"), task_config("sentiment")
    assert declare(qa, run_metric(qa)).filters == (AnswerTag(qa.answer_tag),)
    assert declare(sentiment, run_metric(sentiment)).filters == ()  # F1AccMetric reads a label after the tag itself
    row = {"id": 1, "label": ["ก", "ข"], "prompts": [{"text": "คำถาม", "context": "บริบท", "question": "คำถาม"}]}
    decl = declare(qa, run_metric(qa))
    assert decl.reference(row) == "ก" and decl.prompt(row).endswith(
        qa.task_template.format(**row["prompts"][0], answer_tag=qa.answer_tag)
    )
    assert decl.declaration()["prompt"] == {"function": "thai_eval_utils.seahelm.declarations:Prompt", "task": "qa"}


def test_a_run_metric_scores_a_run_as_the_metric_class_functions():
    """Sentiment (F1AccMetric) over three stored replies: gold A A B, predicted A B B -> per item 1 0 1, balanced
    accuracy (1/2 + 1) / 2 = 75; the object's name is the task's headline metric."""
    metric = run_metric(task_config("sentiment"))
    assert type(metric) is RunMetric and metric.name == "normalized_accuracy"
    tag = task_config("sentiment").answer_tag
    metrics, per_item, preds = metric.score_run(_records(["A", "A", "B"], [f"{tag} A", f"{tag} B", f"{tag} B"]))
    assert (per_item, preds) == ([1.0, 0.0, 1.0], ["A", "B", "B"])
    assert metrics["accuracy"] == pytest.approx(75.0) and metrics["normalized_accuracy"] == pytest.approx(50.0)
    assert metric.spec()["metric_class"] == "F1AccMetric" and metric.spec()["answer_tag"] == tag


def test_translation_headlines_metricx_only_with_its_model_and_the_twins_their_gold_probability():
    task = task_config("translation-en-xx")
    assert isinstance(run_metric(task), Translation) and run_metric(task).name == "chrf_pp_ours"
    assert run_metric(task, MetricX("/models/metricx")).name == task.metric
    twin = run_metric(task_config("causal-logprobs"))
    assert isinstance(twin, GoldProbability)
    metrics, probs, _ = twin.score_run([{"gold_logprob": 0.0}, {"gold_logprob": None}])
    assert probs == [100.0, 0.0] and metrics["null_count"] == 1 and metrics["average_cumulative_probabilities"] == 50.0
    with pytest.raises(ValueError, match="if-eval: metric class IFEvalMetric is scored by another module"):
        run_metric(task_config("if-eval"))


def test_the_tables_scale_is_the_metric_objects():
    """SEA-HELM's individual scores are 0-1 for the label, QA F1, IF-Eval and MT-Bench classes (shown x100) and
    0-100 already for ROUGE-L, MetricX/chrF++ and the gold probability: the metric object says so, and the suite's
    headlines take it from there."""
    from thai_eval_utils.seahelm.suite import _scale

    scales = {k: RunMetric(task_config(k)).scale for k in ("sentiment", "qa", "if-eval", "mt-bench-judge")}
    assert scales == {"sentiment": 100.0, "qa": 100.0, "if-eval": 100.0, "mt-bench-judge": 100.0}
    for key in ("abssum", "translation-en-xx", "sentiment-logprobs"):
        assert RunMetric(task_config(key)).scale == 1.0 and _scale(key) == 1.0
    assert _scale("thai_exam_ic") == 100.0


def test_the_free_text_answer_is_the_answer_tag_filter():
    tag = "คำแปล:"
    for reply in ["ก่อน\nคำแปล: ** สวัสดี **\nหลัง", "ไม่มีแท็ก  ", "", None]:
        assert extract_text(reply, tag) == AnswerTag(tag).apply(reply or "")
    assert extract_text("คำแปล:\n```\nHello", tag) == "Hello"


def test_a_repeated_run_calls_the_model_one_run_at_a_time_with_its_seed(tmp_path):
    """Two runs of three rows in batches of two go to the model as run 0's [2, 1] then run 1's [2, 1], each call with
    its run's seed (the runner's batches never mix runs); the records land in the task's one store."""
    model = FakeModel(reply=lambda m: "คำตอบ: แง่ลบ")
    run = run_seahelm_task(
        model, "sentiment", runs=2, limit=3, outputs=tmp_path, progress=False, protocol=Protocol(batch_size=2)
    )
    assert [(c["n"], c["seed"]) for _, c in model.calls] == [(2, SEEDS[0]), (1, SEEDS[0]), (2, SEEDS[1]), (1, SEEDS[1])]
    assert run.run_dir.parent.name == "sentiment" and run.run_dir.parent.parent.name == "seahelm"
    assert run.computed == 6 and list(run.summary["runs"]) == ["0", "1"]
