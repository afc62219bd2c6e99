"""paper: the published tables rebuilt from their parts, half-up rounding, and own runs beside them."""

from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from fakes import FakeModel

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.paper import own_runs as paper_runs
from thai_eval_utils.paper import published as paper
from thai_eval_utils.core.tables import round_half_up

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "thai_eval_utils" / "paper" / "published_tables"

#: The cells the tables' README (paper/published_tables/) describes as inconsistent in the papers: the checks must find these and no other.
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
    assert str(round_half_up(value, decimals)) == expected


def test_python_round_would_disagree():
    assert round(0.125, 2) == 0.12 and round(7.305, 2) == 7.3  # why the module never uses round()


@pytest.mark.parametrize(
    "printed, decimals", [("7.30", 2), ("6.0", 1), ("1222", 0), ("21.926", 3), ("1,790", 0), (" 0.93318 ", 5)]
)
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
    assert (
        auto.loc[(auto["model"] == "GPT-4o") & (auto["dialect"] == "Central"), "translation_en_to_dialect_bleu"].item()
        == 21.926
    )


def test_bad_cell_and_missing_file(tmp_path):
    with pytest.raises(ThaiEvalDataError, match="published table not found"):
        paper.load_published("h6", tmp_path)
    tables = paper.load_all_published(DATA)
    tables["h6"].loc[2, "th_arc"] = "n/a"
    with pytest.raises(ThaiEvalDataError, match="not a number: 'n/a'"):
        paper.check_published(tables=tables)
    with pytest.raises(KeyError, match="unknown published table"):
        paper.load_published("table9", DATA)


# ------------------------------------------------------------------------------ own runs beside the paper
from thai_eval_utils.core.provenance import Score  # noqa: E402
from thai_eval_utils.core.store import RunStore  # noqa: E402

H6_HEADLINES = {
    "th_arc": "acc_norm",
    "th_hellaswag": "acc_norm",
    "th_mmlu": "acc",
    "th_truthfulqa": "mc2",
    "th_winogrande": "acc",
    "th_gsm8k": "exact_match",
}
LB_SHOTS = {"th_arc": 25, "th_hellaswag": 10, "th_mmlu": 5, "th_truthfulqa": 0, "th_winogrande": 5, "th_gsm8k": 5}
FULL_SIZES = {
    "th_arc": 1222,
    "th_hellaswag": 10052,
    "th_mmlu": 14585,
    "th_truthfulqa": 817,
    "th_winogrande": 1272,
    "th_gsm8k": 1324,
}


def _h6_run(outputs, model, task, value, n, *, limit=None, shots=5, finished=True):
    store = RunStore.open(
        model, f"thai_h6/{task}", {"task": task, "num_fewshot": shots, "sampler": "lb"}, outputs=outputs
    )
    store.append("0-abc", {"doc": 0})
    if finished:
        metric = H6_HEADLINES[task]
        store.write_summary(
            {
                "task": task,
                "n": n,
                "n_docs": n,
                "limit": limit,
                "scores": {
                    metric: Score(f"{task}/{metric}", value, n, 0.01).to_dict(),
                    "extra": {"value": 0.99, "n": n},
                },
            }
        )
    return store


@pytest.fixture
def outputs(tmp_path):
    out = tmp_path / "outputs"
    # a full Thai-H6 run: six tasks, each at the paper's size; scores 0.40 .. 0.65 -> mean 52.5
    for i, task in enumerate(H6_HEADLINES):
        _h6_run(out, "full-model", task, 0.40 + 0.05 * i, FULL_SIZES[task], shots=LB_SHOTS[task])
    # a partial one: ARC limited to 2 items, GSM8K unfinished (no summary)
    _h6_run(out, "demo-model", "th_arc", 0.5, 2, limit=2, shots=25)
    _h6_run(out, "demo-model", "th_gsm8k", 0.0, 0, finished=False)
    judge = RunStore.open("full-model", "thaicli/judge", {"judge": {"model": "gpt-4o-2024-05-13"}}, outputs=out)
    judge.write_summary(
        {
            "n_unjudged": 0,
            "scores": {
                "thaicli": Score("thaicli", 7.305, 1890).to_dict(),
                "factoid": Score("factoid", 7.56, 1790).to_dict(),
                "instruction": Score("instruction", 7.05, 100).to_dict(),
            },
        }
    )
    judge = RunStore.open("demo-model", "thaicli/judge", {"judge": {"model": "local"}}, outputs=out)
    judge.write_summary(
        {
            "n_unjudged": 1,
            "scores": {
                "thaicli": Score("thaicli", 5.0, 3).to_dict(),
                "factoid": Score("factoid", 6.0, 2).to_dict(),
                "instruction": Score("instruction", 4.0, 1).to_dict(),
            },
        }
    )
    loglik = RunStore.open("demo-model", "thaicli/loglik", {"context_template": "Q"}, outputs=out)
    loglik.write_summary(
        {"scores": {"win_raw": Score("win_raw", 0.625, 3).to_dict(), "win_norm": Score("win_norm", 0.5, 3).to_dict()}}
    )
    scores = {
        f"{d}/{t}/{m}": Score(f"{d}/{t}/{m}", v, 20).to_dict()  # as dialect.run_generation writes them
        for d, base in (("center", 40.0), ("east", 30.0), ("north", 42.5))
        for t, m, v in (
            ("qa", "rougeL", base),
            ("summarization", "rougeL", base / 2),
            (f"translation_eng_{d}", "bleu", base / 4),
            (f"translation_{d}_eng", "bleu", base / 5),
            ("qa", "sacrebleu", 99.0),
        )
    }
    RunStore.open("full-model", "dialect/generation", {"temperature": 0.2}, outputs=out).write_summary(
        {
            "n_items": 300,
            "scores": scores,
            "delta_diff": {"east/qa/rougeL": Score("east/qa/rougeL", 123.0, 20).to_dict()},
        }
    )
    unscored = RunStore.open("demo-model", "dialect/generation", {"temperature": 0.0}, outputs=out)
    for k in range(3):
        unscored.append(f"east/food/{k}", {"output": "x"})
    unscored.write_summary({"n_items": 3, "scores": {}, "delta_diff": {}})  # food only: nothing to score
    RunStore.open("full-model", "other/bench", {}, outputs=out).write_summary({"x": 1})  # no adapter: ignored
    return out


def test_run_records_read_full_and_partial_summaries(outputs):
    recs = paper_runs.run_records(outputs, paper.load_all_published(DATA))
    assert set(recs["benchmark"]) == {"thai_h6/" + t for t in H6_HEADLINES} | {
        "thaicli/judge",
        "thaicli/loglik",
        "dialect/generation",
    }
    arc = recs[(recs["model"] == "demo-model") & (recs["column"] == "th_arc")].iloc[0]
    assert (arc["value"], arc["n"], arc["expected_n"], arc["partial"], arc["finished"]) == (50.0, 2, 1222, True, True)
    gsm = recs[(recs["model"] == "demo-model") & (recs["column"] == "th_gsm8k")].iloc[0]
    assert pd.isna(gsm["value"]) and gsm["n"] == 1 and gsm["partial"] and not gsm["finished"]
    full = recs[(recs["model"] == "full-model") & (recs["table"] == "h6")]
    assert not full["partial"].any() and len(full) == 6
    assert '"num_fewshot": 25' in full["options"].iloc[0] and set(full["setting"]) == {""}
    unjudged = recs[(recs["model"] == "demo-model") & (recs["column"] == "factoid")].iloc[0]
    assert unjudged["partial"] and unjudged["expected_n"] == 1790
    # only the paper's headline metrics of the dialect table are read (sacrebleu is not a Table 1 column)
    assert len(recs[(recs["model"] == "full-model") & (recs["table"] == "dialect_auto")]) == 12


def test_h6_table_with_runs(outputs):
    table = paper_runs.table_with_runs("h6", paper.load_all_published(DATA), outputs)
    assert table["source"].tolist() == ["paper"] * 6 + ["thai-eval run"] * 2
    full = table[table["model"] == "full-model"].iloc[0]
    assert full["thai_h6_avg"] == "52.50" and full["th_arc"] == "40.00" and full["th_gsm8k"] == "65.00"
    assert not full["partial"] and "th_arc 1222/1222" in full["samples"]
    demo = table[table["model"] == "demo-model"].iloc[0]
    assert demo["partial"] and demo["thai_h6_avg"] == "" and demo["th_arc"] == "50.00" and demo["th_mmlu"] == ""
    assert "th_arc 2/1222" in demo["samples"] and "th_gsm8k 1/1324" in demo["samples"]
    assert demo["options"] == 'num_fewshot=5/25, sampler="lb"'  # the unfinished GSM8K run (5 shots) first
    paper_rows = table[table["source"] == "paper"]
    assert paper_rows["thai_h6_avg"].tolist() == paper.load_published("h6", DATA)["thai_h6_avg"].tolist()


def test_differently_configured_runs_are_separate_rows(outputs):
    """A 0-shot ARC run of a model does not replace (or merge into) its 25-shot run's row; each row says
    its setting and config ids."""
    _h6_run(outputs, "full-model", "th_arc", 0.9, 3, limit=3, shots=0)
    table = paper_runs.table_with_runs("h6", paper.load_all_published(DATA), outputs)
    rows = table[table["model"] == "full-model"].set_index("setting")
    assert sorted(rows.index) == ["", "shots:0"]
    assert (
        rows.loc["", "th_arc"] == "40.00"
        and not rows.loc["", "partial"]
        and len(rows.loc["", "config_ids"].split()) == 6
    )
    zero = rows.loc["shots:0"]
    assert zero["th_arc"] == "90.00" and zero["partial"] and zero["samples"] == "th_arc 3/1222"
    assert len(zero["config_ids"]) == 12


def test_thaicli_table_with_runs(outputs):
    table = paper_runs.table_with_runs("thaicli", paper.load_all_published(DATA), outputs)
    full = table[table["model"] == "full-model"].iloc[0]
    assert (full["thaicli_avg"], full["factoid"], full["instruction"], full["partial"]) == (
        "7.31",
        "7.56",
        "7.05",
        False,
    )
    demo = table[table["model"] == "demo-model"].iloc[0]
    assert demo["partial"] and demo["thaicli_avg"] == "5.00"
    assert (demo["loglik_win_raw"], demo["loglik_win_norm"]) == ("62.50", "50.00")
    assert table.loc[table["source"] == "paper", "loglik_win_raw"].eq("").all()


def test_dialect_table_with_runs_recomputes_deltas(outputs):
    table = paper_runs.table_with_runs("dialect_auto", paper.load_all_published(DATA), outputs)
    runs = table[table["source"] == "thai-eval run"].set_index(["model", "dialect"])
    assert (
        runs.loc[("full-model", "Central"), "qa_rougeL"] == "40.00"
        and runs.loc[("full-model", "Central"), "qa_delta"] == ""
    )
    isan = runs.loc[("full-model", "Isan")]
    assert (isan["qa_rougeL"], isan["qa_delta"], isan["summarization_delta"]) == ("30.00", "10.00", "5.00")
    assert isan["translation_en_to_dialect_delta"] == "2.50" and isan["translation_dialect_to_en_delta"] == "2.00"
    assert runs.loc[("full-model", "Lanna"), "qa_delta"] == "-2.50"  # the dialect above Central: negative
    unscored = table[(table["model"] == "demo-model")].iloc[0]
    assert unscored["partial"] and unscored["samples"] == "3 items, not scored"


def test_no_runs_and_runs_excluded(tmp_path, outputs):
    tables = paper.load_all_published(DATA)
    empty = paper_runs.table_with_runs("h6", tables, tmp_path / "nothing")
    assert empty["source"].eq("paper").all() and len(empty) == 6
    assert paper_runs.table_with_runs("h6", tables, outputs, include_runs=False)["source"].eq("paper").all()
    overlap = paper_runs.table_with_runs("dialect_overlap", tables, outputs)
    assert list(overlap.columns) == ["source", "dialect", "summarization", "qa", "translation"]


def test_expected_sizes():
    sizes = paper_runs.expected_sizes(paper.load_all_published(DATA))
    assert sizes["th_arc"] == 1222 and sizes["th_gsm8k"] == 1324 and sizes["th_winogrande"] == 1272
    assert sizes["thaicli/factoid"] == 1790 and sizes["thaicli/instruction"] == 100
    assert sizes["dialect/qa"] == 20 and sizes["dialect/translation_en_to_dialect"] == 20


def test_rank_agreement_hand_computed():
    h6 = paper.numeric(paper.load_published("h6", DATA)).set_index("model")["thai_h6_avg"]
    cli = paper.numeric(paper.load_published("thaicli", DATA)).set_index("model")["thaicli_avg"]
    agreement = paper.rank_agreement(h6, cli)
    # ranks H6: Qwen 1, Typhoon 2, L70 3, Sailor 4, L8 5, SeaLLMs 6; ThaiCLI: 2, 3, 5, 4, 6, 1
    assert agreement.n == 6  # only the open models are in both tables
    assert agreement.spearman == pytest.approx(1 - 6 * 32 / (6 * 35))  # sum d^2 = 32
    assert agreement.kendall == pytest.approx((9 - 6) / 15)  # 9 concordant, 6 discordant pairs
    assert "Spearman rho = 0.086" in str(agreement)


def test_paper_tables_notebook_runs(tmp_path, outputs, monkeypatch):
    """papermill run of notebooks/paper_tables.ipynb (no model): tables, mismatches, runs and figures written; on a
    store that also holds tests/paper_store.py's runs (superseded, unfinished, one task at two configurations), each
    model's latest finished run in the tables and the skipped runs listed with their reasons."""
    import nbformat
    import papermill
    from paper_store import add_mixed_runs

    ids = add_mixed_runs(outputs, monkeypatch)
    repo = REPO
    executed = tmp_path / "paper_tables.ipynb"
    papermill.execute_notebook(
        str(repo / "notebooks" / "paper_tables.ipynb"),
        str(executed),
        cwd=str(repo / "notebooks"),
        parameters={"outputs_dir": str(outputs)},
        progress_bar=False,
    )
    text = "\n".join(
        o.get("text", "") for c in nbformat.read(executed, as_version=4).cells for o in c.get("outputs", [])
    )
    assert "6 of 130 checked cells differ from their recomputed value" in text
    mismatching = pd.read_csv(outputs / "tables" / "paper_mismatches.csv", dtype=str)
    assert set(zip(mismatching["row"], mismatching["printed"], mismatching["rounded"])) == {
        k[1:2] + k[3:] for k in KNOWN_INCONSISTENT
    }
    h6 = pd.read_csv(outputs / "tables" / "paper_h6.csv", dtype=str, keep_default_na=False)
    assert h6.loc[h6["model"] == "full-model", ["source", "thai_h6_avg"]].values.tolist() == [
        ["thai-eval run", "52.50"]
    ]
    small = h6[h6["model"].str.startswith("small-")].sort_values(["model", "setting"])
    assert small[["model", "setting", "thai_h6_avg", "th_arc"]].values.tolist() == [
        ["small-a", "", "43.33", "50.00"],
        ["small-a", "shots:0", "", "90.00"],
        ["small-b", "", "50.00", "25.00"],
        ["small-c", "", "", ""],
    ]
    skipped = pd.read_csv(outputs / "tables" / "paper_skipped_runs.csv", dtype=str, keep_default_na=False)
    assert skipped.loc[skipped["model"] == "full-model", ["benchmark", "reason"]].values.tolist() == [
        ["other/bench", "not in the papers' tables"]
    ]
    skipped = skipped[skipped["model"] != "full-model"]
    assert sorted(zip(skipped["config_id"], skipped["reason"])) == sorted(
        [
            (ids["a_other"], "not in the papers' tables"),
            (ids["a_arc_old"], "superseded by a later run"),
            (ids["a_gsm8k_rerun"], "unfinished"),
            (ids["b_mmlu_old"], "superseded by a later run"),
            (ids["b_judge_old"], "superseded by a later run"),
            (ids["c_arc_old"], "unfinished"),
        ]
    )
    assert "7 stored runs are not in the tables" in text
    for suffix in ("md", "tex"):
        assert (outputs / "tables" / f"paper_dialect_auto.{suffix}").exists()
    figures = {p.name for p in (outputs / "figures").iterdir()}
    for name in (
        "thai_h6_task_scores",
        "thai_h6_vs_thaicli",
        "thaicli_factoid_vs_instruction",
        "dialect_delta_heatmap",
        "dialect_preference",
        "dialect_generation_fluency",
    ):
        assert {f"paper_{name}.png", f"paper_{name}.svg"} <= figures


def test_paper_tables_notebook_is_committed_without_outputs():
    import nbformat

    nb = nbformat.read(REPO / "notebooks" / "paper_tables.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].metadata.get("tags") == ["parameters"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    for line in code[0].source.splitlines():  # only `name = value  # help` lines
        assert " = " in line and "  # " in line


def test_dialect_scores_from_the_notebooks_table(tmp_path):
    """Runs made before the summary held scores: the score table the dialect notebook saved is read instead."""
    out = tmp_path / "outputs"
    store = RunStore.open("Qwen/Qwen2.5-0.5B", "dialect/generation", {"temperature": 0.0}, outputs=out)
    store.write_summary({"n_items": 8})  # an old summary (no "scores"); the notebook saved the scores as a table
    (out / "tables").mkdir(parents=True)
    pd.DataFrame(
        [
            {
                "model": "Qwen/Qwen2.5-0.5B",
                "dialect": "center",
                "task": "qa",
                "table_task": "qa",
                "metric": "rougeL",
                "value": 31.0,
                "n": 2,
            },
            {
                "model": "Qwen/Qwen2.5-0.5B",
                "dialect": "south",
                "task": "qa",
                "table_task": "qa",
                "metric": "rougeL",
                "value": 20.5,
                "n": 2,
            },
            {
                "model": "Qwen/Qwen2.5-0.5B",
                "dialect": "south",
                "task": "qa",
                "table_task": "qa",
                "metric": "chrf",
                "value": 50.0,
                "n": 2,
            },
        ]
    ).to_csv(out / "tables" / "dialect_scores_Qwen_Qwen2.5-0.5B.csv", index=False)
    table = paper_runs.table_with_runs("dialect_auto", paper.load_all_published(DATA), out)
    south = table[(table["source"] == "thai-eval run") & (table["dialect"] == "Dambro")].iloc[0]
    assert (south["model"], south["qa_rougeL"], south["qa_delta"]) == ("Qwen/Qwen2.5-0.5B", "20.50", "10.50")
    assert south["partial"] and south["samples"] == "qa_rougeL 2/20"


def test_reads_a_real_h6_run(tmp_path):
    """Integration: a run written by h6.evaluate (fake model) lands in Kim et al. Table 4's layout."""
    from thai_eval_utils.h6 import evaluation as h6

    # log-likelihood = -(characters of the continuation): acc picks the shortest choice
    length_lm = FakeModel("length-lm", score=lambda ctx, cont: (-float(len(cont)), False))
    # choices " ก" (ll -2, per char -2), " ขข" (-3, -1.5), " คคค" (-4, -1.33): acc_norm picks C, acc picks A
    docs = [
        {"question": f"q{i}", "choices": {"text": ["ก", "ขข", "คคค"], "label": ["A", "B", "C"]}, "answerKey": "C"}
        for i in range(4)
    ]
    h6.evaluate(
        length_lm,
        "th_arc",
        docs,
        h6.LEADERBOARD.replace(num_fewshot=0),
        fewshot_pool=docs,
        limit=3,
        outputs=tmp_path,
        progress=False,
    )
    row = paper_runs.table_with_runs("h6", paper.load_all_published(DATA), tmp_path).iloc[-1]
    assert (row["source"], row["model"], row["th_arc"], row["thai_h6_avg"]) == (
        "thai-eval run",
        "length-lm",
        "100.00",
        "",
    )
    assert row["partial"] and row["samples"] == "th_arc 3/1222" and "num_fewshot=0" in row["options"]


def test_reads_a_real_dialect_run(tmp_path):
    """Integration: a run written by dialect.run_generation lands in Limkonchotiwat et al. Table 1's layout with
    the summary's scores (no score table needed); ΔDiff = Central minus Isan as computed directly."""
    from thai_eval_utils.dialect.data import load_dialect

    from thai_eval_utils.dialect import generation as D
    from thai_eval_utils.dialect import metrics as M

    items = D.select_items(
        load_dialect(REPO / "data" / "dialect", dialects=["center", "east"]),
        tasks=["qa", "translation_en_to_dialect"],
        limit=2,
    )
    prompts = D.load_prompts()  # Central answers: the reference; Isan: its first half
    answers = {
        D.build_prompt(it, prompts): it["text_2"]
        if it["dialect"] == "center"
        else it["text_2"][: len(it["text_2"]) // 2]
        for it in items.to_dict("records")
    }
    half_ref = FakeModel("half-ref", reply=lambda messages: answers[messages[-1]["content"]])
    out = D.run_generation(half_ref, items, outputs=tmp_path, progress=False)
    assert not (tmp_path / "tables").exists()

    def direct(metric, dialect, task):
        part = out[(out["dialect"] == dialect) & (out["task"] == task)]
        return metric(list(part["output"]), list(part["text_2"]))

    recs = paper_runs.run_records(tmp_path, paper.load_all_published(DATA)).set_index(["dialect", "column"])
    assert set(recs.index) == {
        (d, c) for d in ("Central", "Isan") for c in ("qa_rougeL", "translation_en_to_dialect_bleu")
    }
    assert recs.loc[("Isan", "qa_rougeL"), "value"] == pytest.approx(direct(M.rouge_l, "east", "qa"))
    assert recs.loc[("Isan", "translation_en_to_dialect_bleu"), "value"] == pytest.approx(
        direct(M.bleu, "east", "translation_eng_east")
    )
    assert recs.loc[("Central", "qa_rougeL"), "value"] == pytest.approx(100.0)
    assert (
        (recs["n"] == 2).all() and (recs["expected_n"] == 20).all() and recs["partial"].all() and recs["finished"].all()
    )
    table = paper_runs.table_with_runs("dialect_auto", paper.load_all_published(DATA), tmp_path)
    isan = table[(table["source"] == "thai-eval run") & (table["dialect"] == "Isan")].iloc[0]
    qa_delta = direct(M.rouge_l, "center", "qa") - direct(M.rouge_l, "east", "qa")
    assert isan["qa_delta"] == str(round_half_up(qa_delta, 2)) and qa_delta > 0
    bleu_delta = direct(M.bleu, "center", "translation_eng_center") - direct(M.bleu, "east", "translation_eng_east")
    assert isan["translation_en_to_dialect_delta"] == str(round_half_up(bleu_delta, 2))
    assert isan["qa_rougeL"] == str(round_half_up(direct(M.rouge_l, "east", "qa"), 2)) and isan["qa_rougeL"] != ""


def test_the_paper_package_exports_published_tables_and_own_runs():
    from thai_eval_utils import paper
    from thai_eval_utils.paper import own_runs, published

    for name in (
        "run_records",
        "table_with_runs",
        "expected_sizes",
        "h6_with_runs",
        "thaicli_with_runs",
        "dialect_with_runs",
        "WITH_RUNS",
        "RUN_ADAPTERS",
        "RUN_RECORD_COLUMNS",
        "DIALECT_DISPLAY",
    ):
        assert getattr(paper, name) is getattr(own_runs, name) and name in paper.__all__
    for name in ("check_published", "mismatches", "load_all_published", "numeric", "rank_agreement", "CENTRAL"):
        assert getattr(paper, name) is getattr(published, name) and name in paper.__all__
    with pytest.raises(AttributeError):
        paper.no_such_name  # noqa: B018


def test_the_dialect_names_are_written_once():
    """The paper's dialect names are the dialect benchmark's own dict, not a second copy of it."""
    from thai_eval_utils.dialect.metrics import DIALECT_NAMES
    from thai_eval_utils.paper.own_runs import DIALECT_DISPLAY

    assert DIALECT_DISPLAY is DIALECT_NAMES
