"""A user's own suite from ``--tasks-dir``: a task file declaring a tiny :class:`Suite` subclass is
listed by ``thai-eval run --dry-run --benchmarks <it>`` and exported by ``thai-eval export --format parquet`` and
``--format thai-llm-leaderboard`` over a hand-made stored run, with no change to the package; without
``--tasks-dir`` its name is a usage error; the notebooks' kernels would see it through ``$THAI_EVAL_TASKS``."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from thai_eval_utils.cli import main
from thai_eval_utils.core import registry
from thai_eval_utils.core.store import RunStore

TASK_FILE = '''
"""A user's suite: a word echoed back, scored by exact match."""
from pathlib import Path

from thai_eval_utils.core.benchmark import Suite, score_value


class EchoSuite(Suite):
    name = "echo_suite"
    short_title = "Echo"
    tasks = ("echo",)
    data_folder = "echo"

    def leaderboard_results(self, run):
        scores = (run.summary or {}).get("scores") or {}
        return {f"echo_{run.task}": {m: score_value(e) for m, e in scores.items()}}

    def detail_rows(self, run):
        return [{"key": r["key"], "prompt_hash": None, "inputs": {"word": r["word"]}, "outputs": {"said": r["said"]},
                 "metrics": {"exact": r["exact"]}} for r in run.records()]

    def dry_run(self, data, tokenizer, *, tasks=(), limit, max_new_tokens):
        words = [w for w in (Path(data) / "words.txt").read_text(encoding="utf-8").split() if w][:limit]
        return [{"benchmark": self.name, "task": "echo", "documents": len(words), "generations": len(words),
                 "max_new_tokens": max_new_tokens or 7, "fed_tokens": tokenizer.count(words)}]


SUITE = EchoSuite()
'''


@pytest.fixture
def user_suite(tmp_path, monkeypatch):
    """A task folder with the file, a data root with the suite's folder; the registry and environment restored."""
    tasks = tmp_path / "my_tasks"
    tasks.mkdir()
    (tasks / "echo.py").write_text(TASK_FILE, encoding="utf-8")
    data = tmp_path / "data" / "echo"
    data.mkdir(parents=True)
    (data / "words.txt").write_text("สวัสดี ครับ ไทย\n", encoding="utf-8")
    monkeypatch.setenv(registry.TASKS_ENV, "")
    monkeypatch.setattr(registry, "_included", [])
    monkeypatch.setattr(registry, "_suites", None)
    return tasks, tmp_path / "data"


def test_a_suite_from_tasks_dir_runs_dry_and_exports(user_suite, tmp_path, capsys):
    tasks, data = user_suite
    with pytest.raises(SystemExit) as exit_:  # not registered without --tasks-dir: a usage error
        main(["run", "--model", "openai:none", "--benchmarks", "echo_suite", "--dry-run"])
    assert exit_.value.code == 2 and "unknown benchmark 'echo_suite'" in capsys.readouterr().err

    code = main(
        [
            "run",
            "--model",
            "openai:none",
            "--tasks-dir",
            str(tasks),
            "--benchmarks",
            "echo_suite/echo",
            "--dry-run",
            "--data",
            str(data),
            "--limit",
            "2",
            "--outputs",
            str(tmp_path / "out"),
        ]
    )
    text = capsys.readouterr().out
    assert code == 0 and not (tmp_path / "out").exists()
    rows = [line.split() for line in text.splitlines() if line.startswith(("echo_suite ", "total "))]
    assert rows == [["echo_suite", "echo", "2", "2", "7"], ["total", "2", "2"]]  # no tokenizer: no token counts
    assert str(tasks.resolve()) in os.environ[registry.TASKS_ENV].split(os.pathsep)  # what the kernels inherit
    assert "echo_suite" in registry.names() and "echo_suite/echo" in registry.names()

    out = tmp_path / "outputs"
    store = RunStore.open("tiny", "echo_suite/echo", {"echo": 1}, outputs=out)
    store.append("w0", {"word": "สวัสดี", "said": "สวัสดี", "exact": 1.0})
    store.append("w1", {"word": "ครับ", "said": "คับ", "exact": 0.0})
    store.write_summary({"n": 2, "scores": {"exact": {"value": 0.5, "n": 2, "stderr": 0.5}}})
    store.close()

    assert (
        main(
            [
                "export",
                "--format",
                "parquet",
                "--tasks-dir",
                str(tasks),
                "--outputs",
                str(out),
                "--to",
                str(tmp_path / "pq"),
            ]
        )
        == 0
    )
    frame = pd.read_parquet(tmp_path / "pq" / "details_echo_suite.parquet")
    assert frame["benchmark"].tolist() == ["echo_suite/echo"] * 2 and frame["task"].tolist() == ["echo", "echo"]
    assert [json.loads(x) for x in frame["inputs"]] == [{"word": "สวัสดี"}, {"word": "ครับ"}]
    assert [json.loads(x) for x in frame["outputs"]] == [{"said": "สวัสดี"}, {"said": "คับ"}]
    assert [json.loads(x) for x in frame["metrics"]] == [{"exact": 1.0}, {"exact": 0.0}]

    assert (
        main(
            [
                "export",
                "--format",
                "thai-llm-leaderboard",
                "--tasks-dir",
                str(tasks),
                "--outputs",
                str(out),
                "--to",
                str(tmp_path / "lb"),
            ]
        )
        == 0
    )
    doc = json.loads((tmp_path / "lb" / "echo_suite" / "tiny" / "results.json").read_text(encoding="utf-8"))
    assert doc == {"config": {"model_name": "api/tiny"}, "results": {"echo_echo": {"exact": 0.5}}}
    sig = json.loads((tmp_path / "lb" / "echo_suite" / "tiny" / "thai_eval.json").read_text(encoding="utf-8"))
    assert sig["tasks"]["echo_echo"]["benchmark"] == "echo_suite/echo"

    # lm-eval: the suite does not export to it, so there is nothing to write (a message, exit 1)
    assert main(["export", "--format", "lm-eval", "--tasks-dir", str(tasks), "--outputs", str(out)]) == 1
    assert "no finished Thai-H6 run to export" in capsys.readouterr().err
