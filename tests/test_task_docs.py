"""The task examples of docs/adding_a_task.md beyond the two whole files (code blocks after an ``<!-- example: NAME -->`` line): metric
objects, a metric of one's own, a judged task and a task with functions, sampler and filter, each written to a
folder as the page shows it, found by the registry and run with exact values."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, PerAnswerScript, Reply
from fakes import FakeModel

from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.core import registry
from thai_eval_utils.tasks import run_task, task_named

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "adding_a_task.md"
EXAMPLE_BLOCK = re.compile(r"^<!-- example: (\S+) -->\n```python\n(.*?)^```$", re.S | re.M)
SUMS = [{"id": str(i), "a": i, "b": 10 * i} for i in range(1, 5)]


@pytest.fixture
def doc_tasks(tmp_path):
    """The page's example blocks and their data in ``<tmp>/doc_tasks``, included in the registry (undone after)."""
    folder = tmp_path / "doc_tasks"
    folder.mkdir()
    blocks = dict(EXAMPLE_BLOCK.findall(DOC.read_text(encoding="utf-8")))
    assert set(blocks) == {"loose_capitals.py", "short_answers.py", "judged_capitals.py", "sums.py"}
    for name, text in blocks.items():
        (folder / name).write_text(text, encoding="utf-8")
    shutil.copy(REPO / "docs" / "examples" / "user_tasks" / "thai_capitals.jsonl", folder)
    (folder / "sums.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SUMS), encoding="utf-8")
    saved = list(registry._included)
    registry.include_path(folder)
    yield folder
    registry._included[:] = saved
    registry._suites = None


def capitals(prompt: str) -> str:
    return "คำตอบ: โตเกียว" if "ญี่ปุ่น" in prompt else "ปารีสฝรั่งเศส"


def test_metric_objects_and_a_metric_of_ones_own(doc_tasks, tmp_path):
    loose = run_task(FakeModel(complete=capitals), task_named("loose_capitals"), outputs=tmp_path / "o", progress=False)
    # "คำตอบ: " dropped by the regex: c1 matches; c2 "ปารีสฝรั่งเศส" != "ปารีส"
    assert [r["exact_match"] for r in loose.records] == [1.0, 0.0, 0.0, 0.0]
    assert set(loose.scores) == {"exact_match", "token_f1", "chrf++"}
    short_model = FakeModel(complete=lambda p: "โตเกียว" if "ญี่ปุ่น" in p else "ปา")
    short = run_task(short_model, task_named("short_answers"), outputs=tmp_path / "o", progress=False)
    # "ปา" is 2 characters: against ปารีส (5), เวียงจันทน์ (11), ลอนดอน (6); โตเกียว is the reference itself
    assert [r["length_ratio"] for r in short.records] == [1.0, 2 / 5, 2 / 11, 2 / 6]
    assert short.scores["length_ratio"]["value"] == pytest.approx((1 + 2 / 5 + 2 / 11 + 2 / 6) / 4)
    assert json.loads((short.run_dir / "run_card.json").read_text())["config"]["task"]["metrics"][0] == {
        "metric": "short_answers.py:LengthRatio",
        "name": "length_ratio",
        "cap": 1.0,
    }


def test_the_documented_judged_task(doc_tasks, tmp_path):
    script = PerAnswerScript({"โตเกียว": [Reply("<score>10</score>")]}, default=Reply("<score>2</score>"))
    with FakeOpenAIServer(script) as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key="sk-test-docs", max_retries=1, timeout=5.0)
        model = FakeModel(complete=lambda p: "โตเกียว" if "ญี่ปุ่น" in p else "ไม่ทราบ")
        run = run_task(model, task_named("judged_capitals"), outputs=tmp_path / "o", progress=False, judge=judge)
    assert [r["judge"] for r in run.records] == [10.0, 2.0, 2.0, 2.0] and run.scores["judge"]["value"] == 4.0
    assert "|judge|judge:fake-judge|rubric:capital_answer@1@" in run.scores["judge"]["signature"]


def test_the_documented_task_with_functions_sampler_and_filter(doc_tasks, tmp_path):
    task = task_named("sums")
    model = FakeModel(
        complete=lambda p: "คิด...\n#### " + str(sum(map(int, re.findall(r"\d+", p.rsplit("โจทย์", 1)[1]))))
    )
    run = run_task(model, task, outputs=tmp_path / "o", progress=False)
    assert [r["reference"] for r in run.records] == ["11", "22", "33", "44"]
    assert [r["exact_match"] for r in run.records] == [1.0, 1.0, 1.0, 1.0]
    first = model.inputs[0][0]
    assert first.endswith("โจทย์: 1 + 10 เท่ากับเท่าไร ตอบท้ายด้วย #### ตามด้วยตัวเลข") and first.count("โจทย์") == 3
    assert "โจทย์: 1 + 10 เท่ากับเท่าไร ตอบท้ายด้วย #### ตามด้วยตัวเลข 11" not in first  # never its own example
