"""Every notebook is committed without outputs and has one tagged, papermill-readable parameters cell.

(Each notebook's papermill smoke run lives beside its benchmark's tests: test_h6_notebook.py,
test_thaicli_notebook.py, test_dialect_notebooks.py, test_paper.py.)
"""

from __future__ import annotations

import ast

import nbformat
import papermill
import pytest
from conftest import REPO

from thai_eval_utils.run_options import REPLACED

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
#: The notebooks that load a model: the three benchmarks, the declared-task runner (tasks/), SEA-HELM and the
#: Thai LLM Leaderboard's tasks.
BENCHMARK_NOTEBOOKS = {"thai_h6", "thaicli", "dialect_benchmark", "task", "seahelm", "thai_llm_leaderboard"}


def test_all_expected_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert names >= BENCHMARK_NOTEBOOKS | {"dialect_human_eval", "judge_vs_human", "paper_tables"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_clean_with_a_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit notebooks without outputs"
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0] is code[0], "the first code cell, and only it, is tagged 'parameters'"
    tree = ast.parse(tagged[0].source)
    assert tree.body and all(isinstance(s, ast.Assign) for s in tree.body), "only `name = value  # help` lines"
    declared = {t.id for s in tree.body for t in s.targets}
    inspected = set(papermill.inspect_notebook(str(path)))
    assert declared == inspected, "papermill must read every parameter (no '=' inside help comments)"
    assert "outputs_dir" in declared
    if path.stem in BENCHMARK_NOTEBOOKS:
        assert {"model", "limit", "data_source"} <= declared
    secretish = {n for n in declared if any(w in n.lower() for w in ("api_key", "secret", "password"))}
    assert not secretish, "API keys come from the environment, never from notebook parameters"


MODEL_NOTEBOOKS = [p for p in NOTEBOOKS if "load_model(" in p.read_text(encoding="utf-8")]


def test_the_benchmark_notebooks_load_models():
    assert {p.stem for p in MODEL_NOTEBOOKS} == BENCHMARK_NOTEBOOKS


@pytest.mark.parametrize("path", MODEL_NOTEBOOKS, ids=lambda p: p.stem)
def test_model_notebooks_take_the_shared_options(path):
    """GPU runs are configured from papermill: dtype and device_map are keys of the one ``options`` parameter
    (default {}: load_model's own defaults), read by run_options rather than code copied per notebook; none of the
    loose parameters it replaced is declared."""
    params = papermill.inspect_notebook(str(path))
    assert params["options"]["default"] == "{}" and "docs/notebooks.md" in params["options"]["help"]
    assert not set(REPLACED) & set(params)
    nb = nbformat.read(path, as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "run_options(options, namespace=globals()" in source and "load_options = opts.load_options(model" in source
    assert [line.strip() for line in source.splitlines() if "load_model(" in line] == [
        "lm = load_model(model, **load_options)"
    ]
    if path.stem in ("thai_h6", "thaicli"):  # log-likelihoods depend on BOS; dialect generation uses the chat template
        assert params["add_bos_token"]["default"] == "False" and "add_bos_token=add_bos_token" in source
