"""Paired comparisons: McNemar and sign-flip against hand counts, the bootstrap CI against scipy
called directly, order invariance, unmatched items, data-hash refusal, Holm by hand, hand-written resampling."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from thai_eval_utils.compare import (
    DataMismatchError,
    compare_paired,
    corpus_delta_diff_interval,
    corpus_paired_bootstrap,
    holm,
    mcnemar_exact,
    results_table,
    sign_flip_test,
    stratified_paired_bootstrap,
)
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.dialect.metrics import PAPER_BLEU, bleu
from thai_eval_utils.stats.bootstrap import bootstrap_indices, percentile_ci
from thai_eval_utils.stats.corpus import shifted_p

REPO = Path(__file__).resolve().parents[1]
R = 2000  # resamples in tests (10,000 by default)


def _mcnemar_runs() -> tuple[dict[str, int], dict[str, int]]:
    """7 items A right/B wrong, 2 A wrong/B right, 5 both right, 3 both wrong."""
    pairs = [(1, 0)] * 7 + [(0, 1)] * 2 + [(1, 1)] * 5 + [(0, 0)] * 3
    return {f"q{i}": a for i, (a, _) in enumerate(pairs)}, {f"q{i}": b for i, (_, b) in enumerate(pairs)}


def test_mcnemar_exact_hand_computed():
    a, b = _mcnemar_runs()
    keys = sorted(a)
    n_b, n_c, p = mcnemar_exact([a[k] for k in keys], [b[k] for k in keys])
    # two-sided exact binomial: 2 * P(X >= 7 | n=9, 1/2) = 2 * (36 + 9 + 1) / 512
    assert (n_b, n_c) == (7, 2)
    assert p == pytest.approx(92 / 512)
    assert p == pytest.approx(stats.binomtest(7, 9, 0.5).pvalue)
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]) == (0, 0, 1.0)
    with pytest.raises(ValueError, match="0/1"):
        mcnemar_exact([0.5], [1])


def test_compare_paired_binary_uses_mcnemar_and_scipy_bootstrap():
    a, b = _mcnemar_runs()
    r = compare_paired(a, b, metric="th_arc/acc", n_resamples=R, seed=3)
    assert (r.n_paired, r.n_only_a, r.n_only_b, r.test) == (17, 0, 0, "mcnemar-exact")
    assert (r.mean_a, r.mean_b, r.diff) == (pytest.approx(12 / 17), pytest.approx(7 / 17), pytest.approx(5 / 17))
    assert r.p_value == pytest.approx(92 / 512)
    assert "b=7" in r.note and "c=2" in r.note
    keys = sorted(a)  # canonical order: keys are strings, sorted as text
    direct = stats.bootstrap(
        ([a[k] for k in keys], [b[k] for k in keys]),
        lambda x, y, axis: x.mean(axis) - y.mean(axis),
        paired=True,
        vectorized=True,
        n_resamples=R,
        method="BCa",
        rng=np.random.default_rng(3),
    )
    assert (r.ci_low, r.ci_high) == (
        pytest.approx(direct.confidence_interval.low),
        pytest.approx(direct.confidence_interval.high),
    )
    assert r.signature == "bootstrap:BCa|level:0.95|resamples:2000|seed:3|test:mcnemar-exact"
    assert r.to_dict()["signature"] == r.signature and r.to_dict()["only_in_a"] == []


def test_percentile_ci_hand_case_and_bca_fallback():
    # differences 0 and 1: resampled means are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4 -> 95% interval [0, 1]
    r = compare_paired({"x": 2.0, "y": 3.0}, {"x": 2.0, "y": 2.0}, metric="m", method="percentile", n_resamples=R)
    assert (r.ci_low, r.ci_high, r.method) == (0.0, 1.0, "percentile")
    # all differences equal: BCa is degenerate -> percentile, reason recorded
    same = compare_paired({1: 3.0, 2: 5.0, 3: 4.0}, {1: 2.0, 2: 4.0, 3: 3.0}, metric="m", n_resamples=R)
    assert (same.ci_low, same.ci_high, same.diff) == (pytest.approx(1.0), pytest.approx(1.0), pytest.approx(1.0))
    assert same.method == "percentile" and "BCa degenerate" in same.note


def test_sign_flip_exact_hand_computed():
    # d = 1, 2, 3, 4 (sum 10): of the 16 sign flips only all-plus and all-minus reach |sum| >= 10 -> p = 2/16
    a, b = [1.5, 2.5, 3.5, 4.5], [0.5, 0.5, 0.5, 0.5]
    assert sign_flip_test(a, b, n_resamples=R) == pytest.approx(2 / 16)
    r = compare_paired(dict(enumerate(a)), dict(enumerate(b)), metric="rougeL", n_resamples=R)
    assert (r.test, r.p_value, r.diff) == ("sign-flip-permutation", pytest.approx(0.125), pytest.approx(2.5))
    direct = stats.permutation_test(
        (a, b),
        lambda x, y, axis: x.mean(axis) - y.mean(axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=R,
        rng=np.random.default_rng(0),
    )
    assert r.p_value == pytest.approx(direct.pvalue)
    assert sign_flip_test([1, 2], [1, 2]) == 1.0


def test_item_order_changes_nothing_and_dataframes_match_mappings():
    rng = np.random.default_rng(7)
    df_a = pd.DataFrame({"key": [f"th_{i}" for i in range(40)], "value": rng.normal(6, 2, 40)})
    df_b = df_a.assign(value=df_a["value"] - 0.4 + rng.normal(0, 1, 40))
    first = compare_paired(df_a, df_b, metric="thaicli", n_resamples=R, seed=11)
    shuffled = compare_paired(
        df_a.sample(frac=1, random_state=1),
        df_b.sample(frac=1, random_state=2),
        metric="thaicli",
        n_resamples=R,
        seed=11,
    )
    as_maps = compare_paired(
        dict(zip(df_a["key"], df_a["value"])),
        dict(zip(df_b["key"][::-1], df_b["value"][::-1])),
        metric="thaicli",
        n_resamples=R,
        seed=11,
    )
    assert first.to_dict() == shuffled.to_dict() == as_maps.to_dict()


def test_unmatched_items_are_listed_and_left_out():
    a = {"q1": 1, "q2": 0, "q3": 1, "q4": 1}
    b = {"q2": 1, "q3": 1, "q4": 0, "q5": 0, "q6": 1}
    r = compare_paired(a, b, metric="acc", n_resamples=200)
    assert (r.n_paired, r.only_in_a, r.only_in_b) == (3, ("q1",), ("q5", "q6"))
    assert (r.mean_a, r.mean_b) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert "1 only in A, 2 only in B" in str(r)
    with pytest.raises(ThaiEvalDataError, match="share no item"):
        compare_paired({"a": 1}, {"b": 1}, metric="acc")
    with pytest.raises(ThaiEvalDataError, match="duplicate item key 'q1'") as err:
        compare_paired(pd.DataFrame({"key": ["q1", "q1"], "value": [1, 0]}), b, metric="acc")
    assert err.value.row == 1


def test_different_data_is_refused_unless_allowed():
    a, b = _mcnemar_runs()
    with pytest.raises(DataMismatchError, match="different data") as err:
        compare_paired(a, b, metric="acc", data_hash_a="aaaa", data_hash_b="bbbb")
    assert isinstance(err.value, ThaiEvalDataError)
    r = compare_paired(
        a, b, metric="acc", data_hash_a="aaaa", data_hash_b="bbbb", allow_different_data=True, n_resamples=200
    )
    assert "different data hashes" in r.note
    assert compare_paired(
        a, b, metric="acc", data_hash_a="h", data_hash_b="h", n_resamples=200
    ).p_value == pytest.approx(92 / 512)


def test_holm_against_hand_computation():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.5, float("nan"), 0.2])  # m = 2: 0.2 x 2 = 0.4, max(0.5 x 1, 0.4) = 0.5
    assert out[0] == pytest.approx(0.5) and np.isnan(out[1]) and out[2] == pytest.approx(0.4)
    assert holm([0.4, 0.3, 0.9]) == pytest.approx([0.9, 0.9, 0.9])  # capped at 1 via the running max
    with pytest.raises(ValueError):
        holm([1.2])


def test_results_table_fills_holm_across_rows():
    a, b = _mcnemar_runs()
    rows = [
        compare_paired(a, b, metric="acc", n_resamples=200),
        compare_paired(
            {1: 1.5, 2: 2.5, 3: 3.5, 4: 4.5}, {1: 0.5, 2: 0.5, 3: 0.5, 4: 0.5}, metric="rougeL", n_resamples=200
        ),
    ]
    table = results_table(rows)
    assert list(table["metric"]) == ["acc", "rougeL"]
    # p = 0.1797, 0.125 -> Holm: 0.125 x 2 = 0.25, max(0.1797, 0.25) = 0.25
    assert table["p_holm"].tolist() == pytest.approx([0.25, 0.25])
    assert {"signature", "ci_low", "ci_high", "n_only_a", "level", "seed"} <= set(table.columns)


def test_stratified_average_hand_case_and_order():
    # task 1: every item +1; task 2: every item 0 -> every resample of the two-task average diff is 0.5
    a = pd.DataFrame({"task": ["arc"] * 3 + ["gsm8k"] * 2, "key": [1, 2, 3, 1, 2], "value": [1, 1, 1, 0, 1]})
    b = a.assign(value=[0, 0, 0, 0, 1])
    r = stratified_paired_bootstrap(a, b, name="h6_avg", n_resamples=R, seed=5)
    assert (r.mean_a, r.mean_b, r.diff, r.ci_low, r.ci_high) == (0.75, 0.25, 0.5, 0.5, 0.5)
    # sign flips: T = (task-1 mean of +-1) / 2 reaches 0.5 only with all 3 signs equal: p ~ 2/8
    assert r.p_value == pytest.approx(0.25, abs=0.03)
    again = stratified_paired_bootstrap(
        a.iloc[::-1], b.sample(frac=1, random_state=0), name="h6_avg", n_resamples=R, seed=5
    )
    assert again.to_dict() == r.to_dict()
    assert "2 tasks: arc, gsm8k" in r.note and r.n_paired == 5


def test_corpus_bleu_bootstrap_on_thai_dialect_sentences():
    def rows(path: str) -> dict[int, str]:
        return {d["id"]: d["text_2"] for d in map(json.loads, (REPO / path).read_text(encoding="utf-8").splitlines())}

    central = rows("data/dialect/center/translation_eng_center.jsonl")
    isan = rows("data/dialect/east/translation_eng_east.jsonl")
    # system A repeats the Central reference (BLEU 100), system B answers in Isan
    r = corpus_paired_bootstrap(central, isan, central, PAPER_BLEU, name="bleu", n_resamples=60, seed=1)
    assert (r.mean_a, r.mean_b) == (
        pytest.approx(100.0),
        pytest.approx(bleu([isan[k] for k in sorted(isan)], [central[k] for k in sorted(central)])),
    )
    assert r.diff == pytest.approx(100.0 - r.mean_b) and 0 <= r.ci_low <= r.diff <= r.ci_high <= 100
    reordered = corpus_paired_bootstrap(
        dict(reversed(central.items())), isan, central, PAPER_BLEU, name="bleu", n_resamples=60, seed=1
    )
    assert reordered.to_dict() == r.to_dict()
    iv = corpus_delta_diff_interval((central, central), (isan, central), PAPER_BLEU, n_resamples=30)
    assert iv.estimate == pytest.approx(r.diff) and iv.design.startswith("paired over 3")


class _MeanLength:
    """A corpus metric by sufficient statistics: the mean hypothesis length (statistics: length, 1)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def statistics(self, hyps: list[str], refs: list[str]) -> np.ndarray:
        self.calls.append(len(hyps))
        return np.array([[len(h), 1] for h in hyps], dtype=np.int64)

    def score(self, totals: np.ndarray) -> float:
        return float(totals[0] / totals[1])


def test_corpus_resampling_scores_each_system_once_and_sums_resampled_rows():
    metric = _MeanLength()  # A always beats B by exactly 1 per sentence
    r = corpus_paired_bootstrap(
        {i: "xx" * i + "x" for i in range(5)},
        {i: "xx" * i for i in range(5)},
        {i: "" for i in range(5)},
        metric,
        name="len",
        n_resamples=50,
    )
    assert metric.calls == [5, 5]
    assert (r.diff, r.ci_low, r.ci_high) == (1.0, pytest.approx(1.0), pytest.approx(1.0))
    ind = corpus_delta_diff_interval(({1: "a", 2: "b"}, {1: "", 2: ""}), ({7: "a"}, {7: ""}), metric, n_resamples=20)
    assert ind.design.startswith("independent") and ind.estimate == 0.0


def test_bootstrap_indices_are_the_draws_of_one_call_per_resample():
    rng, ref = np.random.default_rng(4), np.random.default_rng(4)
    blocks = list(bootstrap_indices(rng, 7, 10, max_cells=21))  # blocks of 3 rows
    assert [len(b) for b in blocks] == [3, 3, 3, 1]
    assert np.array_equal(np.concatenate(blocks), np.stack([ref.integers(0, 7, 7) for _ in range(10)]))


def _dialect_corpus() -> tuple[dict, dict, dict]:
    """Nine real sentences: Isan/Lanna/Southern translations (A) and half of each Central one (B) against Central."""

    def rows(path: str) -> dict[int, str]:
        return {d["id"]: d["text_2"] for d in map(json.loads, (REPO / path).read_text(encoding="utf-8").splitlines())}

    central = rows("data/dialect/center/translation_eng_center.jsonl")
    a, b, refs = {}, {}, {}
    for d in ("east", "north", "south"):
        for k, text in rows(f"data/dialect/{d}/translation_eng_{d}.jsonl").items():
            a[(d, k)], b[(d, k)], refs[(d, k)] = text, central[k][: len(central[k]) // 2], central[k]
    return a, b, refs


def test_corpus_bleu_from_statistics_equals_rescoring_the_texts_to_the_last_digit():
    """The sufficient-statistics bootstrap gives exactly the numbers of the text-rescoring one it replaced."""
    a, b, refs = _dialect_corpus()
    keys = sorted(a, key=lambda k: ("tuple", str(k)))
    ha, hb, rr = [a[k] for k in keys], [b[k] for k in keys], [refs[k] for k in keys]
    rng, boot = np.random.default_rng(3), np.empty(300)
    for i in range(300):  # the former implementation: BLEU of the resampled texts
        idx = rng.integers(0, len(keys), len(keys))
        boot[i] = bleu([ha[j] for j in idx], [rr[j] for j in idx]) - bleu([hb[j] for j in idx], [rr[j] for j in idx])
    r = corpus_paired_bootstrap(a, b, refs, PAPER_BLEU, n_resamples=300, seed=3)
    assert (r.mean_a, r.mean_b) == (bleu(ha, rr), bleu(hb, rr)) and 0 < r.mean_a < r.mean_b
    assert (r.ci_low, r.ci_high) == percentile_ci(boot, 0.95) and r.ci_low < r.ci_high
    assert r.p_value == shifted_p(boot, r.diff)
    six = keys[:6]
    iv = corpus_delta_diff_interval(
        (a, refs), ({k: b[k] for k in six}, {k: refs[k] for k in six}), PAPER_BLEU, n_resamples=100, seed=2
    )
    rng, boot = np.random.default_rng(2), np.empty(100)
    for i in range(100):
        i_c, i_d = rng.integers(0, 9, 9), rng.integers(0, 6, 6)
        boot[i] = bleu([ha[j] for j in i_c], [rr[j] for j in i_c]) - bleu([hb[j] for j in i_d], [rr[j] for j in i_d])
    assert iv.design.startswith("independent") and (iv.low, iv.high) == percentile_ci(boot, 0.95)
