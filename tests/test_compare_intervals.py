"""Intervals for the human-evaluation analyses and ΔDiff: undefined kappa/Spearman resamples counted, parity
with direct sklearn/scipy loops, paired vs independent ΔDiff stated, Table 2/3/6 cells on the example files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from thai_eval_utils.compare import mean_interval, spearman_interval
from thai_eval_utils.dialect.intervals import (
    delta_diff_interval,
    generation_fluency_intervals,
    kappa_interval,
    kappa_intervals,
    preference_share_intervals,
)
from thai_eval_utils.dialect import human_eval as H

HUMAN = Path(__file__).resolve().parents[1] / "data" / "human_eval"
R = 2000


@pytest.fixture(scope="module")
def gf():
    return H.load_generation_fluency(HUMAN / "example_generation_fluency.csv")


def test_kappa_interval_counts_undefined_resamples():
    # perfect agreement on 3 items labelled 1 and 1 item labelled 0: a resample missing the 0 item has one
    # label only (kappa 0/0); that happens with probability (3/4)^4 = 0.316; every other resample has kappa 1
    iv = kappa_interval([1, 1, 1, 0], [1, 1, 1, 0], n_resamples=R, seed=0)
    assert (iv.estimate, iv.low, iv.high) == (1.0, 1.0, 1.0)
    assert iv.n_undefined + iv.n_used == R
    assert iv.n_undefined / R == pytest.approx(0.316, abs=0.03)
    assert "one label only" in iv.undefined_reason
    assert f"{iv.n_undefined} of {R} resamples undefined and dropped" in str(iv)
    assert iv.signature == "bootstrap:percentile|level:0.95|resamples:2000|seed:0"


def test_kappa_interval_matches_a_direct_sklearn_loop():
    a = [1, 0.5, 0, 1, 1, 0, 0.5, 1, 0, 1]
    b = [1, 0.5, 0.5, 1, 0, 0, 0.5, 1, 0, 0.5]
    iv = kappa_interval(a, b, n_resamples=200, seed=4)
    code = {0: 0, 0.5: 1, 1: 2}
    x, y = np.array([code[v] for v in a]), np.array([code[v] for v in b])
    rng, boot = np.random.default_rng(4), []
    for _ in range(200):
        idx = rng.integers(0, 10, 10)
        if len(set(x[idx]) | set(y[idx])) > 1:
            boot.append(cohen_kappa_score(x[idx], y[idx], labels=[0, 1, 2]))
    assert iv.estimate == pytest.approx(H.cohen_kappa(a, b).value)
    assert (iv.low, iv.high) == (pytest.approx(np.percentile(boot, 2.5)), pytest.approx(np.percentile(boot, 97.5)))
    assert iv.n_used == len(boot)


def test_kappa_intervals_on_example_file(gf):
    table = kappa_intervals(gf, n_resamples=100)
    ref = H.agreement_table(gf)
    assert table["estimate"].tolist() == pytest.approx(ref["kappa"].tolist(), nan_ok=True)
    centre = table[(table["dialect"] == "center") & (table["aspect"] == "generation")].iloc[0]["interval"]
    # in the example, both Central annotators rate Generation 1 everywhere: undefined, no interval, said so
    assert (
        np.isnan(centre.estimate)
        and centre.n_undefined == 100
        and "undefined on the full data" in centre.undefined_reason
    )
    east = table[(table["dialect"] == "east") & (table["aspect"] == "generation")].iloc[0]
    assert east["ci_low"] <= 0.875 <= east["ci_high"]


def test_spearman_interval_parity_and_undefined():
    judge, human = [3, 1, 4, 1, 5, 9, 2, 6], [2, 1, 4, 2, 5, 7, 1, 8]
    iv = spearman_interval(judge, human, n_resamples=400, seed=2)
    rng, boot, undefined = np.random.default_rng(2), [], 0
    x, y = np.array(judge, float), np.array(human, float)
    for _ in range(400):
        idx = rng.integers(0, 8, 8)
        if np.ptp(x[idx]) == 0 or np.ptp(y[idx]) == 0:
            undefined += 1
        else:
            boot.append(stats.spearmanr(x[idx], y[idx]).statistic)
    assert iv.estimate == pytest.approx(stats.spearmanr(judge, human).statistic)
    assert (iv.low, iv.high, iv.n_undefined) == (
        pytest.approx(np.percentile(boot, 2.5)),
        pytest.approx(np.percentile(boot, 97.5)),
        undefined,
    )
    few = spearman_interval([1, 2, 3], [3, 1, 2], n_resamples=R)
    assert few.n_undefined > 0 and "constant scores on one side" in few.undefined_reason  # P(3 distinct) = 6/27


def test_spearman_interval_on_example_judge_scores(gf):
    merged = H.merge_judge_human(H.load_judge_scores(HUMAN / "example_judge_scores.csv"), gf)
    east = merged[merged["dialect"] == "east"]
    iv = spearman_interval(east["judge_score"], east["human_score"], n_resamples=300)
    ref = H.judge_human_spearman(merged, n_resamples=10)
    assert iv.estimate == pytest.approx(float(ref.loc[ref["dialect"] == "east", "rho"].iloc[0]))
    assert iv.low < iv.estimate < iv.high and iv.n == 12


def test_delta_diff_paired_vs_independent_is_stated():
    central = {0: 40.0, 1: 55.0, 2: 30.0, 3: 62.0, 4: 47.0}
    dialect = {0: 31.0, 1: 50.0, 2: 22.0, 3: 49.0, 4: 45.0}
    paired = delta_diff_interval(central, dialect, n_resamples=R, seed=1)
    assert paired.estimate == pytest.approx(46.8 - 39.4) and paired.design == "paired over 5 aligned items"
    c, d = list(central.values()), list(dialect.values())
    stat = lambda x, y, axis: x.mean(axis) - y.mean(axis)
    direct = stats.bootstrap((c, d), stat, paired=True, vectorized=True, n_resamples=R, rng=np.random.default_rng(1))
    assert (paired.low, paired.high) == (
        pytest.approx(direct.confidence_interval.low),
        pytest.approx(direct.confidence_interval.high),
    )
    dialect_other = {0: 31.0, 1: 50.0, 2: 22.0, 7: 49.0}
    ind = delta_diff_interval(central, dialect_other, n_resamples=R, seed=1, method="percentile")
    assert (
        ind.design.startswith("independent resampling of Central (5) and dialect (4) items")
        and "3 shared" in ind.design
    )
    direct = stats.bootstrap(
        (c, [31.0, 50.0, 22.0, 49.0]),
        stat,
        paired=False,
        vectorized=True,
        n_resamples=R,
        method="percentile",
        rng=np.random.default_rng(1),
    )
    assert (ind.low, ind.high) == (
        pytest.approx(direct.confidence_interval.low),
        pytest.approx(direct.confidence_interval.high),
    )
    assert ind.estimate == pytest.approx(46.8 - 38.0)
    # the independent interval ignores the item pairing, so it is wider here
    assert ind.high - ind.low > paired.high - paired.low


def test_mean_interval_fallback_and_generation_fluency_table(gf):
    flat = mean_interval([1.0, 1.0, 1.0], n_resamples=200)
    assert (flat.low, flat.high, flat.method) == (1.0, 1.0, "percentile") and "BCa degenerate" in flat.note
    table = generation_fluency_intervals(gf, aspect="avg", n_resamples=300)
    ref = H.generation_fluency(gf)
    assert table["estimate"].tolist() == pytest.approx(ref["avg"].tolist())
    assert (table["ci_low"] <= table["estimate"]).all() and (table["estimate"] <= table["ci_high"]).all()
    assert table["signature"].iloc[0].startswith("bootstrap:")


def test_preference_shares_times_items_are_table_2_counts():
    prefs = H.load_preferences(HUMAN / "example_preferences.csv")
    shares = preference_share_intervals(prefs, n_resamples=200, method="percentile")
    counts = H.preference_table(prefs)
    for _, row in counts.iterrows():
        got = shares[(shares["dialect"] == row["dialect"])].set_index("choice")["estimate"] * row["n_items"]
        assert [got[c] for c in H.PREFERENCE_CHOICES] == pytest.approx([row[c] for c in H.PREFERENCE_CHOICES])
