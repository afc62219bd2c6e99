"""The judge's noise floor: hand-computed spread and minimum detectable difference, validation errors."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from thai_eval_utils.compare import item_spread, noise_floor
from thai_eval_utils.core.errors import ThaiEvalDataError


def test_noise_floor_hand_computed():
    # item a judged 7, 9; item b judged 5, 5 -> repeat means 6, 7 -> sd sqrt(0.5) = 0.7071;
    # pooled: within-item variances 2 and 0, mean 1, over n=2 items -> sqrt(1 / 2) = 0.7071 as well
    df = pd.DataFrame({"key": ["a", "a", "b", "b"], "repeat": [0, 1, 0, 1], "score": [7, 9, 5, 5]})
    nf = noise_floor(df)
    assert nf.repeat_means == (6.0, 7.0)
    assert nf.sd_of_mean_repeats == pytest.approx(math.sqrt(0.5)) and nf.sd_of_mean_pooled == pytest.approx(
        math.sqrt(0.5)
    )
    assert nf.min_detectable_diff == pytest.approx(1.959964 * math.sqrt(2) * math.sqrt(0.5), rel=1e-6)
    assert (nf.mean_item_range, nf.max_item_range) == (1.0, 2.0)
    assert nf.exceeds(2.0) and not nf.exceeds(-1.9)
    assert nf.signature == "noise:repeats|level:0.95|repeats:2|items:2"
    spread = item_spread(df)
    assert spread["std"].tolist() == pytest.approx([math.sqrt(2), 0.0]) and spread["range"].tolist() == [2.0, 0.0]


def test_noise_floor_pooled_basis_and_three_repeats():
    df = pd.DataFrame({"key": [1, 1, 1, 2, 2, 2], "repeat": [0, 1, 2] * 2, "score": [8, 8, 5, 2, 4, 3]})
    # repeat means 5, 6, 4 -> sd 1; within-item variances 3 and 1 -> pooled sqrt(2 / 2) = 1
    nf = noise_floor(df, basis="pooled", level=0.9)
    assert (nf.sd_of_mean_repeats, nf.sd_of_mean_pooled, nf.basis) == (pytest.approx(1.0), pytest.approx(1.0), "pooled")
    assert nf.min_detectable_diff == pytest.approx(1.644854 * math.sqrt(2), rel=1e-6)


def test_noise_floor_errors():
    with pytest.raises(ThaiEvalDataError, match="no score in repeat"):
        noise_floor(pd.DataFrame({"key": [1, 1, 2], "repeat": [0, 1, 0], "score": [1, 2, 3]}))
    with pytest.raises(ThaiEvalDataError, match="judged twice") as err:
        noise_floor(pd.DataFrame({"key": [1, 1, 1], "repeat": [0, 1, 1], "score": [1, 2, 3]}))
    assert err.value.row == 2
    with pytest.raises(ThaiEvalDataError, match="at least 2 repeats"):
        noise_floor(pd.DataFrame({"key": [1, 2], "repeat": [0, 0], "score": [1, 2]}))
    with pytest.raises(ThaiEvalDataError, match="not a number"):
        noise_floor(pd.DataFrame({"key": [1, 1], "repeat": [0, 1], "score": [1, "x"]}))
