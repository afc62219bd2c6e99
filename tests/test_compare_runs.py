"""Comparing stored runs: run folders written by the real run functions with fake models, matched
by item key, shuffled records, items in one run only, the data-hash refusal, the table, forest plot and the
side-by-side items."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fake_openai_server import FakeOpenAIServer, PerAnswerScript, Reply
from fakes import FakeModel

from thai_eval_utils import h6
from thai_eval_utils.compare import DataMismatchError, mcnemar_exact
from thai_eval_utils.compare.differ import largest_differences
from thai_eval_utils.compare.load import select_runs
from thai_eval_utils.compare.runs import compare_runs
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.dialect import generation as D
from thai_eval_utils.dialect.data import load_dialect
from thai_eval_utils.dialect.metrics import PAPER_BLEU, bleu
from thai_eval_utils.plots.compare import forest_plot
from thai_eval_utils.thaicli.answers import generate_answers
from thai_eval_utils.thaicli.data import load_thaicli
from thai_eval_utils.thaicli.judge import judge_answers

REPO = Path(__file__).resolve().parents[1]
H6_DATA = REPO / "data" / "thai_h6"
R = 999  # resamples in tests


def _score_a(context: str, continuation: str) -> tuple[float, bool]:
    return -((sum(map(ord, context[-40:])) * 31 + sum(map(ord, continuation))) % 97) / 10.0, False


def _score_b(context: str, continuation: str) -> tuple[float, bool]:
    return -float(len(continuation)), False


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("outputs")
    for name, score in (("model-a", _score_a), ("model-b", _score_b)):
        h6.evaluate_tasks(
            FakeModel(name, score=score),
            str(H6_DATA),
            ["th_arc", "th_winogrande"],
            limit=6,
            outputs=out,
            progress=False,
        )
    items = load_dialect(REPO / "data" / "dialect", dialects=["center"])
    items = D.select_items(items, tasks=["qa", "translation_en_to_dialect"], limit=4)
    D.run_generation(
        FakeModel("model-a", reply=lambda m: m[0]["content"][-30:]), items, outputs=out, greedy=True, progress=False
    )
    D.run_generation(
        FakeModel("model-b", reply=lambda m: m[0]["content"][:30]), items, outputs=out, greedy=True, progress=False
    )
    cli = load_thaicli(REPO / "data" / "thaicli").groupby("format").head(3).reset_index(drop=True)
    script = PerAnswerScript(
        {"ข": [Reply("<score>5</score><explanation>พอใช้</explanation>")] * 6},
        default=Reply("<score>7</score><explanation>ดี</explanation>"),
    )
    with FakeOpenAIServer(script) as srv:
        judge = ApiModel("fake-judge", base_url=srv.base_url, api_key="sk-" + "fake0123456789abcdef", concurrency=2)
        for name, answer in (("model-a", "ก"), ("model-b", "ข")):
            answers = generate_answers(FakeModel(name, reply=lambda m, a=answer: a), cli, outputs=out, progress=False)
            judge_answers(answers, judge, outputs=out, progress=False)
    return out


def test_select_latest_runs_by_model_and_by_folder(outputs):
    sel = select_runs("model-a", outputs=outputs)
    assert sorted(sel.runs) == ["dialect/generation", "thai_h6/th_arc", "thai_h6/th_winogrande", "thaicli/judge"]
    by_folder = select_runs(folders=[outputs / "runs" / "model-a" / "thai_h6"], label="A")
    assert sorted(by_folder.runs) == ["thai_h6/th_arc", "thai_h6/th_winogrande"]
    assert by_folder.runs["thai_h6/th_arc"].dir == sel.runs["thai_h6/th_arc"].dir
    with pytest.raises(ValueError, match="either a model name or run folders"):
        select_runs()


def test_table_matches_the_runs_own_scores(outputs):
    cmp = compare_runs("model-a", "model-b", n_resamples=R, outputs=outputs)
    table = cmp.table().set_index("score")
    assert list(table.index) == [
        "thai_h6/th_arc/acc_norm",
        "thai_h6/th_winogrande/acc",
        "thai_h6/average",
        "thaicli/factoid",
        "thaicli/instruction",
        "thaicli/thaicli",
        "dialect/center/qa/rougeL",
        "dialect/center/translation_eng_center/bleu",
    ]
    sel = {s: select_runs(s, outputs=outputs) for s in ("model-a", "model-b")}
    arc = {s: sel[s].runs["thai_h6/th_arc"].summary["scores"]["acc_norm"]["value"] for s in sel}
    assert table.loc["thai_h6/th_arc/acc_norm", "mean_a"] == pytest.approx(100 * arc["model-a"])
    assert table.loc["thai_h6/th_arc/acc_norm", "mean_b"] == pytest.approx(100 * arc["model-b"])
    # exact McNemar on the documents' 0/1 values as stored
    a = [r["acc_norm"] for r in sorted(sel["model-a"].runs["thai_h6/th_arc"].records(), key=lambda r: r["doc"])]
    b = [r["acc_norm"] for r in sorted(sel["model-b"].runs["thai_h6/th_arc"].records(), key=lambda r: r["doc"])]
    assert table.loc["thai_h6/th_arc/acc_norm", "p_value"] == pytest.approx(mcnemar_exact(a, b)[2])
    assert table.loc["thai_h6/th_arc/acc_norm", "test"] == "mcnemar-exact"
    # ThaiCLI: every A score 7, every B score 5 over 3 items per format: diff 2, exact sign-flip p = 2/2^3
    assert table.loc["thaicli/factoid", ["mean_a", "mean_b", "diff"]].tolist() == [7.0, 5.0, 2.0]
    assert table.loc["thaicli/factoid", "p_value"] == pytest.approx(0.25)
    assert table.loc["thaicli/thaicli", "diff"] == 2.0 and table.loc["thaicli/thaicli", "n_paired"] == 6
    # dialect: the run summaries' ROUGE-L and paper BLEU are reproduced from the stored outputs
    dsum = {s: sel[s].runs["dialect/generation"].summary["scores"] for s in sel}
    assert table.loc["dialect/center/qa/rougeL", "mean_a"] == pytest.approx(
        dsum["model-a"]["center/qa/rougeL"]["value"]
    )
    key = "center/translation_eng_center/bleu"
    assert table.loc["dialect/" + key, "mean_b"] == pytest.approx(dsum["model-b"][key]["value"])
    assert table.loc["thai_h6/average", "mean_a"] == pytest.approx(
        50 * (arc["model-a"] + sel["model-a"].runs["thai_h6/th_winogrande"].summary["scores"]["acc"]["value"])
    )
    # Holm across the 8 rows
    p = table["p_value"].to_numpy()
    order = np.argsort(p)
    assert table["p_holm"].to_numpy()[order[0]] == pytest.approx(min(1, 8 * p[order[0]]))
    assert "Holm-adjusted across the 8 rows" in cmp.caption


def test_the_bleu_rows_sufficient_statistics_by_hand():
    """compare_runs resamples PAPER_BLEU's per-sentence statistics: newmm keeps spaces as tokens, so
    "แมว กิน ปลา" is 5 tokens (3 words, 2 spaces)."""
    stats = PAPER_BLEU.statistics(["แมว กิน ปลา", "แมว กิน ปลา"], ["แมว กิน", "แมว กิน ปลา ทุก วัน"])
    # lengths 5 / 3 and 5 / 9; clipped matches 3, 2, 1, 0 and 5, 4, 3, 2 of possible 5, 4, 3, 2
    assert stats.tolist() == [[5, 3, 3, 2, 1, 0, 5, 4, 3, 2], [5, 9, 5, 4, 3, 2, 5, 4, 3, 2]]
    assert PAPER_BLEU.score(stats[0]) == 0.0  # no 4-gram match
    assert PAPER_BLEU.score(stats[1]) == pytest.approx(100 * math.exp(1 - 9 / 5))  # precisions 1, brevity penalty
    # c = 10, r = 12: BP = exp(1 - 12/10); precisions 8/10, 6/8, 4/6, 2/4
    both = 100 * math.exp(1 - 1.2) * (0.8 * 0.75 * (4 / 6) * 0.5) ** 0.25
    assert (
        PAPER_BLEU.score(stats.sum(axis=0))
        == pytest.approx(both)
        == bleu(["แมว กิน ปลา"] * 2, ["แมว กิน", "แมว กิน ปลา ทุก วัน"])
    )


def _shuffle_items(run_dir: Path, seed: int) -> None:
    path = run_dir / "items.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    path.write_text("".join(lines), encoding="utf-8")


def test_shuffled_records_give_identical_results(outputs, tmp_path):
    before = compare_runs("model-a", "model-b", n_resamples=R, outputs=outputs).table()
    copy = tmp_path / "outputs"
    shutil.copytree(outputs, copy)
    for card in copy.rglob("run_card.json"):
        _shuffle_items(card.parent, 1)
    after = compare_runs("model-a", "model-b", n_resamples=R, outputs=copy).table()
    pd.testing.assert_frame_equal(before, after)


def test_items_in_one_run_only_are_listed(outputs, tmp_path):
    out = tmp_path / "outputs"
    h6.evaluate(FakeModel("model-c", score=_score_b), "th_arc", str(H6_DATA), limit=4, outputs=out, progress=False)
    h6.evaluate(FakeModel("model-a", score=_score_a), "th_arc", str(H6_DATA), limit=6, outputs=out, progress=False)
    cmp = compare_runs("model-a", "model-c", ["thai_h6"], n_resamples=R, outputs=out)
    row = cmp.table().set_index("score").loc["thai_h6/th_arc/acc_norm"]
    assert (row["n_paired"], row["only_a"], row["only_b"]) == (4, 2, 0)
    assert cmp.unmatched()[["only_in", "key"]].values.tolist() == [["A", "4"], ["A", "5"]]


def test_different_data_is_refused_unless_allowed(tmp_path):
    data = tmp_path / "h6data"
    shutil.copytree(H6_DATA, data)
    arc = next((data / "h6" / "th_arc_challenge").glob("*test*"))
    lines = arc.read_text(encoding="utf-8").splitlines()
    doc = json.loads(lines[0])
    doc["question"] += " (แก้ไข)"
    arc.write_text("\n".join([json.dumps(doc, ensure_ascii=False), *lines[1:]]) + "\n", encoding="utf-8")
    out = tmp_path / "outputs"
    h6.evaluate(FakeModel("model-a", score=_score_a), "th_arc", str(H6_DATA), limit=3, outputs=out, progress=False)
    h6.evaluate(FakeModel("model-b", score=_score_a), "th_arc", str(data), limit=3, outputs=out, progress=False)
    with pytest.raises(DataMismatchError, match="different data"):
        compare_runs("model-a", "model-b", ["thai_h6"], n_resamples=R, outputs=out)
    cmp = compare_runs("model-a", "model-b", ["thai_h6"], n_resamples=R, outputs=out, allow_different_data=True)
    assert "different data hashes" in cmp.rows[0].note


def test_side_by_side_and_forest_plot(outputs, tmp_path):
    cmp = compare_runs("model-a", "model-b", n_resamples=R, outputs=outputs)
    side = largest_differences(cmp, n=2, data_dir=REPO / "data")
    cli = side[side["score"] == "thaicli/factoid"]
    assert len(cli) == 2 and set(cli["output_a"]) == {"ก"} and set(cli["output_b"]) == {"ข"}
    assert set(cli["explanation_a"]) == {"ดี"} and set(cli["explanation_b"]) == {"พอใช้"}
    assert cli["input"].str.len().min() > 0 and cli["reference"].str.len().min() > 0
    arc = side[side["score"] == "thai_h6/th_arc/acc_norm"]
    assert (arc["diff"].abs() == 1).all() or (arc["diff"] == 0).all()
    assert arc["input"].str.len().min() > 0
    fig = forest_plot(cmp)
    assert len(fig.axes) >= 3  # one panel per benchmark family with rows
    paths = cmp.save(tmp_path / "cmp")
    assert [p.suffix for p in paths] == [".csv", ".md", ".tex"]
    assert "Holm" in paths[1].read_text(encoding="utf-8")


def test_published_interval_availability_on_the_shipped_data(tmp_path):
    from thai_eval_utils.paper.interval_sources import interval_availability
    from thai_eval_utils.paper import PUBLISHED_TABLES

    table = interval_availability(REPO / "data").set_index("table")
    assert set(table.index) == set(PUBLISHED_TABLES)
    assert not table["shipped"].any()  # the papers' per-item data is not in data/
    (tmp_path / "paper_items" / "dialect").mkdir(parents=True)
    (tmp_path / "paper_items" / "dialect" / "outputs.jsonl").write_text("{}\n", encoding="utf-8")
    shipped = interval_availability(tmp_path).set_index("table")["shipped"]
    assert shipped[shipped].index.tolist() == ["dialect_auto"]
