"""notebooks/thaicli.ipynb: committed without outputs, a `parameters` cell of `name = value  # help` lines,
no secret in any default; and an end-to-end papermill run without a judge on the shipped samples."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "thaicli.ipynb"
EXPECTED = {
    "model",
    "options",
    "add_bos_token",
    "data_source",
    "limit",
    "judge_model",
    "judge_base_url",
    "concurrency",
    "max_new_tokens",
    "judge_max_tokens",
    "judge_max_calls",
    "judge_repeats",
    "seed",
    "outputs_dir",
}


def _cells():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def test_committed_without_outputs():
    for cell in _cells():
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


def test_parameters_cell():
    code_cells = [c for c in _cells() if c["cell_type"] == "code"]
    assert "parameters" in code_cells[0]["metadata"].get("tags", [])
    lines = "".join(code_cells[0]["source"]).splitlines()
    names = {}
    for line in lines:
        stmt, _, help_text = line.partition("  # ")
        node = ast.parse(stmt).body[0]
        assert isinstance(node, ast.Assign) and help_text.strip(), line
        names[node.targets[0].id] = ast.literal_eval(node.value)
    assert set(names) == EXPECTED
    assert names["judge_model"] == "embedded-serve" and names["judge_max_calls"] == 16 and names["limit"] is None
    assert names["judge_repeats"] == 1  # the demo judges once, so `make demo` takes no longer
    assert names["options"] == {}  # model loading, thinking and batch mode (off): their defaults
    assert not any("key" in n.lower() for n in names)  # the API key comes from the environment only


def test_runs_under_papermill_without_a_judge(tmp_path):
    out = tmp_path / "thaicli.ipynb"
    cmd = [
        sys.executable,
        "-m",
        "papermill",
        "--cwd",
        str(REPO / "notebooks"),
        str(NOTEBOOK),
        str(out),
        "-p",
        "limit",
        "1",
        "-p",
        "max_new_tokens",
        "8",
        "-p",
        "judge_model",
        "None",
        "-p",
        "outputs_dir",
        str(tmp_path / "outputs"),
        "-y",
        'options: {"model": {"dtype": "float32", "device_map": "cpu"}}',
        "-p",
        "add_bos_token",
        "True",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text(encoding="utf-8")
    assert "No judge configured" in text
    assert "thaicli_loglik/win_raw" in text  # the judge-free headline was printed
    assert list((tmp_path / "outputs" / "figures").glob("thaicli_loglik_*.png"))
    cards = {
        c["benchmark"]: c
        for c in (
            json.loads(p.read_text(encoding="utf-8")) for p in (tmp_path / "outputs" / "runs").rglob("run_card.json")
        )
    }
    assert set(cards) == {"thaicli/answers", "thaicli/loglik"}
    for card in cards.values():  # the load options from papermill reach the model and its run cards
        assert (card["model"]["dtype"], card["model"]["device"], card["model"]["add_bos_token"]) == (
            "float32",
            "cpu",
            True,
        )
