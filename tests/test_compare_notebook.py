"""notebooks/compare_runs.ipynb under papermill on a handful of stored runs: the same fake model with two
few-shot seeds (selected with where_a / where_b, as `make demo` does) and a second model's dialect run."""

from __future__ import annotations

import nbformat
import pandas as pd
from conftest import REPO
from fakes import FakeModel

from thai_eval_utils import h6
from thai_eval_utils.notebook_runs import notebook_parameters
from thai_eval_utils.core.tables import read_table_csv

NOTEBOOK = REPO / "notebooks" / "compare_runs.ipynb"


def _score(context: str, continuation: str) -> tuple[float, bool]:
    return -((sum(map(ord, context[-60:])) * 31 + sum(map(ord, continuation))) % 97) / 10.0, False


def test_parameters_cell():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for line in code[0].source.splitlines():
        assert " = " in line and "  # " in line and line.count("=") == 1
    declared = notebook_parameters(NOTEBOOK)
    assert {
        "model_a",
        "model_b",
        "runs_a",
        "runs_b",
        "benchmarks",
        "outputs_dir",
        "n_resamples",
        "seed",
        "level",
    } <= set(declared)
    assert declared["n_resamples"]["default"] == "10000"


def test_notebook_runs_on_two_few_shot_seeds(tmp_path):
    import papermill

    out = tmp_path / "outputs"
    for seed in (42, 7):
        h6.evaluate_tasks(
            FakeModel("fake", score=_score),
            str(REPO / "data" / "thai_h6"),
            ["th_arc", "th_winogrande"],
            h6.LEADERBOARD.replace(fewshot_seed=seed),
            limit=5,
            outputs=out,
            progress=False,
        )
    executed = tmp_path / "compare_runs.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(executed),
        cwd=str(REPO / "notebooks"),
        progress_bar=False,
        parameters={
            "model_a": "fake",
            "model_b": "fake",
            "where_a": {"fewshot_seed": 42},
            "where_b": {"fewshot_seed": 7},
            "benchmarks": ["thai_h6"],
            "outputs_dir": str(out),
            "n_resamples": 199,
            "name": "cmp",
        },
    )
    table = read_table_csv(out / "tables" / "cmp.csv")
    assert table["score"].tolist() == ["thai_h6/th_arc/acc_norm", "thai_h6/th_winogrande/acc", "thai_h6/average"]
    assert table["n_paired"].tolist() == ["5", "5", "10"]
    assert "Holm" in (out / "tables" / "cmp.md").read_text(encoding="utf-8")
    assert (out / "figures" / "cmp.png").stat().st_size > 0 and (out / "figures" / "cmp.svg").exists()
    examples = pd.read_csv(out / "tables" / "cmp_examples.csv")
    assert set(examples["score"]) <= set(table["score"]) and examples["input"].notna().all()
    assert "fewshot_seed" not in table.columns and "A: fake" in executed.read_text(encoding="utf-8")


def test_demo_comparison_reruns_thai_h6_with_another_seed_and_compares(tmp_path, tiny_model_dir):
    from thai_eval_utils.notebook_runs import demo_comparison
    from thai_eval_utils.h6.exports import DEMO_COMPARE_TASKS
    from thai_eval_utils.backend.models import load_model

    out = tmp_path / "outputs"
    h6.evaluate_tasks(
        load_model(str(tiny_model_dir)),
        str(REPO / "data" / "thai_h6"),
        DEMO_COMPARE_TASKS,
        limit=1,
        outputs=out,
        progress=False,
    )  # the demo's first Thai-H6 run (LB seed 42)
    runs = demo_comparison(str(tiny_model_dir), limit=1, outputs=out, notebooks_dir=REPO / "notebooks", verbose=False)
    assert [r.status for r in runs] == ["ok", "ok"], [r.error for r in runs]
    table = next((out / "tables").glob("compare_*_fewshot_seed42_vs_7.csv"))
    scores = read_table_csv(table)["score"].tolist()
    assert scores == [
        "thai_h6/th_arc/acc_norm",
        "thai_h6/th_hellaswag/acc_norm",
        "thai_h6/th_winogrande/acc",
        "thai_h6/average",
    ]
