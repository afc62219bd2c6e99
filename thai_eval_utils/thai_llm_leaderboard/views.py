"""How the log-likelihood tasks show in compare, the report and the exports (the hooks of
:class:`thai_eval_utils.core.benchmark.Suite`): accuracy per item as the headline, each item's prompt, labels,
summed log-probabilities, prediction and gold, a leaderboard cell per task (x 100, n, interval), and the results
entries the leaderboard ingests (task key -> ``{"accuracy": value}``, ``scripts/transform_result.py:29-63``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from thai_eval_utils.core.benchmark import DETAIL_INPUTS, Headline, Interval, ItemView, LeaderboardTable, TokenCounter
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.stats.cells import cell, mean_ci, summary_value
from thai_eval_utils.thai_llm_leaderboard.data import load_task
from thai_eval_utils.thai_llm_leaderboard.prompts import with_label
from thai_eval_utils.thai_llm_leaderboard.tasks import NLU_TASKS

NAME = "thai_llm_leaderboard"
#: The leaderboard table of the log-likelihood tasks (the report's key) and its columns: every task's key.
NLU_TABLE = "thai_llm_leaderboard_nlu"


#: The dry run's columns, in the order its rows hold them.
DRY_RUN_COLUMNS = (
    "benchmark task documents requests fed_tokens tree_tokens generations max_new_tokens judge_calls".split()
)


def dry_row(*values: Any) -> dict[str, Any]:
    """A dry run's row of this suite: the values of :data:`DRY_RUN_COLUMNS` after ``benchmark``, in order."""
    return dict(zip(DRY_RUN_COLUMNS, (NAME, *values), strict=True))


def _label(labels: Sequence[str], index: int) -> str:
    """Label ``index``, or a note when it lies past the scored labels (an M3Exam gold ``e``)."""
    return labels[index] if 0 <= index < len(labels) else f"(choice {index}: not scored)"


class NLUViews:
    """The log-likelihood tasks' hooks (mixed into :class:`~.suite.ThaiLLMLeaderboardSuite` before
    :class:`~.gen_views.GenerationViews`): each answers for the log-likelihood runs and hands the others on to the next
    class's hook (``super()``), where the lists and dicts of both kinds are joined."""

    scale_note: ClassVar[str] = "accuracy on 0-100"
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable(NLU_TABLE, "Thai LLM Leaderboard: NLU and exams (accuracy, 0-100)", tuple(NLU_TASKS)),
    )
    detail_inputs: ClassVar[frozenset[str]] = DETAIL_INPUTS | {"labels", "row"}
    detail_metrics: ClassVar[frozenset[str]] = frozenset({"correct"})

    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """Accuracy per item (binary, x 100), keyed by the item's id; the prompt with the gold label and the model's
        label as the input, reference and output."""
        if run.task not in NLU_TASKS:
            return super().headlines(run, data_dir)
        rows = []
        for i, rec in enumerate(run.records()):
            if "correct" not in rec or "pred" not in rec:
                raise ThaiEvalDataError(
                    "record lacks 'correct' or 'pred'", path=run.dir / "items.jsonl", row=i, field="correct"
                )
            labels = rec.get("labels") or []
            gold, pred = _label(labels, int(rec["gold"])), _label(labels, int(rec["pred"]))
            rows.append((str(rec["key"]), float(rec["correct"]), rec.get("prompt", ""), gold, pred))
        items = pd.DataFrame(rows, columns=["key", "value", "input", "ref", "hyp"])
        return [Headline(f"{NAME}/{run.task}/accuracy", NAME, run.task, "binary", 100.0, items, run)]

    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Each item: the prompt, the label strings and their summed log-probabilities, prediction and gold."""
        if run.task not in NLU_TASKS:
            return []
        views = []
        for rec in run.records():
            labels = list(rec.get("labels") or [])
            note = "truncated by the runner's length limit" if rec.get("truncated") else None
            gold = int(rec["gold"])
            if gold >= len(labels):
                note = f"gold is choice {gold}, which the runner never scores"
            views.append(
                ItemView(
                    run.task,
                    str(rec["key"]),
                    value=float(rec["correct"]),
                    correct=int(rec["correct"]),
                    question=rec.get("prompt"),
                    choices=labels,
                    loglikelihoods=list(rec["lls"]),
                    pred=int(rec["pred"]),
                    gold=gold,
                    question_label="prompt ([LABEL_CHOICE] per label)",
                    note=note,
                )
            )
        return views

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Interval) -> list[dict[str, Any]]:
        """One cell per task: the run's accuracy x 100, n, a percentile bootstrap interval; partial runs say so."""
        out = []
        for h in (h for h in heads if h.family == NAME and h.stratum in NLU_TASKS):
            value, n = summary_value(h.run.summary, "accuracy", 100.0)
            low, high = mean_ci(h, boot)
            summary = h.run.summary or {}
            n_docs = summary.get("n_docs")
            note = f"partial: {len(h.items)} of {n_docs} items" if n_docs and len(h.items) < int(n_docs) else ""
            if summary.get("n_excluded"):
                note = "; ".join(filter(None, [note, f"{summary['n_excluded']} rows excluded as the runner does"]))
            out.append(
                cell(NLU_TABLE, model, h.stratum, value, n, f"{NAME}|{h.stratum}", low=low, high=high, note=note)
            )
        return out + super().leaderboard_cells(model, heads, boot)

    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """``{task key: {"accuracy": value}}`` for the runner's own tasks (0-1, as its results files hold it); the
        corrected variants are not leaderboard numbers and are left out."""
        task = NLU_TASKS.get(run.task)
        entry = ((run.summary or {}).get("scores") or {}).get("accuracy")
        if task is None or task.variant != "runner" or not isinstance(entry, dict) or entry.get("value") is None:
            return super().leaderboard_results(run)
        return {task.key: {"accuracy": float(entry["value"])}}

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """Per log-likelihood task: items, one request per (item, label), the tokens the runner feeds (``fed``:
        every label's whole sequence) and the engine's prefix tree runs (``tree``: the shared prompt once)."""
        rows = []
        for key in [t for t in (tasks or tuple(NLU_TASKS)) if t in NLU_TASKS]:
            items = load_task(NLU_TASKS[key], data).items[:limit]
            requests = [("", with_label(it["prompt"], label)) for it in items for label in it["labels"]]
            counts = tokenizer.count_requests(requests, add_bos_token=False)
            fed = counts["fed"] if counts else tokenizer.count([t for _, t in requests])
            rows.append(dry_row(key, len(items), len(requests), fed, counts["tree"] if counts else None, 0, None, 0))
        return rows + super().dry_run(data, tokenizer, tasks=tasks, limit=limit, max_new_tokens=max_new_tokens)
