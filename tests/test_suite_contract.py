"""The suite contract: a benchmark that only its own Suite knows (registered in the registry, nothing
changed in compare/ or report/) shows up in the comparison, the side-by-side items, the leaderboard, the item
browser, the figures and the HTML report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

from thai_eval_utils.compare.differ import largest_differences
from thai_eval_utils.compare.load import select_runs
from thai_eval_utils.compare.runs import compare_runs
from thai_eval_utils.core import registry
from thai_eval_utils.core.benchmark import Average, Headline, Interval, ItemView, LeaderboardTable, Suite
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.report import write_report
from thai_eval_utils.report.items import collect_items
from thai_eval_utils.report.leaderboard import Bootstrap, leaderboard, model_headlines, tables
from thai_eval_utils.report.render import wide
from thai_eval_utils.report.runs import collect_runs
from thai_eval_utils.stats.cells import cell, mean_ci, summary_value

#: model -> task -> each item's 0/1 value (questions q0..q5)
ANSWERS = {
    "model-a": {"qa": [1, 1, 1, 1, 0, 1], "yesno": [1, 0, 1, 1, 1, 1]},
    "model-b": {"qa": [0, 1, 0, 0, 0, 1], "yesno": [1, 0, 0, 1, 0, 1]},
}


class ToySuite(Suite):
    """A benchmark of two tasks scored 0/1 per question, with an average over both."""

    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "Toy benchmark"
    position: ClassVar[int] = 5  # sorts first
    tasks: ClassVar[tuple[str, ...]] = ("qa", "yesno")
    averages: ClassVar[tuple[Average, ...]] = (Average("toy/average", "toy/", expected=2, scale=100.0),)
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable("toy", "Toy (0-100)", ("toy_avg", "qa", "yesno")),
    )

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        items = pd.DataFrame(
            [
                {
                    "key": r["id"],
                    "value": float(r["correct"]),
                    "input": r["question"],
                    "ref": r["answer"],
                    "hyp": r["output"],
                }
                for r in run.records()
            ]
        )
        return [Headline(f"toy/{run.task}/acc", "toy", run.task, "binary", 100.0, items, run)]

    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        return [
            ItemView(
                task=run.task,
                key=r["id"],
                value=float(r["correct"]),
                correct=bool(r["correct"]),
                question=r["question"],
                output=r["output"],
                reference=r["answer"],
            )
            for r in run.records()
        ]

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        out = []
        for h in heads:
            value, n = summary_value(h.run.summary, "acc", 100.0)
            low, high = mean_ci(h, boot)
            out.append(cell("toy", model, h.stratum, value, n, f"toy|{h.stratum}", low=low, high=high))
        return out

    def figures(self, runs: Mapping[str, Mapping[str, StoredRun]], heads: Mapping[str, Sequence[Headline]]):
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        ax.bar(list(heads), [sum(h.items["value"].mean() for h in hs) for hs in heads.values()])
        return [("Toy: accuracy", fig), ("Toy: nothing to draw", None)]


def _store(out: Path) -> Path:
    for model, tasks in ANSWERS.items():
        for task, values in tasks.items():
            with RunStore.open(model, f"toy/{task}", {"limit": None}, outputs=out) as store:
                for i, v in enumerate(values):
                    store.append(
                        f"q{i}",
                        {
                            "id": f"q{i}",
                            "question": f"คำถาม {task} {i}",
                            "answer": "ก",
                            "output": "ก" if v else "ข",
                            "correct": v,
                        },
                    )
                store.write_summary(
                    {"scores": {"acc": {"name": "acc", "value": sum(values) / len(values), "n": len(values)}}}
                )
    return out


@pytest.fixture()
def toy(monkeypatch, tmp_path) -> Path:
    monkeypatch.setattr(registry, "_suites", {**registry.suites(), "toy": ToySuite()})
    return _store(tmp_path / "outputs")


def test_a_registered_suite_is_compared_without_changing_compare(toy):
    assert "toy" in registry.names() and registry.suite_of("toy/qa").title == "Toy benchmark"
    assert sorted(select_runs("model-a", outputs=toy).runs) == ["toy/qa", "toy/yesno"]
    cmp = compare_runs("model-a", "model-b", n_resamples=499, outputs=toy)
    table = cmp.table().set_index("score")
    assert list(table.index) == ["toy/qa/acc", "toy/yesno/acc", "toy/average"]  # the suite's order, its average last
    assert table.loc["toy/qa/acc", ["mean_a", "mean_b"]].tolist() == pytest.approx([100 * 5 / 6, 100 * 2 / 6])
    assert table.loc["toy/qa/acc", "test"] == "mcnemar-exact" and table.loc["toy/qa/acc", "n_paired"] == 6
    assert table.loc["toy/average", "diff"] == pytest.approx(100 * ((5 / 6 + 5 / 6) - (2 / 6 + 3 / 6)) / 2)
    assert table.loc["toy/average", "n_paired"] == 12 and "partial" not in table.loc["toy/average", "note"]
    only_qa = compare_runs(
        select_runs(folders=[toy / "runs" / "model-a" / "toy" / "qa"]),
        select_runs(folders=[toy / "runs" / "model-b" / "toy" / "qa"]),
        n_resamples=99,
    )
    assert [r.metric for r in only_qa.rows] == ["toy/qa/acc"]  # one member: no average (min_members)
    side = largest_differences(cmp, n=2, scores=["toy/qa/acc"])
    assert side["key"].tolist() == ["q0", "q2"]  # |diff| 1, ties by key
    assert side[["input", "reference", "output_a", "output_b"]].iloc[0].tolist() == ["คำถาม qa 0", "ก", "ก", "ข"]


def test_a_registered_suite_is_in_the_leaderboard_items_and_report(toy, tmp_path):
    runs = collect_runs(toy)
    heads, notes = model_headlines(runs)
    assert notes == [] and [h.name for h in heads["model-a"]] == ["toy/qa/acc", "toy/yesno/acc"]
    assert tables()[0].key == "toy"
    cells = leaderboard(heads, boot=Bootstrap(n_resamples=200), published=False)
    qa = cells.set_index(["model", "column"]).loc[("model-b", "qa")]
    assert qa["table"] == "toy" and qa["value"] == pytest.approx(100 * 2 / 6) and qa["n"] == 6
    assert qa["ci_low"] <= qa["value"] <= qa["ci_high"]
    assert wide(cells, "toy")["model"].tolist() == ["model-a", "model-b"]
    items, pools, item_notes = collect_items(runs, heads)
    assert len(items) == 24 and item_notes == [] and pools == {}
    first = items[0]
    assert {k: first[k] for k in ("b", "m", "t", "k", "v", "c", "q", "o", "ref")} == {
        "b": "toy",
        "m": "model-a",
        "t": "qa",
        "k": "q0",
        "v": 1.0,
        "c": True,
        "q": "คำถาม qa 0",
        "o": "ก",
        "ref": "ก",
    }
    html = write_report(toy, tmp_path / "report.html", n_resamples=100, published=False).read_text(encoding="utf-8")
    assert "Toy (0-100)" in html and "Toy: accuracy" in html and "Toy: nothing to draw" not in html
    assert "toy/average" in html  # the side-by-side comparison of the two models
