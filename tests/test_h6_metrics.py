"""Thai-H6 metrics on hand-computed cases: acc / acc_norm / acc_bytes, MC1, MC2 (LB and mask),
GSM8K answer extraction, macro and micro averages."""

from __future__ import annotations

import math

import pytest

from thai_eval_utils.core.provenance import Score
from thai_eval_utils.h6 import metrics as M
from thai_eval_utils.tasks.metrics import ACC, ACC_NORM, LoglikelihoodAccuracy

ACC_BYTES = LoglikelihoodAccuracy("byte")


def multiple_choice(lls: list[float], choices: list[str], gold: int) -> dict[str, float | int]:
    """acc, acc_norm and acc_bytes of one document, and their predictions, from the metric objects Thai-H6 declares."""
    out: dict[str, float | int] = {}
    for metric, pred in ((ACC, "pred"), (ACC_NORM, "pred_norm"), (ACC_BYTES, "pred_bytes")):
        out[metric.name] = metric.score_choices(lls, choices, gold)
        out[pred] = metric.predict(lls, choices)
    return out


def test_acc_norm_counts_code_points_not_bytes():
    # "น้ำ" = NO NU + MAI THO + SARA AM: 3 code points, 9 UTF-8 bytes; "water": 5 and 5.
    assert len("น้ำ") == 3 and len("น้ำ".encode()) == 9
    out = multiple_choice([-6.0, -8.0], ["น้ำ", "water"], gold=1)
    # acc: -6 > -8 -> 0; per code point: -2.0 < -1.6 -> 1; per byte: -0.667 > -1.6 -> 0
    assert (out["pred"], out["pred_norm"], out["pred_bytes"]) == (0, 1, 0)
    assert (out["acc"], out["acc_norm"], out["acc_bytes"]) == (0.0, 1.0, 0.0)


def test_acc_norm_is_not_grapheme_or_nfkc_length():
    # Per code point: -5/3 = -1.667 > -3.5/2 = -1.75 -> choice 0. Counting "น้ำ" as fewer units (graphemes)
    # or as 4 (NFKC splits SARA AM into NIKHAHIT + SARA AA) would change the division.
    out = multiple_choice([-5.0, -3.5], ["น้ำ", "ab"], gold=0)
    assert out["pred_norm"] == 0 and out["acc_norm"] == 1.0
    assert out["pred"] == 1 and out["acc"] == 0.0


def test_ties_go_to_first_choice():
    assert M.argmax_first([-1.0, -1.0, -2.0]) == 0
    assert multiple_choice([-2.0, -4.0], ["ก", "กก"], gold=1)["pred_norm"] == 0  # -2/1 == -4/2


def test_mc1():
    assert M.mc1([-2.0, -1.0, -3.0]) == 0.0
    assert M.mc1([-1.0, -1.0]) == 1.0
    assert M.mc1([-0.5, -1.0]) == 1.0


def test_mc2_legacy_vs_mask_true_answers_out_of_order():
    lls = [math.log(0.2), math.log(0.5), math.log(0.3)]
    labels = [1, 0, 1]
    assert M.mc2_lb(lls, labels) == pytest.approx(0.2)  # split at labels.index(0) = 1
    assert M.mc2_mask(lls, labels) == pytest.approx(0.5)  # 0.2 + 0.3
    # true answers first: both agree
    assert M.mc2_lb(lls, [1, 1, 0]) == pytest.approx(0.7) == M.mc2_mask(lls, [1, 1, 0])


def test_mc2_is_stable_for_very_negative_lls():
    lls = [-1000.0, -1000.0 + math.log(3.0)]  # exp() underflows to 0 without the shift
    assert M.mc2_lb(lls, [1, 0]) == pytest.approx(0.25)
    assert M.mc2_mask(lls, [0, 1]) == pytest.approx(0.75)


def test_mc2_length_mismatch():
    with pytest.raises(ValueError, match="2 log-likelihoods for 3 labels"):
        M.mc2_lb([-1.0, -2.0], [1, 0, 0])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("แม่มีส้ม 1,234 ผล #### 1,234", "1234"),  # commas removed
        ("#### -5", "-5"),  # negative
        ("#### 3.50", "3.50"),  # decimals kept as written
        ("#### 5.", "5."),  # the pattern takes a trailing full stop (LB does too)
        ("ได้ 18 บาท", M.GSM8K_INVALID),  # no ####
        ("####18", M.GSM8K_INVALID),  # no space after ####
        ("#### 12 แล้ว #### 13", "12"),  # several ####: the first
        ("#### ", M.GSM8K_INVALID),
    ],
)
def test_gsm8k_strict(text, expected):
    assert M.gsm8k_strict(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ราคา 1,234.5 บาท ไม่ใช่ 7", "7"),
        ("ได้ 18 บาท.", "18"),
        ("ขาดทุน -3", "-3"),
        ("#### 1,000,000", "1000000"),
        ("ไม่มีตัวเลข", M.GSM8K_INVALID),
    ],
)
def test_gsm8k_flexible(text, expected):
    assert M.gsm8k_flexible(text) == expected


def test_gsm8k_document_scores():
    gold = "แม่มี 600 บาท ซื้อของ <<600+400=1000>> 1,000 บาท\n#### 1,000"
    assert M.gsm8k(" รวม 1000 บาท #### 1000", gold) == {
        "gold": "1000",
        "strict": "1000",
        "flexible": "1000",
        "exact_match": 1.0,
        "flexible_match": 1.0,
    }
    out = M.gsm8k(" รวมได้ 1,000 บาท", gold)  # LB's ":" stop often cuts before "####"
    assert (out["strict"], out["exact_match"], out["flexible"], out["flexible_match"]) == (
        M.GSM8K_INVALID,
        0.0,
        "1000",
        1.0,
    )
    assert M.gsm8k("#### 1000.0", gold)["exact_match"] == 0.0  # compared as strings
    with pytest.raises(ValueError, match="no '#### N'"):
        M.gsm8k("#### 3", "ไม่มีคำตอบ")


def test_macro_and_micro_average():
    a = Score.mean("a", [1, 0])  # 0.5, se = 0.7071 / sqrt(2) = 0.5
    b = Score.mean("b", [1, 1, 1])  # 1.0, se 0
    macro = M.macro_average("mmlu", {"a": a, "b": b})
    assert macro.value == pytest.approx(0.75)
    assert macro.stderr == pytest.approx(math.sqrt(0.5**2 + 0.0) / 2)
    assert macro.n == 5
    assert Score.mean("micro", [1, 0, 1, 1, 1]).value == pytest.approx(0.8)
    one = Score.mean("c", [1])  # no stderr for a single document
    assert M.macro_average("m", {"a": a, "c": one}).stderr is None
    assert math.isnan(M.macro_average("m", {}).value)
