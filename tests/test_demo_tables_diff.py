"""benchmarks/demo_tables_diff.py on two planted demo outputs: an equal pair gives no line and exit 0; a changed
cell, a table on one side, a run whose config id changed and a changed score signature are each one line."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "demo_tables_diff.py"
_spec = importlib.util.spec_from_file_location("demo_tables_diff", SCRIPT)
D = importlib.util.module_from_spec(_spec)
sys.modules["demo_tables_diff"] = D
_spec.loader.exec_module(D)


def _outputs(root: Path, *, arc: str = "52.5", config_id: str = "abc123", signature: str = "acc_norm|v1") -> Path:
    (root / "tables").mkdir(parents=True)
    (root / "tables" / "h6_scores.csv").write_text(f"task,value,n\nth_arc,{arc},10\nth_gsm8k,0.0,2\n", encoding="utf-8")
    run = root / "runs" / "embedded" / "thai_h6" / "th_arc" / config_id
    run.mkdir(parents=True)
    (run / "run_card.json").write_text(json.dumps({"config_id": config_id}), encoding="utf-8")
    summary = {"scores": {"acc_norm": {"value": 0.525, "n": 10, "signature": signature}}}
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return root


def test_the_same_demo_has_no_difference(tmp_path, capsys):
    """Two demos made at other times into other folders: their time columns and outputs paths are not differences."""
    a, b = _outputs(tmp_path / "a"), _outputs(tmp_path / "b")
    for root, when in ((a, "2026-12-06T09:43:24+00:00"), (b, "2026-12-06T11:16:11+00:00")):
        run_dir = root / "runs" / "embedded" / "thai_h6" / "th_arc" / "abc123"
        (root / "tables" / "skipped.csv").write_text(f"run_dir,when\n{run_dir},{when}\n", encoding="utf-8")
    assert D.main([str(a), str(b)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("0 differences over 2 tables and 1 stored runs")


def test_each_kind_of_difference_is_one_line(tmp_path, capsys):
    a = _outputs(tmp_path / "a")
    b = _outputs(tmp_path / "b", arc="52.6", config_id="def456")
    (b / "tables" / "extra.csv").write_text("x\n1\n", encoding="utf-8")
    assert D.main([str(a), str(b)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[:-1] == [
        "table only in head: extra.csv",
        "table h6_scores.csv: row 0 value: 52.5 -> 52.6",
        "run only in base: embedded/thai_h6/th_arc/abc123",
        "run only in head: embedded/thai_h6/th_arc/def456",
    ]
    assert lines[-1].startswith("4 differences over 2 tables and 1 stored runs")


def test_a_changed_signature_of_the_same_run_is_found(tmp_path):
    base = D.run_cards(_outputs(tmp_path / "a"))
    head = D.run_cards(_outputs(tmp_path / "b", signature="acc_norm|v2"))
    assert D.diff_runs(base, head, 0.0) == [
        "run embedded/thai_h6/th_arc/abc123: scores/acc_norm: (0.525, 10, 'acc_norm|v1') -> (0.525, 10, 'acc_norm|v2')"
    ]
