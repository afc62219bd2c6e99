"""benchmarks/dtype_spread.py (bfloat16's spread against float32, and which accuracies move), on
hand-made log-likelihoods for the first two Thai Winogrande validation items (gold options 1 and 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import dtype_spread as ds


def test_spread_counts_the_documents_whose_accuracy_moves():
    # Winogrande partial scoring: one request per option; acc = option with the larger log-likelihood is gold
    base = [(-1.0, True), (-2.0, False), (-3.0, False), (-2.5, True)]  # doc 0 picks 1 (gold 1), doc 1 picks 2 (gold 2)
    other = [(-1.0, True), (-2.0, False), (-3.0, True), (-3.5, False)]  # doc 1 now picks option 1: wrong
    r = ds.spread("winogrande5", docs=[0, 1], sizes=[2, 2], n_tokens=[1, 1, 2, 4], base=base, other=other)
    assert r["max_delta"] == 1.0 and r["median_delta"] == 0.0
    assert r["max_delta_per_token"] == pytest.approx(0.25)  # 1.0 over 4 continuation tokens
    assert r["greedy_changed"] == 2
    acc = r["metrics"]["acc"]
    assert (acc["float32"], acc["bfloat16"], acc["docs_moved"]) == (1.0, 0.5, [1])


def test_report_names_the_moving_accuracy():
    base = [(-1.0, True), (-2.0, False), (-3.0, False), (-2.5, True)]
    other = [(-1.0, True), (-2.0, False), (-3.0, True), (-3.5, False)]
    r = ds.spread("winogrande5", [0, 1], [2, 2], [1, 1, 2, 4], base, other)
    text = ds.report({"date": "2026-12-01", "settings": {"winogrande5": r}}, "hand-made", "cmd")
    assert "| winogrande5 | 2 / 4 | 1.00e+00 (0.0e+00) | 2.5e-01 | 2 of 4 | acc 1.0000 -> 0.5000 (1 of 2) |" in text
    assert text.endswith("Accuracies that move in bfloat16: winogrande5 acc.")
