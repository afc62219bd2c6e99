"""notebooks/thai_h6.ipynb: committed without outputs, papermill-readable parameters, and a smoke run on the
shipped samples with the tiny random model (limit 1, GSM8K 4 new tokens)."""

from __future__ import annotations

import json

import nbformat
import pandas as pd
import pytest
from conftest import REPO

NOTEBOOK = REPO / "notebooks" / "thai_h6.ipynb"
PARAMETERS = [
    "model",
    "options",
    "data_source",
    "tasks",
    "limit",
    "gsm8k_limit",
    "protocol_preset",
    "num_fewshot",
    "chunk_size",
    "sampler",
    "fewshot_seed",
    "add_bos_token",
    "gsm8k_stops",
    "max_new_tokens",
    "mc2",
    "mmlu_average",
    "variant",
    "outputs_dir",
    "paper_table4",
]


def test_committed_without_outputs_and_parameters_parse():
    from papermill.translators import PythonTranslator

    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata.get("tags") == ["parameters"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    for line in code[0].source.splitlines():  # only `name = value  # help` lines, one "=" each
        assert " = " in line and "  # " in line and line.count("=") == 1
    params = PythonTranslator.inspect(code[0])
    assert [p.name for p in params] == PARAMETERS
    assert all(p.help for p in params)
    defaults = {p.name: p.default for p in params}
    assert (
        defaults["protocol_preset"] == '"lb"' and defaults["limit"] == "None" and defaults["add_bos_token"] == "False"
    )
    overrides = ["num_fewshot", "sampler", "fewshot_seed", "gsm8k_stops", "max_new_tokens", "mc2", "mmlu_average"]
    assert all(defaults[name] == "None" for name in overrides)  # None: the preset's value


def test_notebook_smoke_run(tmp_path, tiny_model_dir):
    import papermill

    out = tmp_path / "outputs"
    executed = tmp_path / "thai_h6.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(executed),
        cwd=str(REPO / "notebooks"),
        progress_bar=False,
        parameters={
            "model": str(tiny_model_dir),
            "data_source": str(REPO / "data" / "thai_h6"),
            "limit": 1,
            "max_new_tokens": 4,
            "outputs_dir": str(out),
            "options": {"model": {"dtype": "bfloat16", "device_map": "cpu"}},
        },
    )
    tables = out / "tables"
    table4 = next(tables.glob("thai_h6_table4_*.csv"))
    row = pd.read_csv(table4)
    tasks = ["th_arc", "th_hellaswag", "th_mmlu", "th_truthfulqa", "th_winogrande", "th_gsm8k"]
    assert row[tasks].notna().all(axis=None)
    # a limit-1 run is partial, says its limit and shots, and its file name says so too
    assert row.loc[0, "partial"] and str(row.loc[0, "limit"]) == "1" and row.loc[0, "shots"] == "25/10/5/0/5/5"
    assert (
        table4.name.startswith("thai_h6_table4_") and "_limit1-cfg" in table4.name and row.loc[0, "run"] in table4.name
    )
    assert row.loc[0, "thai_h6_avg"] == pytest.approx(row.loc[0, tasks].mean(), abs=0.006)  # saved rounded to 2
    items = next((tables / "thai_h6_items").iterdir())
    assert len(pd.read_csv(items / "th_arc.csv")) == 1
    mmlu = pd.read_csv(items / "th_mmlu.csv")
    assert len(mmlu) == mmlu["subject"].nunique() == 3  # limit applies per subject
    assert {"generation", "strict", "flexible"} <= set(pd.read_csv(items / "th_gsm8k.csv").columns)
    assert len(pd.read_csv(next(tables.glob("thai_h6_mmlu_subjects_*.csv")))) == 3
    assert len(list((out / "figures").glob("thai_h6_*.png"))) == 1
    cards = [json.loads(p.read_text(encoding="utf-8")) for p in (out / "runs").rglob("run_card.json")]
    gsm = next(c for c in cards if c["benchmark"] == "thai_h6/th_gsm8k")
    assert gsm["config"]["gsm8k_stops"] == [":", "Question:", "Question"] and gsm["config"]["max_new_tokens"] == 4
    arc = next(c for c in cards if c["benchmark"] == "thai_h6/th_arc")
    assert (
        arc["config"]["num_fewshot"] == 25
        and arc["config"]["sampler"] == "lb"
        and arc["config"]["add_bos_token"] is False
    )
    # the load options reach the model and every run card records what the weights ended up as
    assert {(c["model"]["dtype"], c["model"]["device"], c["model"]["add_bos_token"]) for c in cards} == {
        ("bfloat16", "cpu", False)
    }
