"""The leaderboard's log-likelihood tasks as declared tasks: the declarations' functions of a row, the metric
objects (accuracy; macro F1, a corpus metric over the predicted labels), and run_nlu_task running them through the
declared tasks' runner (``tasks.runner.run_task``) in the leaderboard's layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeModel
from thai_eval_utils.tasks.declared import MultipleChoiceTask
from thai_eval_utils.thai_llm_leaderboard import runner as lb_runner
from thai_eval_utils.thai_llm_leaderboard.declarations import declare
from thai_eval_utils.thai_llm_leaderboard.metrics import Accuracy, MacroF1
from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS

DATA = Path(__file__).resolve().parents[1] / "data" / "thai_llm_leaderboard"
#: golds/preds by hand: label 0 tp 1 fn 1 -> F1 2/3; label 1 tp 1 fp 2 -> 1/2; label 2 fn 1 -> 0; macro 7/18.
GOLDS, PREDS = [0, 0, 1, 2], [0, 1, 1, 1]


def test_every_task_is_declared_with_accuracy_then_macro_f1():
    assert [declare(t).name for t in NLU_TASKS.values()] == list(NLU_TASKS)
    decl = declare(NLU_TASKS["xcopa_tha_seacrowd_qa"])
    assert isinstance(decl, MultipleChoiceTask) and decl.target_delimiter == ""
    assert decl.metric_names == ("accuracy", "macro_f1_score")
    assert decl.declaration()["prompt"] == {
        "function": "thai_eval_utils.thai_llm_leaderboard.declarations:Prompt",
        "task": "xcopa_tha_seacrowd_qa",
    }


def test_declared_functions_of_a_row():
    row = {"question": " Q ", "choices": ["x", "y", "z", "w", "v"], "answer": ["v"]}
    runner, corrected = (declare(NLU_TASKS[k]) for k in ("m3exam_tha_seacrowd_qa", "m3exam_tha_seacrowd_qa.corrected"))
    assert runner.choices(row) == ["a", "b", "c", "d"] and corrected.choices(row) == ["a", "b", "c", "d", "e"]
    assert (
        runner.gold(row) == 4
        and runner.gold({**row, "answer": ["q"]}) is None
        and runner.gold({**row, "answer": []}) is None
    )
    prompt = runner.prompt(row)
    assert "Q" in prompt and "e. v" in prompt and "[LABEL_CHOICE]" in prompt
    xnli = declare(NLU_TASKS["xnli.tha_seacrowd_pairs.corrected"])
    pair = {"text_1": "a", "text_2": "b", "label": 2}
    assert xnli.choices(pair) == ["contradiction", "entailment", "neutral"] and xnli.gold(pair) == 2


def test_macro_f1_metric_by_hand_and_from_its_statistics():
    metric = MacroF1()
    assert metric.kind == "corpus" and metric.task_kind == "multiple_choice"
    assert metric(PREDS, GOLDS) == pytest.approx(7 / 18)
    stats = metric.statistics(PREDS, GOLDS)
    assert stats.shape == (4, 3 * 26) and stats.sum() == 6  # 2 matches (tp), then fp + fn for each of 2 misses
    assert metric.score(stats.sum(axis=0)) == pytest.approx(7 / 18)
    assert metric([], []) != metric([], [])  # NaN without items


def test_accuracy_metric_per_item():
    assert [Accuracy().score_item(p, g) for p, g in zip(PREDS, GOLDS)] == [1.0, 0.0, 1.0, 0.0]
    assert Accuracy().interval(PREDS, GOLDS).n == 4


def test_run_nlu_task_runs_the_declaration_through_run_task(tmp_path, monkeypatch):
    seen = []

    def spy(model, task, **kw):
        seen.append((task.name, [it["id"] for it in kw["items"]], kw["layout"].benchmark))
        return real(model, task, **kw)

    real = lb_runner.run_task
    monkeypatch.setattr(lb_runner, "run_task", spy)
    model = FakeModel(score=lambda ctx, text: (-1.0 if text.endswith(": b") else -5.0, False))
    run = lb_runner.run_nlu_task(model, "xcopa_tha_seacrowd_qa", data_dir=DATA, limit=3, outputs=tmp_path)
    assert seen == [
        ("xcopa_tha_seacrowd_qa", [r["key"] for r in run.records], "thai_llm_leaderboard/xcopa_tha_seacrowd_qa")
    ]
    assert [r["pred"] for r in run.records] == [1, 1, 1]
    golds = [r["gold"] for r in run.records]
    assert run.summary["scores"]["accuracy"]["value"] == golds.count(1) / 3
    assert list(run.summary["scores"]) == ["accuracy", "macro_f1_score"]


# ----------------------------------------------------------------------------------------- generation tasks
def test_nlg_declaration_and_metric_objects():
    from thai_eval_utils.thai_llm_leaderboard import nlg_metrics as M
    from thai_eval_utils.thai_llm_leaderboard.generation import nlg_declaration, nlg_task

    task = nlg_task("iapp_squad_seacrowd_qa")
    decl = nlg_declaration(task)
    assert decl.metric_names == ("BLEU", "SacreBLEU", "chrF++", "ROUGE1", "ROUGE2", "ROUGEL", "ROUGELsum")
    assert (decl.max_new_tokens, decl.temperature, decl.seed) == (512, 0.2, 42)
    row = {"context": " บริบท ", "question": " คำถาม ", "answer": ["ตอบ"]}
    assert decl.prompt(row).endswith("คำตอบ: ") and decl.reference(row) == "ตอบ"
    hyps, refs = ["แมว กิน ปลา", "หมา"], ["แมว กิน ปลา ทู", "หมา"]
    assert M.BLEU_OBJECT(hyps, refs) == M.RUNNER_BLEU(hyps, refs) > 0
    assert M.CHRF_OBJECT(hyps, refs) == M.CHRF_METRIC(hyps, refs)
    rouge_l = M.RunnerRouge("rougeL")
    assert rouge_l.name == "ROUGEL" and rouge_l.score_item("หมา", "หมา") == 100.0


def test_run_nlg_task_runs_the_declaration_through_run_task(tmp_path, monkeypatch):
    from thai_eval_utils.thai_llm_leaderboard import generation as G

    seen = []

    def spy(model, task, **kw):
        seen.append((task.name, kw["layout"].benchmark))
        return real(model, task, **kw)

    real = G.run_task
    monkeypatch.setattr(G, "run_task", spy)
    model = FakeModel("fake-nlg", reply=lambda conv: "ตอบ")
    run = G.run_nlg_task(model, "iapp_squad_seacrowd_qa", DATA, limit=2, outputs=tmp_path, progress=False)
    assert seen == [("iapp_squad_seacrowd_qa", "thai_llm_leaderboard/iapp_squad_seacrowd_qa")]
    assert [r["output"] for r in run.records] == ["ตอบ", "ตอบ"] and run.summary["n_ungenerated"] == 0
