"""A judged metric (``thai_eval_utils.tasks.judged.JudgedMetric``) in a declared generation task, end to end against
the fake OpenAI server: a reply that does not parse is asked again, a request that keeps failing (a malformed 200
reply) leaves its item unjudged, an item none of whose replies parse is final without a value, and only judged
items are averaged (the rest counted); a rerun asks only for the unjudged; a task file that declares the judge runs
through ``thai-eval run --tasks-dir``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai_server import MALFORMED_REPLIES, FakeOpenAIServer, PerAnswerScript, Reply
from fakes import FakeModel

from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.cli import main
from thai_eval_utils.core import registry
from thai_eval_utils.core.runs import StoredRun, list_runs
from thai_eval_utils.judging import JudgeRubric, ReplyParser
from thai_eval_utils.tasks import GenerationTask, run_task
from thai_eval_utils.tasks.judged import JudgedMetric
from thai_eval_utils.tasks.runner import RunLayout

FAKE_KEY = "sk-" + "test-judged-0123456789abcdef"  # built at run time: a fake key
RUBRIC = JudgeRubric.declare(
    "answer_quality",
    "1",
    user="คำถาม: ${question}\nคำตอบอ้างอิง: ${reference}\n<model_answer>${prediction}</model_answer>\nคะแนน 1-10: <score>N</score>",
    fields=("question", "reference", "prediction"),
    parser=ReplyParser((re.compile(r"<score>\s*(\d+)\s*</score>"),), (1, 10), 0.0, "unparsed"),
)
ROWS = [{"id": str(i), "q": f"ข้อ {i}", "a": f"ref{i}"} for i in range(1, 5)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _judge(srv: FakeOpenAIServer) -> ApiModel:
    return ApiModel("fake-judge", base_url=srv.base_url, api_key=FAKE_KEY, concurrency=4, timeout=5.0, max_retries=1)


def _task(tmp_path: Path, judge) -> GenerationTask:
    write_jsonl(tmp_path / "j.jsonl", ROWS)
    metric = JudgedMetric(RUBRIC, judge, max_calls=2, scale=10.0, name="quality")
    return GenerationTask(name="j", data="j.jsonl", prompt="{q}", reference="a", metrics=(metric, "exact_match")).bind(
        tmp_path
    )


def test_judged_metric_retries_leaves_unjudged_and_averages_only_the_judged(tmp_path):
    model = FakeModel(complete=lambda p: "A" + p[-1])  # "ข้อ 1" -> "A1"
    script = PerAnswerScript(
        {
            "A1": [Reply("ดีมาก"), Reply("<score>8</score>")],  # no score: asked again, then 8
            "A2": [MALFORMED_REPLIES["not_json"]] * 4,  # a malformed 200 reply, again after the retry: unjudged
            "A4": [Reply("ไม่รู้"), Reply("<score>11</score>")],  # never a valid score in 2 calls: no value
        },
        default=Reply("<score>5</score>"),
    )
    with FakeOpenAIServer(script) as srv:
        task = _task(tmp_path, "task-file-judge")
        run = run_task(model, task, outputs=tmp_path / "out", progress=False, judge=_judge(srv))
    by_id = {r["id"]: r for r in run.records}
    assert [by_id[i]["quality"] for i in "1234"] == [8.0, None, 5.0, None]
    assert [by_id[i]["quality_judgement"]["status"] for i in "1234"] == ["scored", "unjudged", "scored", "unparsed"]
    assert by_id["1"]["quality_judgement"]["attempts"] == 2 and by_id["4"]["quality_judgement"]["attempts"] == 2
    assert by_id["2"]["quality_judgement"]["error"] == (
        "InternalServerError (HTTP 502): Error code: 502 - malformed reply: body is not JSON "
        "(JSONDecodeError: Expecting value: line 1 column 1 (char 0))"
    )
    quality = run.scores["quality"]
    assert quality["value"] == 6.5 and quality["n"] == 2 and quality["n_unjudged"] == 2
    assert "|quality|judge:fake-judge|rubric:answer_quality@1@" in quality["signature"]
    assert "|max_calls:2|temp:0.0|seed:0|max_tokens:512" in quality["signature"]
    judged = run.summary["judged"]["quality"]
    assert (judged["n_judged"], judged["n_unjudged"], judged["n_unparsed"]) == (2, 1, 1)
    assert judged["judge_calls_this_run"] == 5  # A1 2, A3 1, A4 2: the failed requests are no answered calls
    heads = task.as_suite(tmp_path / "j.py").headlines(StoredRun.from_dir(run.run_dir))
    assert heads[0].items["key"].tolist() == ["1", "3"] and heads[0].items["value"].tolist() == [8.0, 5.0]
    assert heads[0].scale == 10.0 and heads[0].kind == "mean"
    # the judge is no part of the declaration: the same run folder whoever judges
    assert run.config_id == run_task(model, task, outputs=tmp_path / "o2", progress=False, judge=_judge(srv)).config_id

    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>9</score>"))) as srv2:
        again = run_task(FakeModel(), task, outputs=tmp_path / "out", progress=False, judge=_judge(srv2))
        assert srv2.n_chat_calls == 1  # only the unjudged item is asked again; no generation either
    assert [r["quality"] for r in again.records] == [8.0, 9.0, 5.0, None]
    assert again.scores["quality"]["value"] == pytest.approx(22 / 3) and again.scores["quality"]["n_unjudged"] == 1


def test_up_to_n_calls_else_a_score_counts_the_unparsed_item_in_the_mean(tmp_path):
    """``unparsed_score=0.0`` (ThaiCLI's "up to N calls, else 0"): an item none of whose ``max_calls`` replies parsed
    is worth 0 and averaged; a failed request still leaves its item unjudged, counted and never averaged."""
    write_jsonl(tmp_path / "j.jsonl", ROWS)
    metric = JudgedMetric(RUBRIC, "task-file-judge", max_calls=2, unparsed_score=0.0, name="quality")
    task = GenerationTask(name="j", data="j.jsonl", prompt="{q}", reference="a", metrics=metric).bind(tmp_path)
    script = PerAnswerScript(
        {
            "A2": [MALFORMED_REPLIES["not_json"]] * 4,  # unjudged
            "A4": [Reply("ไม่รู้"), Reply("<score>11</score>")],  # 2 calls, no valid score: 0
        },
        default=Reply("<score>6</score>"),
    )
    with FakeOpenAIServer(script) as srv:
        run = run_task(
            FakeModel(complete=lambda p: "A" + p[-1]), task, outputs=tmp_path / "o", progress=False, judge=_judge(srv)
        )
    assert [r["quality"] for r in run.records] == [6.0, None, 6.0, 0.0]
    assert run.records[3]["quality_judgement"]["status"] == "unparsed"
    quality = run.scores["quality"]
    assert (quality["value"], quality["n"], quality["n_unjudged"]) == (4.0, 3, 1)  # (6 + 6 + 0) / 3
    assert "|max_calls:2|temp:0.0|seed:0|max_tokens:512|unparsed:0.0|" in quality["signature"]
    assert metric.parameters()["unparsed_score"] == 0.0
    assert "unparsed_score" not in JudgedMetric(RUBRIC, "j").parameters()  # the default declares nothing new


def test_another_judge_keeps_the_metrics_settings_and_kind(tmp_path):
    class Named(JudgedMetric):
        """A subclass (ThaiCLI's judge is one): ``with_judge`` keeps it."""

    metric = Named(RUBRIC, "a", max_calls=3, unparsed_score=0.0, scale=10.0, name="q")
    other = metric.with_judge("b", "http://judge.invalid/v1")
    assert type(other) is Named and other.label == "b" and other.base_url == "http://judge.invalid/v1"
    assert (other.params.max_calls, other.unparsed_score, other.scale, other.name) == (3, 0.0, 10.0, "q")
    assert metric.label == "a" and metric.base_url is None  # the original unchanged


def test_a_layout_that_judges_in_a_run_of_its_own_stores_the_replies_unjudged(tmp_path):
    """``RunLayout(judged=False)`` (ThaiCLI's answers, judged by a run of their own): the generations are stored, the
    declared judge is never called, and a summary that scores nothing is a run without scores."""
    never = FakeModel("never-called-judge")  # any call raises
    metric = JudgedMetric(RUBRIC, never, name="quality")
    task = GenerationTask(name="j", data="", prompt="{q}", reference="a", metrics=metric)
    items = [
        {"id": r["id"], "row": i, "question": r["q"], "context": r["q"], "reference": r["a"]}
        for i, r in enumerate(ROWS)
    ]
    layout = RunLayout(
        "j/answers",
        {"layout": 1},
        lambda it, text: {"id": it["id"], "output": text},
        {"output": str},
        lambda records, support, run: {"n": len(records)},
        judged=False,
    )
    model = FakeModel(complete=lambda p: "A" + p[-1])
    run = run_task(model, task, items=items, layout=layout, outputs=tmp_path, progress=False)
    assert run.records == [{"key": str(i), "id": str(i), "output": f"A{i}"} for i in range(1, 5)]
    assert never.calls == [] and run.summary == {"n": 4} and run.scores == {}


JUDGED_TASK_FILE = '''
"""A generation task judged by an LLM judge, declared in one file."""

import re

from thai_eval_utils.judging import JudgeRubric, ReplyParser
from thai_eval_utils.tasks import GenerationTask
from thai_eval_utils.tasks.judged import JudgedMetric

RUBRIC = JudgeRubric.declare(
    "answer_quality",
    "1",
    user="${question}\\n<model_answer>${prediction}</model_answer>\\n${reference}",
    fields=("question", "prediction", "reference"),
    parser=ReplyParser((re.compile(r"<score>\\s*(\\d+)\\s*</score>"),), (1, 10), 0.0, "unparsed"),
)

TASK = GenerationTask(
    name="judged_answers",
    data="judged_answers.jsonl",
    prompt="{q}",
    reference="a",
    metrics=JudgedMetric(RUBRIC, "fake-judge", base_url=BASE_URL, scale=10.0, name="quality"),
    max_new_tokens=4,
)
'''


def test_a_judged_task_file_runs_through_the_command(tmp_path, tiny_model_dir, monkeypatch, capsys):
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    write_jsonl(folder / "judged_answers.jsonl", ROWS[:2])
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv(registry.TASKS_ENV, "")
    monkeypatch.setattr(registry, "_included", [])
    monkeypatch.setattr(registry, "_suites", None)
    out = tmp_path / "outputs"
    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>7</score>"))) as srv:
        (folder / "judged_answers.py").write_text(f"BASE_URL = {srv.base_url!r}\n" + JUDGED_TASK_FILE, encoding="utf-8")
        args = ["run", "--model", str(tiny_model_dir), "--tasks-dir", str(folder), "--benchmarks", "judged_answers"]
        code = main([*args, "--limit", "2", "--no-paper", "--outputs", str(out)])
        assert code == 0, capsys.readouterr()
        assert srv.n_chat_calls == 2
    (stored,) = [r for r in list_runs(out) if r.family == "judged_answers"]
    assert stored.finished and stored.summary["scores"]["quality"]["value"] == 7.0
    assert stored.summary["scores"]["quality"]["n"] == 2 and stored.summary["judged"]["quality"]["n_judged"] == 2


class _Chars:
    tokenizer, source = None, "none"

    def count(self, texts):
        return sum(len(t) for t in texts)


def test_the_dry_run_counts_one_judge_call_per_item_and_judged_metric(tmp_path):
    suite = _task(tmp_path, "any-judge").as_suite(tmp_path / "j.py")
    (row,) = suite.dry_run(tmp_path, _Chars(), limit=3, max_new_tokens=None)
    assert (row["generations"], row["judge_calls"]) == (3, 3)


def test_the_commands_judge_replaces_the_one_the_task_file_names(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """``thai-eval run --judge ID --judge-base-url URL`` reaches a declared task (``task.ipynb``'s ``judge_model`` and
    ``judge_base_url``): the file's judge at an unreachable address is never called, the command's judges both items,
    and the score's signature names the command's judge."""
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    write_jsonl(folder / "judged_answers.jsonl", ROWS[:2])
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv(registry.TASKS_ENV, "")
    monkeypatch.setattr(registry, "_included", [])
    monkeypatch.setattr(registry, "_suites", None)
    out = tmp_path / "outputs"
    unreachable = "http://127.0.0.1:9/v1"  # the discard port: nothing answers there
    (folder / "judged_answers.py").write_text(f"BASE_URL = {unreachable!r}\n" + JUDGED_TASK_FILE, encoding="utf-8")
    with FakeOpenAIServer(PerAnswerScript(default=Reply("<score>4</score>"))) as srv:
        args = ["run", "--model", str(tiny_model_dir), "--tasks-dir", str(folder), "--benchmarks", "judged_answers"]
        judge = ["--judge", "the-commands-judge", "--judge-base-url", srv.base_url]
        code = main([*args, *judge, "--limit", "2", "--no-paper", "--outputs", str(out)])
        assert code == 0, capsys.readouterr()
        assert srv.n_chat_calls == 2
    (stored,) = [r for r in list_runs(out) if r.family == "judged_answers"]
    score = stored.summary["scores"]["quality"]
    assert (score["value"], score["n"]) == (4.0, 2) and "the-commands-judge" in score["signature"]
    assert "fake-judge" not in score["signature"]


def test_a_local_judge_judges_in_process(tmp_path, tiny_llama):
    """``local:<spec>`` (``thai-eval run --judge local:...``, task.ipynb's judge_model) loads that model and judges
    with it in-process: no server, no key. A model without a chat template cannot judge: its items stay unjudged,
    the reason recorded, and the run goes on. The tiny random model with a template never writes a score: every item
    is final with no value (asked max_calls times), counted and never averaged."""
    from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE

    model_, tok = tiny_llama
    original = tok.chat_template  # the fixture is shared: put its template back
    try:
        for name, template in (("plain", None), ("chat", GEMMA3_CHAT_TEMPLATE)):
            tok.chat_template = template
            model_.save_pretrained(tmp_path / name)
            tok.save_pretrained(tmp_path / name)
    finally:
        tok.chat_template = original
    task = _task(tmp_path, "unused-judge")
    model = FakeModel(complete=lambda p: "A" + p[-1])
    plain = f"local:{tmp_path / 'plain'}"
    run = run_task(model, task, outputs=tmp_path / "out", progress=False, judge=plain, limit=2)
    assert run.scores["quality"]["n"] == 0 and run.scores["quality"]["n_unjudged"] == 2
    assert [r["quality_judgement"]["status"] for r in run.records] == ["unjudged", "unjudged"]
    assert "has no chat template" in run.records[0]["quality_judgement"]["error"]

    spec = f"local:{tmp_path / 'chat'}"
    judged = [m for m in task.scorers if isinstance(m, JudgedMetric)][0].with_judge(spec)
    assert type(judged.model()).__name__ == "LocalModel" and judged.label == spec
    run = run_task(model, task, outputs=tmp_path / "out", progress=False, judge=spec, limit=2)
    quality = run.scores["quality"]
    assert quality["n"] == 0 and quality["n_unjudged"] == 2 and f"judge:{spec}" in quality["signature"]
    assert [r["quality"] for r in run.records] == [None, None]
    assert [r["quality_judgement"]["status"] for r in run.records] == ["unparsed", "unparsed"]
