"""The paper tables on a researcher's store (tests/paper_store.py): unfinished runs, runs superseded by later ones,
two limits, three models and one Thai-H6 task at two configurations. Each model's cell shows its latest finished
run's numbers, every figure builds (``h6_vs_thaicli`` stopped with "cannot reindex on an axis with duplicate
labels" on such a store), and the skipped runs are listed with their reasons, by the library and ``thai-eval tables``."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from paper_store import add_mixed_runs

from thai_eval_utils import paper
from thai_eval_utils.cli import main
from thai_eval_utils.plots import paper as paper_plots

DATA = Path(__file__).resolve().parent.parent / "thai_eval_utils" / "paper" / "published_tables"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The store, its config ids and the paper tables built on it (read only by the tests)."""
    out = tmp_path_factory.mktemp("mixed") / "outputs"
    with pytest.MonkeyPatch.context() as patch:
        ids = add_mixed_runs(out, patch)
    published = paper.load_all_published(DATA)
    records = paper.run_records(out, published)
    tables = {key: paper.table_with_runs(key, published, out, records=records) for key in paper.PUBLISHED_TABLES}
    return out, ids, tables


def test_each_model_shows_its_latest_finished_run(mixed):
    _, ids, tables = mixed
    runs = tables["h6"][tables["h6"]["source"] == paper.RUN_SOURCE]
    assert sorted(runs[["model", "setting"]].values.tolist()) == [
        ["small-a", ""],
        ["small-a", "shots:0"],
        ["small-b", ""],
        ["small-c", ""],
    ]
    rows = runs.set_index(["model", "setting"])
    a = rows.loc[("small-a", "")]  # ARC 50.00 from the later run, not the older 20.00; GSM8K the finished run's
    assert [
        a[c] for c in ("thai_h6_avg", "th_arc", "th_hellaswag", "th_mmlu", "th_truthfulqa", "th_winogrande", "th_gsm8k")
    ] == ["43.33", "50.00", "40.00", "30.00", "60.00", "70.00", "10.00"]
    assert a["partial"] and "th_arc 3/1222" in a["samples"] and ids["a_arc_old"] not in a["config_ids"]
    assert sorted(a["config_ids"].split()) == sorted(ids[f"a_{t}"] for t in paper.H6_TASKS)
    zero = rows.loc[("small-a", "shots:0")]
    assert (zero["th_arc"], zero["thai_h6_avg"], zero["config_ids"]) == ("90.00", "", ids["a_arc_0shot"])
    b = rows.loc[("small-b", "")]  # MMLU 45.00 from the later run, not the older (and higher) 95.00
    assert (b["thai_h6_avg"], b["th_mmlu"], b["th_gsm8k"]) == ("50.00", "45.00", "75.00")
    c = rows.loc[("small-c", "")]  # nothing finished: the later unfinished run, as progress
    assert c["partial"] and c["th_arc"] == "" and c["samples"] == "th_arc 1/1222" and c["config_ids"] == ids["c_arc"]
    cli = tables["thaicli"][tables["thaicli"]["source"] == paper.RUN_SOURCE].set_index("model")
    assert cli.loc["small-a", ["thaicli_avg", "factoid", "instruction"]].tolist() == ["6.00", "6.50", "5.50"]
    assert cli.loc["small-b", ["thaicli_avg", "factoid", "instruction"]].tolist() == ["4.00", "4.50", "3.50"]
    assert cli.loc["small-b", "config_ids"] == ids["b_judge"] and len(cli) == 2


def test_every_paper_figure_builds(mixed):
    _, _, tables = mixed
    fig = paper_plots.h6_vs_thaicli(tables["h6"], tables["thaicli"])
    points = {t.get_text(): t.xy for t in fig.axes[0].texts}
    assert points["small-a (thai-eval, partial)"] == pytest.approx((43.33, 6.0))  # the printed cell, 260 / 6
    assert points["small-b (thai-eval, partial)"] == pytest.approx((50.0, 4.0))
    assert len(points) == 8  # the six published open models and the two runs with a Thai-H6 average
    plt.close(fig)
    fig = paper_plots.h6_task_scores(tables["h6"])
    labels = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert {
        "small-a (thai-eval, partial)",
        "small-a (thai-eval, shots:0, partial)",
        "small-b (thai-eval, partial)",
    } <= labels
    plt.close(fig)
    for name, (draw, keys) in paper_plots.PAPER_FIGURES.items():
        plt.close(draw(*(tables[k] for k in keys)))


def test_a_repeated_row_never_reaches_the_join():
    """A table holding one row twice (a concatenated table) draws; the first row of the label counts."""
    published = paper.load_all_published(DATA)
    fig = paper_plots.h6_vs_thaicli(pd.concat([published["h6"], published["h6"]]), published["thaicli"])
    assert len(fig.axes[0].texts) == 6
    plt.close(fig)


def test_the_skipped_runs_and_why(mixed):
    out, ids, _ = mixed
    skipped = paper.skipped_runs(out)
    assert list(skipped.columns) == paper.SKIPPED_COLUMNS
    got = skipped[["model", "benchmark", "config_id", "finished", "reason"]].values.tolist()
    assert got == [
        ["small-a", "other/bench", ids["a_other"], True, "not in the papers' tables"],
        ["small-a", "thai_h6/th_arc", ids["a_arc_old"], True, "superseded by a later run"],
        ["small-a", "thai_h6/th_gsm8k", ids["a_gsm8k_rerun"], False, "unfinished"],
        ["small-b", "thai_h6/th_mmlu", ids["b_mmlu_old"], True, "superseded by a later run"],
        ["small-b", "thaicli/judge", ids["b_judge_old"], True, "superseded by a later run"],
        ["small-c", "thai_h6/th_arc", ids["c_arc_old"], False, "unfinished"],
    ]
    detail = dict(zip(skipped["config_id"], skipped["detail"]))
    assert detail[ids["a_arc_old"]].startswith(f"the later finished run {ids['a_th_arc']} (2030-01-01T00:00:")
    assert detail[ids["a_arc_old"]].endswith(") is shown; other limit: 2 here, 3 there")
    assert detail[ids["b_mmlu_old"]].endswith(") is shown") and "limit" not in detail[ids["b_mmlu_old"]]
    assert detail[ids["a_gsm8k_rerun"]].startswith(f"the finished run {ids['a_th_gsm8k']} (")
    assert detail[ids["c_arc_old"]].startswith(f"the later unfinished run {ids['c_arc']} (")
    assert detail[ids["c_arc_old"]].endswith("no run of this model, benchmark and setting has finished")
    assert detail[ids["a_other"]] == "no paper table reads other runs"
    assert skipped.loc[skipped["config_id"] == ids["a_arc_old"], "limit"].item() == 2


def test_the_records_mark_the_shown_runs(mixed):
    out, ids, _ = mixed
    records = paper.run_records(out, paper.load_all_published(DATA))
    shown = records.groupby("config_id")["shown"].all()
    assert not shown[
        [ids["a_arc_old"], ids["a_gsm8k_rerun"], ids["b_mmlu_old"], ids["b_judge_old"], ids["c_arc_old"]]
    ].any()
    assert shown[[ids["a_th_arc"], ids["a_arc_0shot"], ids["a_th_gsm8k"], ids["b_judge"], ids["c_arc"]]].all()


def test_the_tables_command_prints_the_skipped_runs(mixed, monkeypatch, capsys):
    """``thai-eval tables`` (its notebook run stubbed: tests/test_paper.py runs the notebook) says which runs it left
    out and why."""
    out, ids, _ = mixed

    class Done:
        ok = True

        def summary(self) -> str:
            return "1/1 notebook runs succeeded."

    monkeypatch.setattr("thai_eval_utils.cli.commands.notebook_runs.run_models", lambda *a, **k: Done())
    assert main(["tables", "--outputs", str(out)]) == 0
    printed = capsys.readouterr().out.split("stored runs not in the tables, and why:")[1].splitlines()
    header = printed[1].split()
    assert header[:5] == ["model", "benchmark", "setting", "config_id", "finished"]
    rows = [line for line in printed[3:] if line.strip()]
    assert len(rows) == 6
    assert any(ids["b_judge_old"] in r and "superseded by a later run" in r and "small-b" in r for r in rows)
    assert any(ids["a_gsm8k_rerun"] in r and " unfinished " in r and "False" in r for r in rows)
