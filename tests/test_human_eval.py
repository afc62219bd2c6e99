"""Human-evaluation analyses: kappa (hand values, sklearn parity, ConvAbuse reference, undefined), preference
averaging, Generation/Fluency, validation errors with file/row/field, Spearman with ties and its CI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.dialect import human_eval as H
from thai_eval_utils.stats.bootstrap import spearman_interval

REPO = Path(__file__).resolve().parents[1]
HUMAN = REPO / "data" / "human_eval"

A = [1, 0.5, 0, 1, 1, 0]
B = [1, 0.5, 0.5, 1, 0, 0]


def test_kappa_hand_computed_unweighted_and_weighted():
    # p_o = 4/6; marginals a (0, .5, 1) = (2, 1, 3)/6, b = (2, 2, 2)/6; p_e = (4 + 2 + 6)/36 = 1/3; kappa = 1/2
    k = H.cohen_kappa(A, B)
    assert (k.value, k.p_o, k.p_e, k.n, k.defined) == (
        pytest.approx(0.5),
        pytest.approx(4 / 6),
        pytest.approx(1 / 3),
        6,
        True,
    )
    # linear: observed disagreement (1/2 + 1)/6 = 1/4, expected 17/36 -> 1 - 9/17 = 8/17
    assert H.cohen_kappa(A, B, weights="linear").value == pytest.approx(8 / 17)
    # quadratic: observed (1/4 + 1)/6 = 5/24, expected 3/8 -> 1 - 5/9 = 4/9
    assert H.cohen_kappa(A, B, weights="quadratic").value == pytest.approx(4 / 9)
    assert str(k) == "kappa = 0.500 (p_o = 0.667, p_e = 0.333, n=6)"


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_sklearn_on_mapped_labels(weights):
    code = {0: 0, 0.5: 1, 1: 2}
    expected = cohen_kappa_score([code[x] for x in A], [code[x] for x in B], labels=[0, 1, 2], weights=weights)
    assert H.cohen_kappa(A, B, weights=weights).value == pytest.approx(expected)
    with pytest.raises(ValueError):
        cohen_kappa_score(A, B)  # the reason for the mapping: sklearn rejects 0.5 ("continuous")


def test_kappa_convabuse_reference_values():
    rows = [json.loads(x) for x in (HUMAN / "convabuse_kappa_reference.jsonl").read_text().splitlines()]
    assert len(rows) == 200
    five = H.cohen_kappa([r["label_a"] for r in rows], [r["label_b"] for r in rows], labels=[-3, -2, -1, 0, 1])
    assert five.value == pytest.approx(0.528, abs=5e-4)
    assert five.p_o == pytest.approx(0.885) and five.p_e == pytest.approx(0.756, abs=5e-4)
    binary = H.cohen_kappa([r["binary_abuse_a"] for r in rows], [r["binary_abuse_b"] for r in rows], labels=[0, 1])
    assert binary.value == pytest.approx(0.599, abs=5e-4) and binary.p_o == pytest.approx(0.93)


def test_kappa_undefined_is_never_a_number():
    k = H.cohen_kappa([1, 1, 1], [1, 1, 1])
    assert not k.defined and math.isnan(k.value) and k.p_e == 1.0
    assert "undefined" in str(k) and "nan" not in str(k).lower()
    assert k.display() == "undefined" and k.to_dict()["value"] is None
    # constant but different labels: p_o = 0 = p_e, kappa 0 (defined, as sklearn)
    k2 = H.cohen_kappa([0, 0, 0], [1, 1, 1])
    assert k2.defined and k2.value == 0.0
    with pytest.raises(ValueError):
        H.cohen_kappa([0.7], [1])


def _gf_rows():
    # east, model m, 2 items, annotators x/y: item 0 G (1, .5) F (1, 1); item 1 G (0, .5) F (.5, 1)
    return pd.DataFrame(
        [
            ("east", "food", "0", "m", "x", 1, 1),
            ("east", "food", "0", "m", "y", 0.5, 1),
            ("east", "food", "1", "m", "x", 0, 0.5),
            ("east", "food", "1", "m", "y", 0.5, 1),
            ("center", "food", "0", "m", "p", 1, 1),
            ("center", "food", "0", "m", "q", 1, 0.5),
            ("center", "food", "1", "m", "p", 1, 0.5),
            ("center", "food", "1", "m", "q", 1, 0.5),
        ],
        columns=list(H.GENERATION_FLUENCY_COLUMNS),
    )


def test_generation_fluency_hand_values():
    t = H.generation_fluency(H.load_generation_fluency(_gf_rows())).set_index("dialect")
    # item means G: .75, .25 -> 50; F: 1, .75 -> 87.5; Avg 68.75
    assert (t.loc["east", "generation"], t.loc["east", "fluency"], t.loc["east", "avg"]) == (50.0, 87.5, 68.75)
    assert (t.loc["center", "generation"], t.loc["center", "fluency"]) == (100.0, 62.5)
    assert t.loc["east", "n_items"] == 2


def test_agreement_table_marks_undefined():
    t = H.agreement_table(H.load_generation_fluency(_gf_rows())).set_index(["dialect", "aspect"])
    assert t.loc[("center", "generation"), "display"] == "undefined" and not t.loc[("center", "generation"), "defined"]
    # center fluency: p (1, .5), q (.5, .5): p_o 1/2, p_e = (1/2)(1/2)... a = (.5: 1, 1: 1), b = (.5: 2) -> p_e 1/2 -> kappa 0
    assert t.loc[("center", "fluency"), "kappa"] == pytest.approx(0.0)
    # east generation: x (1, 0), y (.5, .5): p_o 0, p_e 0 -> kappa 0
    assert (
        t.loc[("east", "generation"), "kappa"] == pytest.approx(0.0)
        and t.loc[("east", "generation"), "annotators"] == "x vs y"
    )


def test_preference_counts_are_averaged_over_annotators(tmp_path):
    path = tmp_path / "pref.csv"
    path.write_text(
        "dialect,task,item_id,model_a,model_b,annotator,choice\n"
        "north,food,0,m1,m2,a1,A\nnorth,food,0,m1,m2,a2,A\nnorth,food,0,m1,m2,a3,B\n"
        "north,food,1,m1,m2,a1,Both\nnorth,food,1,m1,m2,a2,None\nnorth,food,1,m1,m2,a3,A\n",
        encoding="utf-8",
    )
    df = H.load_preferences(path)
    assert list(df["choice"]) == ["A", "A", "B", "Both", "None", "A"]  # "None" stays a label, not a missing value
    t = H.preference_table(df).iloc[0]
    assert (t["A"], t["B"], t["Both"], t["None"]) == pytest.approx((1.0, 1 / 3, 1 / 3, 1 / 3))
    assert t["A"] + t["B"] + t["Both"] + t["None"] == pytest.approx(t["n_items"]) and t["n_items"] == 2


def test_shipped_examples_load():
    pref = H.load_preferences(HUMAN / "example_preferences.csv")
    gf = H.load_generation_fluency(HUMAN / "example_generation_fluency.csv")
    judge = H.load_judge_scores(HUMAN / "example_judge_scores.csv")
    assert len(pref) == 72 and len(gf) == 96 and len(judge) == 48
    assert (
        H.agreement_table(gf).set_index(["dialect", "aspect"]).loc[("center", "generation"), "display"] == "undefined"
    )
    for name in ("preference_template.csv", "generation_fluency_template.csv", "judge_scores_template.csv"):
        assert (HUMAN / name).read_text().count("\n") == 1


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GF_HEADER = "dialect,task,item_id,model,annotator,generation,fluency\n"


def test_unknown_labels_name_file_row_field(tmp_path):
    p = _write(
        tmp_path,
        "p.csv",
        "dialect,task,item_id,model_a,model_b,annotator,choice\neast,food,0,m1,m2,a,A\neast,food,0,m1,m2,b,Maybe\n",
    )
    with pytest.raises(ThaiEvalDataError) as e:
        H.load_preferences(p, n_annotators=2)
    assert (e.value.path, e.value.row, e.value.field) == (str(p), 1, "choice") and "Maybe" in str(e.value)
    g = _write(tmp_path, "g.csv", GF_HEADER + "east,food,0,m,a,1,1\neast,food,0,m,b,0.5,2\n")
    with pytest.raises(ThaiEvalDataError) as e:
        H.load_generation_fluency(g)
    assert (e.value.row, e.value.field) == (1, "fluency") and f"{g}, row 1, field 'fluency'" in str(e.value)


def test_duplicate_rows_are_rejected(tmp_path):
    g = _write(tmp_path, "g.csv", GF_HEADER + "east,food,0,m,a,1,1\neast,food,0,m,b,1,1\neast,food,0,m,a,0,1\n")
    with pytest.raises(ThaiEvalDataError) as e:
        H.load_generation_fluency(g)
    assert (e.value.row, e.value.field) == (2, "annotator") and "duplicate" in str(e.value) and "row 0" in str(e.value)


def test_missing_annotator_is_reported(tmp_path):
    g = _write(
        tmp_path,
        "g.jsonl",
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "dialect": "south",
                    "task": "food",
                    "item_id": 0,
                    "model": "m",
                    "annotator": "a",
                    "generation": 1,
                    "fluency": 1,
                },
                {
                    "dialect": "south",
                    "task": "food",
                    "item_id": 0,
                    "model": "m",
                    "annotator": "b",
                    "generation": 1,
                    "fluency": 0.5,
                },
                {
                    "dialect": "south",
                    "task": "food",
                    "item_id": 1,
                    "model": "m",
                    "annotator": "a",
                    "generation": 0,
                    "fluency": 1,
                },
            ]
        )
        + "\n",
    )
    with pytest.raises(ThaiEvalDataError) as e:
        H.load_generation_fluency(g)
    assert (e.value.row, e.value.field) == (2, "annotator") and "south/food/1/m" in str(e.value) and "b" in str(e.value)
    with pytest.raises(ThaiEvalDataError) as e:
        H.load_preferences(
            _write(
                tmp_path,
                "p.csv",
                "dialect,task,item_id,model_a,model_b,annotator,choice\neast,food,0,m1,m2,a,A\neast,food,0,m1,m2,b,B\n",
            )
        )
    assert "2 annotator(s)" in str(e.value) and "expected 3" in str(e.value) and e.value.row == 0


def test_spearman_with_ties_matches_hand_computation():
    x, y = [1, 2, 2, 3, 4], [1, 3, 2, 2, 5]
    # average ranks: x (1, 2.5, 2.5, 4, 5), y (1, 4, 2.5, 2.5, 5); Pearson on ranks = 7.25 / 9.5
    rho = 7.25 / 9.5
    t = rho * math.sqrt(3 / (1 - rho**2))
    df = pd.DataFrame({"dialect": "north", "judge_score": x, "human_score": y})
    r = H.judge_human_spearman(df, n_resamples=200, seed=1).iloc[0]
    assert r["rho"] == pytest.approx(rho) and r["n"] == 5
    assert r["p_value"] == pytest.approx(2 * stats.t.sf(t, 3))
    assert r["ci_low"] <= r["ci_high"] and 0 < r["n_used"] <= 200
    iv = spearman_interval(x, y, n_resamples=200, seed=1)  # the one Spearman interval (parity-tested by hand)
    assert (r["ci_low"], r["ci_high"], r["n_used"]) == (iv.low, iv.high, iv.n_used)
    again = H.judge_human_spearman(df, n_resamples=200, seed=1).iloc[0]
    assert (again["ci_low"], again["ci_high"]) == (r["ci_low"], r["ci_high"])
    const = pd.DataFrame({"dialect": "east", "judge_score": [5, 5, 5], "human_score": [0, 0.5, 1]})
    assert math.isnan(H.judge_human_spearman(const).iloc[0]["rho"])


def test_merge_judge_human_uses_the_annotators_mean():
    gf = H.load_generation_fluency(_gf_rows())
    human = H.human_item_scores(gf).set_index(["dialect", "item_id"])["human_score"]
    # east item 0: x (1 + 1)/2 = 1, y (.5 + 1)/2 = .75 -> .875; item 1: x .25, y .75 -> .5
    assert human[("east", "0")] == 0.875 and human[("east", "1")] == 0.5
    judge = pd.DataFrame(
        {
            "dialect": ["east", "east"],
            "task": "food",
            "item_id": ["0", "1"],
            "model": "m",
            "judge": "j",
            "score": [8, 3],
        }
    )
    merged = H.merge_judge_human(H.load_judge_scores(judge), gf)
    assert list(merged["judge_score"]) == [8.0, 3.0] and list(merged["human_score"]) == [0.875, 0.5]
    assert np.isfinite(merged["human_score"]).all()
