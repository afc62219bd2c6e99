"""paper: the published tables rebuilt from their parts, half-up rounding, and own runs beside them."""

from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from thai_eval_utils import paper
from thai_eval_utils.errors import ThaiEvalDataError

DATA = Path(__file__).resolve().parent.parent / "data" / "paper_results"

#: The cells the data README describes as inconsistent in the papers: the checks must find these and no other.
KNOWN_INCONSISTENT = {
    ("Kim et al. Table 4", "Qwen2-72B-Instruct", "thai_h6_avg", "68.80", "68.81"),
    ("Limkonchotiwat et al. Table 3", "Gemini2 / Lanna", "avg", "92.58", "92.66"),
    ("Limkonchotiwat et al. Table 3", "Gemini2 / Dambro", "avg", "71.83", "72.00"),
    ("Limkonchotiwat et al. Table 1", "GPT-4o / Isan", "translation_en_to_dialect_delta", "7.63", "7.64"),
    ("Limkonchotiwat et al. Table 1", "GPT-4o / Lanna", "translation_en_to_dialect_delta", "9.90", "9.91"),
    ("Limkonchotiwat et al. Table 1", "GPT-4o / Dambro", "translation_en_to_dialect_delta", "8.97", "8.98"),
}


@pytest.fixture(scope="module")
def checks():
    return paper.check_published(DATA)


def test_mismatches_are_exactly_the_known_inconsistent_cells(checks):
    found = {tuple(r) for r in paper.mismatches(checks)[["table", "row", "column", "printed", "rounded"]].to_numpy()}
    assert found == KNOWN_INCONSISTENT


def test_every_table_and_cell_is_checked(checks):
    counts = checks.groupby("table").size().to_dict()
    assert counts == {
        "Kim et al. Table 1": 6,  # six dataset sizes
        "Kim et al. Table 3": 2,  # factoid and instruction totals
        "Kim et al. Table 4": 6,  # six models' averages
        "Kim et al. Table 5": 12,  # twelve models' averages
        "Limkonchotiwat et al. Table 1": 72,  # 6 models x 3 dialects x 4 deltas
        "Limkonchotiwat et al. Table 2": 12,  # 4 pairs x 3 dialects
        "Limkonchotiwat et al. Table 3": 6,
        "Limkonchotiwat et al. Table 4": 3,
        "Limkonchotiwat et al. Table 5": 9,
        "Limkonchotiwat et al. Table 6": 2,
    }
    assert list(checks.columns) == ["table", "row", "column", "rule", "printed", "recomputed", "rounded", "match"]


def _cell(checks, row, column):
    hit = checks[(checks["row"] == row) & (checks["column"] == column)]
    assert len(hit) == 1
    return hit.iloc[0]


def test_recomputed_values_are_exact_decimals(checks):
    qwen = _cell(checks, "Qwen2-72B-Instruct", "thai_h6_avg")
    assert qwen["recomputed"] == Decimal("412.85") / 6
    sailor = _cell(checks, "Sailor-14B-Chat", "thai_h6_avg")
    assert sailor["recomputed"] == Decimal("56.105") and sailor["rounded"] == "56.11" and sailor["match"]
    turbo = _cell(checks, "GPT-4 Turbo", "thaicli_avg")
    assert turbo["recomputed"] == Decimal("7.305") and turbo["rounded"] == "7.31" and turbo["match"]
    typhoon_lanna = _cell(checks, "Typhoon / Lanna", "avg")  # (10.71 + 13.22) / 2 = 11.965 -> 11.97
    assert typhoon_lanna["rounded"] == "11.97" and typhoon_lanna["match"]
    gpt4o_isan = _cell(checks, "GPT-4o / Isan", "translation_en_to_dialect_delta")
    assert gpt4o_isan["recomputed"] == Decimal("7.636")


def test_delta_sign_and_one_decimal_cells(checks):
    # a dialect scoring above Central gives a negative delta
    assert _cell(checks, "Llama-3.1-70b / Dambro", "qa_delta")["recomputed"] == Decimal("-10.52")
    # "6.0" is printed with one decimal: 17.70 - 11.70 rounds to 6.0
    gemini = _cell(checks, "Gemini2 / Lanna", "summarization_delta")
    assert gemini["rounded"] == "6.0" and gemini["match"]


def test_totals_and_kappa_means(checks):
    assert _cell(checks, "factoid", "n_samples (sum over themes)")["recomputed"] == 1790
    assert _cell(checks, "instruction", "n_samples (sum over themes)")["recomputed"] == 100
    gen = _cell(checks, "mean over dialects", "generation")
    assert gen["recomputed"] == Decimal("2.3907") / 3 and gen["rounded"] == "0.7969"
    flu = _cell(checks, "mean over dialects", "fluency")
    assert flu["rounded"] == "0.7449" and flu["match"]
    pref = _cell(checks, "Gemini2 vs Typhoon1.5-70b / Dambro", "prefer_a+prefer_b+both+none")
    assert pref["recomputed"] == 20 and pref["printed"] == "20"


def test_a_changed_cell_is_found(tmp_path):
    tables = paper.load_all_published(DATA)
    tables["thaicli"].loc[tables["thaicli"]["model"] == "GPT-4o", "factoid"] = "8.44"  # avg now 8.395 -> 8.40
    tables["dialect_preference"].loc[0, "none"] = "18"  # row sums to 19, not 20
    tables["dialect_overlap"].loc[0, "qa"] = "1.2"
    bad = paper.mismatches(paper.check_published(tables=tables))
    found = {(r, None if pd.isna(v) else v) for r, v in bad[["row", "rounded"]].to_numpy()}
    assert {("GPT-4o", "8.40"), ("Typhoon1.5-8b vs Llama3.1-8b / Isan", "19"), ("Isan", None)} <= found
    assert len(bad) == len(KNOWN_INCONSISTENT) + 3


@pytest.mark.parametrize(
    "value, decimals, expected",
    [
        ("7.305", 2, "7.31"),
        ("56.105", 2, "56.11"),
        ("11.965", 2, "11.97"),
        ("0.125", 2, "0.13"),  # round() gives 0.12 (banker's)
        ("2.5", 0, "3"),  # round() gives 2
        ("-0.045", 2, "-0.05"),  # ties go away from zero
        ("7.30499", 2, "7.30"),
        (Decimal("68.808333"), 2, "68.81"),
        (7.305, 2, "7.31"),  # a float goes through its repr, not its binary value 7.30499999...
        (17, 1, "17.0"),
    ],
)
def test_round_half_up(value, decimals, expected):
    assert str(paper.round_half_up(value, decimals)) == expected


def test_python_round_would_disagree():
    assert round(0.125, 2) == 0.12 and round(7.305, 2) == 7.3  # why the module never uses round()


@pytest.mark.parametrize("printed, decimals", [("7.30", 2), ("6.0", 1), ("1222", 0), ("21.926", 3), ("1,790", 0), (" 0.93318 ", 5)])
def test_decimals_of(printed, decimals):
    assert paper.decimals_of(printed) == decimals


def test_printed_strings_kept():
    h6 = paper.load_published("h6", DATA)
    assert h6.loc[h6["model"] == "Qwen2-72B-Instruct", "thai_h6_avg"].item() == "68.80"
    auto = paper.load_published("dialect_auto", DATA)
    assert auto.loc[(auto["model"] == "Gemini2") & (auto["dialect"] == "Lanna"), "summarization_delta"].item() == "6.0"
    assert auto.loc[auto["dialect"] == "Central", "qa_delta"].eq("").all()


def test_numeric_view():
    auto = paper.numeric(paper.load_published("dialect_auto", DATA))
    assert auto["qa_rougeL"].dtype == float and not pd.api.types.is_numeric_dtype(auto["model"])
    assert auto.loc[auto["dialect"] == "Central", "qa_delta"].isna().all()
    assert auto.loc[(auto["model"] == "GPT-4o") & (auto["dialect"] == "Central"), "translation_en_to_dialect_bleu"].item() == 21.926


def test_bad_cell_and_missing_file(tmp_path):
    with pytest.raises(ThaiEvalDataError, match="published table not found"):
        paper.load_published("h6", tmp_path)
    tables = paper.load_all_published(DATA)
    tables["h6"].loc[2, "th_arc"] = "n/a"
    with pytest.raises(ThaiEvalDataError, match="not a number: 'n/a'"):
        paper.check_published(tables=tables)
    with pytest.raises(KeyError, match="unknown published table"):
        paper.load_published("table9", DATA)
