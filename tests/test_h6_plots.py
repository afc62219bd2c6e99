"""The Thai-H6 per-task figure: bar heights are the scores x 100, error bars span ± 1 stderr."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402

from thai_eval_utils.core.provenance import Score  # noqa: E402
from thai_eval_utils.h6 import evaluation as h6  # noqa: E402
from thai_eval_utils.h6.average import thai_h6_score  # noqa: E402
from thai_eval_utils.h6.plots import task_scores_figure  # noqa: E402


def _scores():
    return {
        t: Score(f"{t}/x", v, 50, 0.01 * (i + 1))
        for i, (t, v) in enumerate(zip(h6.TASKS, [0.4, 0.5, 0.6, 0.3, 0.7, 0.2]))
    }


def _errorbars(ax):
    out = []
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            seg = c.lines[2][0].get_segments()[0]  # vertical bar: (x, y - se) to (x, y + se)
            out.append((round(float(seg[0][1]), 6), round(float(seg[1][1]), 6)))
    return out


def test_single_model_bars_and_errorbars(tmp_path):
    fig = task_scores_figure(_scores())
    ax = fig.axes[0]
    bars = [b.get_height() for c in ax.containers if isinstance(c, BarContainer) for b in c]
    assert bars == pytest.approx([40, 50, 60, 30, 70, 20, 45])
    errs = _errorbars(ax)
    assert errs[0] == (39.0, 41.0) and errs[5] == (14.0, 26.0)  # ARC 40 ± 1, GSM8K 20 ± 6
    avg_se = 100 * 0.01 * (91**0.5) / 6
    assert errs[6] == (round(45 - avg_se, 6), round(45 + avg_se, 6))
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "thai_h6_avg"
    assert ax.get_title() == "Thai-H6"
    from thai_eval_utils.plots import save_figure

    paths = save_figure(fig, tmp_path / "h6")
    assert all(p.exists() for p in paths)


def test_grouped_partial_models():
    s = _scores()
    fig = task_scores_figure({"a": thai_h6_score(s), "b": thai_h6_score({k: s[k] for k in h6.TASKS[:2]})})
    ax = fig.axes[0]
    assert ax.get_title() == "Thai-H6 (partial)"
    errs = _errorbars(ax)
    assert len(errs) == 7 + 3  # model b: ARC, HellaSwag and its (partial) average
    assert errs[-1][0] + errs[-1][1] == pytest.approx(2 * 45.0)  # b's average (40 + 50) / 2 at the centre
