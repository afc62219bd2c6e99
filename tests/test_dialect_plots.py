"""Dialect figures: each returns a Figure with one panel per dialect / pair / model and the expected labels."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # the Agg backend is set in conftest.py
import pandas as pd

from thai_eval_utils.dialect import human_eval as H
from thai_eval_utils.dialect.metrics import delta_diff
from thai_eval_utils.dialect import plots as P
from thai_eval_utils.plots import save_figure

HUMAN = Path(__file__).resolve().parents[1] / "data" / "human_eval"


def _titles(fig):
    return [ax.get_title() for ax in fig.axes if ax.get_title()]


def test_delta_heatmap_panels_and_values(tmp_path):
    rows = [
        ("m", d, t, metric, v)
        for d, off in (("center", 0), ("east", 4), ("south", 1))
        for t, metric, v in (("qa", "rougeL", 30 - off), (f"translation_eng_{d}", "bleu", 10 - off), ("qa", "bleu", 99))
    ]
    fig = P.delta_heatmap(delta_diff(pd.DataFrame(rows, columns=["model", "dialect", "task", "metric", "value"])))
    assert _titles(fig) == ["Isan", "Dambro"]
    labels = sorted(t.get_text() for t in fig.axes[0].texts)
    assert labels == ["4.00", "4.00"]  # the qa BLEU row (not the headline metric) is left out
    paths = save_figure(fig, tmp_path / "heat")
    assert all(p.stat().st_size > 0 for p in paths)
    plt.close(fig)


def test_human_figures():
    pref = H.preference_table(H.load_preferences(HUMAN / "example_preferences.csv"))
    fig = P.preference_bars(pref)
    assert _titles(fig) == ["A = demo-model-1\nB = demo-model-2"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["Central", "Isan", "Lanna", "Dambro"]
    plt.close(fig)
    gf = H.load_generation_fluency(HUMAN / "example_generation_fluency.csv")
    fig = P.generation_fluency_bars(H.generation_fluency(gf))
    assert _titles(fig) == ["demo-model-1", "demo-model-2"]
    plt.close(fig)
    merged = H.merge_judge_human(H.load_judge_scores(HUMAN / "example_judge_scores.csv"), gf)
    corr = H.judge_human_spearman(merged, n_resamples=50)
    fig = P.judge_human_scatter(merged, corr)
    titles = _titles(fig)
    assert len(titles) == 4 and titles[1].startswith("Isan\nρ = ") and f"n = {int(corr['n'].iloc[1])}" in titles[1]
    plt.close(fig)
