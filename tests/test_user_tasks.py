"""The documented user tasks (docs/adding_a_task.md), run as the page writes them: its fenced blocks after a
``<!-- file: NAME -->`` comment are written to a folder verbatim, found by the registry, run with ``run_task`` on a tiny
random model and through ``notebooks/task.ipynb`` (what ``thai-eval run`` executes), and the page's ``console``
block is run command by command once ``thai-eval run`` has ``--tasks-dir``."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import FakeModel

from thai_eval_utils import notebook_runs
from thai_eval_utils.cli import main
from thai_eval_utils.core import registry
from thai_eval_utils.core.provenance import slugify
from thai_eval_utils.core.runs import StoredRun, list_runs
from thai_eval_utils.tasks import DeclaredSuite, run_task, task_named

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "adding_a_task.md"
EXAMPLES = REPO / "docs" / "examples" / "user_tasks"
#: A file the page shows: a ``<!-- file: NAME -->`` comment, then a plain fence (a fence with attributes is not a code
#: block to the site's Markdown, which would render its text as paragraphs).
FILE_BLOCK = re.compile(r"^<!-- file: (\S+) -->\n```\w+\n(.*?)^```$", re.S | re.M)
#: A shipped declaration the page quotes: ``<!-- shipped: PATH -->``, then a plain fence holding the file's text.
SHIPPED_BLOCK = re.compile(r"^<!-- shipped: (\S+) -->\n```\w+\n(.*?)^```$", re.S | re.M)
CONSOLE_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)


def doc_files() -> dict[str, str]:
    """File name -> text of every ``file=`` block of the page."""
    return dict(FILE_BLOCK.findall(DOC.read_text(encoding="utf-8")))


def doc_commands() -> list[str]:
    """The ``$ ...`` lines of the page's console block."""
    (block,) = CONSOLE_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    return [line[2:] for line in block.splitlines() if line.startswith("$ ")]


def test_the_shipped_declarations_the_page_quotes_are_the_package_code():
    """The page shows Thai-H6's, ThaiCLI's and the leaderboard's declarations as examples: each quoted block is the
    named file's text verbatim, and the objects it declares are the types a user writes."""
    from thai_eval_utils.h6.declarations import TH_ARC
    from thai_eval_utils.tasks import MultipleChoiceTask
    from thai_eval_utils.thai_llm_leaderboard.declarations import declare
    from thai_eval_utils.thai_llm_leaderboard.tasks import nlu_task
    from thai_eval_utils.thaicli.judge_free import JUDGE_FREE_TASK

    blocks = SHIPPED_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert [path for path, _ in blocks] == [
        "thai_eval_utils/h6/declarations.py",
        "thai_eval_utils/h6/declarations.py",
        "thai_eval_utils/thaicli/judge_free.py",
        "thai_eval_utils/thai_llm_leaderboard/declarations.py",
    ]
    for path, text in blocks:
        assert text in (REPO / path).read_text(encoding="utf-8"), f"the page's block of {path} is not its code"
    for task in (TH_ARC, JUDGE_FREE_TASK, declare(nlu_task("xcopa_tha_seacrowd_qa"))):
        assert type(task) is MultipleChoiceTask
    assert [m.name for m in TH_ARC.metrics] == ["acc_norm", "acc", "acc_bytes"] and TH_ARC.fewshot.n == 25


@pytest.fixture
def my_tasks(tmp_path):
    """The page's files written verbatim to ``<tmp>/my_tasks`` and included in the registry (undone after)."""
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    for name, text in doc_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    saved = list(registry._included)
    registry.include_path(folder)
    yield folder
    registry._included[:] = saved
    registry._suites = None


def test_the_page_shows_both_kinds_whole_and_the_examples_are_its_files():
    files = doc_files()
    assert set(files) == {"thai_facts.py", "thai_facts.jsonl", "thai_capitals.py", "thai_capitals.jsonl"}
    assert len(files["thai_facts.py"].splitlines()) < 60 and "TASK = MultipleChoiceTask(" in files["thai_facts.py"]
    assert "TASK = GenerationTask(" in files["thai_capitals.py"]
    for name, text in files.items():  # the committed examples are the page's blocks, byte for byte
        assert (EXAMPLES / name).read_text(encoding="utf-8") == text, name
    commands = doc_commands()
    assert [shlex.split(c.split("thai-eval", 1)[1])[0] for c in commands] == [
        "run",
        "runs",
        "compare",
        "export",
        "export",
        "report",
    ]


def test_the_registry_finds_the_documented_tasks(my_tasks):
    assert {"thai_facts", "thai_facts/thai_facts", "thai_capitals"} <= set(registry.names())
    suite = registry.get_suite("thai_facts")
    assert isinstance(suite, DeclaredSuite) and suite.source == (my_tasks / "thai_facts.py").resolve()
    assert suite.notebook_parameters(()) == {
        "task": "thai_facts",
        "tasks_dir": str((my_tasks / "thai_facts.py").resolve()),
    }
    assert task_named("thai_facts").data_path == my_tasks / "thai_facts.jsonl"


def test_the_documented_multiple_choice_task_runs_on_the_engine(my_tasks, tmp_path, tiny_local_model):
    task = task_named("thai_facts")
    run = run_task(tiny_local_model, task, limit=2, outputs=tmp_path / "out", progress=False)
    first = run.records[0]
    ctx = "คำถาม: เมืองหลวงของประเทศไทยคือเมืองใด\nคำตอบ:"
    direct = tiny_local_model.loglikelihood([(ctx, " " + c) for c in first["choices"]])
    assert first["lls"] == pytest.approx([ll for ll, _ in direct], abs=1e-4)
    assert run.summary["n"] == 2 and run.summary["n_docs"] == 4 and set(run.scores) == {"acc", "acc_norm"}
    stored = StoredRun.from_dir(run.run_dir)
    assert stored.benchmark == "thai_facts/thai_facts" and registry.suite_of(stored.benchmark) is registry.get_suite(
        "thai_facts"
    )
    heads = registry.get_suite("thai_facts").headlines(stored)
    assert heads[0].items["value"].tolist() == [r["acc"] for r in run.records]


def test_the_documented_generation_task_runs(my_tasks, tmp_path):
    model = FakeModel(complete=lambda prompt: " โตเกียว" if "ญี่ปุ่น" in prompt else "ปารีส")
    run = run_task(model, task_named("thai_capitals"), outputs=tmp_path / "out", progress=False)
    kind, settings = model.calls[0]
    assert model.inputs[0][0] == "คำถาม: เมืองหลวงของประเทศญี่ปุ่นคือเมืองใด\nคำตอบ:"
    assert (
        kind == "generate"
        and settings["max_new_tokens"] == 16
        and settings["stop"] == ["\n"]
        and settings["temperature"] == 0.0
    )
    assert [r["exact_match"] for r in run.records] == [1.0, 1.0, 0.0, 0.0]
    assert run.scores["exact_match"]["value"] == 0.5 and 0 < run.scores["chrf"]["value"] < 100


def test_the_documented_task_runs_through_its_notebook(my_tasks, tmp_path, tiny_model_dir):
    """What ``thai-eval run --tasks-dir`` executes: notebooks/task.ipynb with the suite's parameters."""
    suite = registry.get_suite("thai_facts")
    out = tmp_path / "outputs"
    params = {"model": str(tiny_model_dir), "limit": 2, "outputs_dir": str(out), **suite.notebook_parameters(())}
    run = notebook_runs.execute(
        REPO / "notebooks" / suite.notebooks[0],
        out / "notebooks" / "task.ipynb",
        params,
        cwd=REPO / "notebooks",
        model=str(tiny_model_dir),
    )
    assert run.status == "ok", run.error
    (stored,) = list_runs(out)
    assert stored.benchmark == "thai_facts/thai_facts" and stored.finished and len(stored.records()) == 2
    assert set(stored.summary["scores"]) == {"acc", "acc_norm"}
    assert list((out / "tables").glob("task_thai_facts_*.csv"))


def test_the_documented_commands_run_verbatim(tmp_path, tiny_model_dir):
    """The page's console block, each line through bash in a folder holding ``my_tasks/``: run (embedded and a
    second model), runs, compare, export lm-eval and parquet, report; the outputs hold the task everywhere."""
    (tmp_path / "my_tasks").mkdir()
    for name, text in doc_files().items():
        (tmp_path / "my_tasks" / name).write_text(text, encoding="utf-8")
    bindir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "OTHER_MODEL": str(tiny_model_dir),
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "THAI_EVAL_OUTPUTS": str(tmp_path / "outputs"),
    }
    env.pop("THAI_EVAL_TASKS", None)
    said = {}
    for command in doc_commands():
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        said[shlex.split(command)[1]] = done.stdout
    assert "thai_facts" in said["runs"] and "thai_capitals" in said["runs"]
    compared = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "outputs" / "tables").glob("compare_*.csv"))
    assert "thai_facts/thai_facts/acc" in compared, "the comparison has no row of the declared task"
    runs = [r for r in list_runs(tmp_path / "outputs") if r.family in ("thai_facts", "thai_capitals")]
    assert {(r.family, r.finished) for r in runs} == {("thai_facts", True), ("thai_capitals", True)}
    exported = list((tmp_path / "outputs" / "exports").rglob("*"))
    assert any("thai_facts" in p.name for p in exported if p.suffix == ".jsonl"), "no lm-eval samples of thai_facts"
    assert any(p.suffix == ".parquet" for p in exported)
    report = next((tmp_path / "outputs").glob("report*.html"))
    assert "thai_facts" in report.read_text(encoding="utf-8")
    lm_eval_results = [json.loads(p.read_text()) for p in exported if p.name.startswith("results_")]
    assert any("thai_facts" in r.get("results", {}) for r in lm_eval_results)


def test_two_declared_tasks_keep_their_own_executed_notebooks(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """``thai-eval run`` of both documented tasks for one model: every declared task runs ``task.ipynb``, and each
    keeps its executed copy, ``task_<task>.ipynb``, holding its own task's parameters; shipped suites' copies keep
    their notebooks' names."""
    folder = tmp_path / "my_tasks"
    folder.mkdir()
    for name, text in doc_files().items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv(registry.TASKS_ENV, "")
    monkeypatch.setattr(registry, "_included", [])
    monkeypatch.setattr(registry, "_suites", None)
    out = tmp_path / "outputs"
    code = main(
        [
            "run",
            "--model",
            str(tiny_model_dir),
            "--tasks-dir",
            str(folder),
            "--benchmarks",
            "thai_facts,thai_capitals",
            "--limit",
            "1",
            "--no-paper",
            "--outputs",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr()
    executed = out / "notebooks" / slugify(str(tiny_model_dir))
    assert sorted(p.name for p in executed.glob("*.ipynb")) == ["task_thai_capitals.ipynb", "task_thai_facts.ipynb"]
    for task in ("thai_facts", "thai_capitals"):
        nb = json.loads((executed / f"task_{task}.ipynb").read_text(encoding="utf-8"))
        injected = next(c for c in nb["cells"] if "injected-parameters" in c["metadata"].get("tags", []))
        source = "".join(injected["source"])
        assert f'task = "{task}"' in source and f'tasks_dir = "{(folder / task).resolve()}.py"' in source
    report = json.loads((out / "notebooks" / "batch_report.json").read_text(encoding="utf-8"))
    assert sorted(Path(r["output"]).name for r in report["runs"]) == [
        "task_thai_capitals.ipynb",
        "task_thai_facts.ipynb",
    ]
    assert {(r.family, r.finished) for r in list_runs(out)} == {("thai_facts", True), ("thai_capitals", True)}
    shipped = [s for s in registry.suites().values() if not isinstance(s, DeclaredSuite)]
    assert shipped and all(s.executed_notebook(nb) == nb for s in shipped for nb in s.notebooks)
