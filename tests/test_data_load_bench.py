"""benchmarks/data_load.py: the full-size synthetic copies it builds hold each manifest's rows in the layout the
loaders and ``thai-eval data verify`` read, and its report's verdict follows the goal's thresholds."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import data_load as dl

from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.h6.data import load_h6_task
from thai_eval_utils.sources import catalogue
from thai_eval_utils.sources.rows import count_rows
from thai_eval_utils.thaicli.data import load_thaicli


def test_grow_repeats_rows_in_order_and_makes_ids_unique():
    rows = [{"id": "a", "x": 1}, {"id": 5, "question_id": 9, "qID": True}]
    assert dl.grow(rows, 3) == [{"id": "a-0", "x": 1}, {"id": 1, "question_id": 2, "qID": True}, {"id": "a-2", "x": 1}]
    assert rows[0] == {"id": "a", "x": 1}  # the samples are not changed


def test_built_copies_hold_the_manifest_rows_and_pass_verify(tmp_path):
    for suite in dl.SUITES:
        dl.build(suite, tmp_path, big=False)
    mmlu = tmp_path / "thai_h6" / "h6" / "th_mmlu"
    assert len([p for p in mmlu.iterdir() if p.is_dir()]) == 57
    assert sum(count_rows(p) for p in mmlu.glob("*/*_test.parquet")) == 14585
    assert len(load_h6_task(tmp_path / "thai_h6", "th_mmlu").docs) == 14585
    assert len(load_h6_task(tmp_path / "thai_h6", "th_hellaswag").docs) == 10052
    assert len(load_thaicli(tmp_path / "thaicli")) == 1890
    assert len(load_dialect(tmp_path / "dialect")) == 400
    assert catalogue.verify([], tmp_path) == []  # every file's hash and rows, and each task's scored rows


def _row(load_s: float, peak: float) -> dict:
    return {
        "suite": "s",
        "tasks": 1,
        "scored": 10,
        "read": 12,
        "files": 1,
        "import_s": 5.0,
        "load_s": load_s,
        "peak_mib": peak,
        "import_mib": 400.0,
        "verify_s": 0.1,
        "problems": [],
    }


def test_report_verdict_follows_the_goal():
    base = {"date": "d", "machine": "m", "load_before": "1", "load_after": "1", "command": "c", "big_fewshot": False}
    met = dl.report({**base, "rows": [_row(20.0, 2048.0)]})
    assert "load + validate 20.0 s, largest peak 2,048 MiB: **met**" in met
    assert "(paid by a run on the samples too): 25.0 s, within 30 s." in met
    assert "**NOT met**" in dl.report({**base, "rows": [_row(20.0, 2049.0)]})
    assert "**NOT met**" in dl.report({**base, "rows": [_row(20.0, 100.0), _row(10.5, 100.0)]})
