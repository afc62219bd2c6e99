"""How the Thai-H6 benchmark shows in compare and the report: its headline scores per item, its items,
its leaderboard cells and figures: the display hooks of :class:`thai_eval_utils.core.benchmark.Suite`
(Kim et al. 2024, Table 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from thai_eval_utils.core.benchmark import Average, Headline, Interval, ItemView, Kind, LeaderboardTable, Sides
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.h6 import variants as V
from thai_eval_utils.h6.average import thai_h6_score
from thai_eval_utils.h6.item_views import BINARY_METRICS, h6_items, h6_sides, load_run_data
from thai_eval_utils.h6.plots import task_scores_figure
from thai_eval_utils.h6.tasks import TASK_METRICS, TASKS
from thai_eval_utils.stats.cells import average_ci, cell, mean_ci, summary_value
from thai_eval_utils.tasks.language import stats_note

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The suite's name (its runs' ``benchmark`` prefix) and the leaderboard table's key (``paper.PUBLISHED_TABLES``).
NAME = "thai_h6"
TABLE = "h6"
AVERAGE = f"{NAME}/average"


class H6Views:
    """The display hooks of the Thai-H6 suite (mixed into :class:`~.suite.H6Suite`)."""

    scale_note: ClassVar[str] = "Thai-H6 on 0-100"
    #: The H6 average (Table 4): unweighted over the six tasks, 0-100; fewer tasks make it partial.
    averages: ClassVar[tuple[Average, ...]] = (Average(AVERAGE, f"{NAME}/", expected=len(TASKS), scale=100.0),)
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable(TABLE, "Thai-H6 (0-100; Kim et al. Table 4)", ("thai_h6_avg", *TASKS)),
    )

    def holds_headlines(self, run: StoredRun) -> bool:
        """The runs of the paper's six tasks and of the labelled variants (``th_gsm8k.chat``,
        ``<task>.generative-mc``: :mod:`.variants`): compare pairs a variant's runs in rows of their own; they are not
        the paper's protocol, so never averaged (:attr:`Headline.variant`), in the leaderboard or the item browser."""
        return run.family == NAME and (run.task in TASK_METRICS or V.is_variant(run.task))

    def order(self, headline_name: str) -> int:
        """The paper's tasks in Table 4's order, then the average, then the labelled variants by their paper task."""
        task = headline_name.split("/")[1] if "/" in headline_name else ""
        if V.is_variant(task):
            return len(TASKS) + 1 + TASKS.index(V.get_spec(task).data_task)
        return TASKS.index(task) if task in TASKS else len(TASKS)

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """The headline metric of a task run (its first metric: ``TASK_METRICS[task][0]``; a variant's own) per
        document, keyed by the document's index in the scored split (the store key also hashes the prompt, which
        changes with the few-shot draws; equal data hashes make the index safe). A variant's items keep the prompt
        sent (``prompt``) for the side-by-side view."""
        task = run.task
        if not self.holds_headlines(run):
            raise ThaiEvalDataError(f"unknown Thai-H6 task {task!r}", path=run.dir / "run_card.json", field="benchmark")
        spec = V.get_spec(task)
        metric = spec.headline
        rows = []
        for i, rec in enumerate(run.records()):
            if metric not in rec or "doc" not in rec:
                raise ThaiEvalDataError(
                    f"record lacks {metric!r} or 'doc'", path=run.dir / "items.jsonl", row=i, field=metric
                )
            rows.append(
                {
                    "key": str(rec["doc"]),
                    "value": float(rec[metric]),
                    "store_key": rec["key"],
                    "doc": int(rec["doc"]),
                    "pred": rec.get("pred_norm" if metric == "acc_norm" else "pred"),
                    "gold": rec.get("gold"),
                    "generation": rec.get("generation"),
                    "subject": rec.get("subject"),
                    **({"prompt": rec.get("context")} if spec.variant else {}),
                }
            )
        kind: Kind = "binary" if metric in BINARY_METRICS else "mean"
        frame = pd.DataFrame(rows)
        return [Headline(f"{NAME}/{task}/{metric}", NAME, task, kind, 100.0, frame, run, variant=spec.variant or "")]

    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Every document of the run: question, choices and log-likelihoods, gold, the model's choice, few-shot block
        (none for a labelled variant's run)."""
        if run.family != NAME or run.task not in TASK_METRICS:
            return []
        data, records = load_run_data(run, self.data_path(data_dir)), run.records()  # type: ignore[attr-defined]
        if data.docs is None and records and "doc_row" not in records[0]:
            notes.append(f"{run.benchmark}: {data.missing}")
        return h6_items(run, records, TASK_METRICS[run.task][0], data, pools)

    def sides(self, head_a: Headline, head_b: Headline, keys: Sequence[str], data_dir: Path | None) -> list[Sides]:
        """The documents' text and options (when the data root holds the run's files), gold and both choices."""
        return h6_sides(head_a, head_b, keys, self.data_path(data_dir))  # type: ignore[attr-defined]

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        """Each task's summary score (x 100) with its interval, and the H6 average (partial: fewer than six tasks)."""
        out, parts = [], []
        for h in (h for h in heads if not h.variant):  # a labelled variant is not the paper's Table 4
            value, n = summary_value(h.run.summary, h.name.split("/")[-1], 100.0)
            low, high = mean_ci(h, boot)
            note = stats_note((h.run.summary or {}).get("replies"))  # GSM8K: answers in Thai, unclosed thinking
            out.append(cell(TABLE, model, h.stratum, value, n, f"{NAME}|{h.stratum}", low=low, high=high, note=note))
            parts.append((h, value))
        if parts:
            low, high = average_ci([h for h, _ in parts], boot)
            note = "" if len(parts) == len(TASKS) else f"partial: {len(parts)} of {len(TASKS)} tasks"
            avg = None if any(v is None for _, v in parts) else float(np.mean([v for _, v in parts]))
            n = sum(len(h.items) for h, _ in parts)
            out.append(cell(TABLE, model, "thai_h6_avg", avg, n, f"{NAME}|", low=low, high=high, note=note))
        return out

    def figures(
        self, runs: Mapping[str, Mapping[str, StoredRun]], heads: Mapping[str, Sequence[Headline]]
    ) -> list[tuple[str, Figure | None]]:
        """Each model's task headline scores (x 100, ± 1 s.e.) and average, grouped by model."""
        per_model = {}
        for model, by_bench in runs.items():
            tasks = {}
            for bench, run in by_bench.items():
                scores = (run.summary or {}).get("scores") or {}
                if bench.startswith(f"{NAME}/") and bench.split("/")[-1] in TASK_METRICS and scores:
                    first = next(iter(scores.values()))  # the headline metric comes first (h6.evaluate)
                    tasks[bench.split("/")[-1]] = Score(first["name"], first["value"], first["n"], first.get("stderr"))
            if tasks:
                per_model[model] = thai_h6_score(tasks)
        fig = task_scores_figure(per_model, title="Thai-H6 headline scores (0-100, ± 1 s.e.)") if per_model else None
        return [("Thai-H6: headline score per task and the average", fig)]
