"""SEA-HELM's Thai tasks as the registry sees them (issue 31): name, tasks (SEA-HELM's results keys), notebook, data
folder (the task table: :data:`TASKS`; IF-Eval and the MT-Bench judge are run by their own modules through
``runner.EXTERNAL_MODULES``, and their runs show through the same hooks), and the hooks compare, the report and the exports call: headlines (per item: the item's mean over runs),
leaderboard cells grouped by competency (SEA-HELM's mean over runs with its standard error beside our bootstrap
interval), notebook parameters (``--runs``), export rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from thai_eval_utils.core.benchmark import DETAIL_INPUTS, Headline, ItemView, LeaderboardTable, Suite, TokenCounter
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.seahelm.config import N_RUNS, task_config, task_configs
from thai_eval_utils.seahelm.data import load_task_data
from thai_eval_utils.seahelm.prompts import build_messages
from thai_eval_utils.seahelm.runner import RUN_BY_DEFAULT, SUITE as SUITE_NAME
from thai_eval_utils.stats.cells import cell

#: Per-item values on 0-1 (SEA-HELM's individual scores) shown x100; ROUGE-L, MetricX and chrF++ are 0-100.
_UNIT_SCALE = ("F1AccMetric", "QuestionAnsweringMetric")
COMPETENCIES = ("nlu", "nlg", "nlr", "safety", "instruction-following", "knowledge", "multi-turn")
#: ``make demo``'s slice (with its 2 rows, 2 runs, 48 tokens): a choice task, Thai QA F1, an exam, Thai ROUGE-L.
DEMO_TASKS = ("sentiment", "qa", "thai_exam_ic", "abssum")
#: Every task key this suite knows: SEA-HELM's Thai list and Belebele, then the ``-logprobs`` twins.
TASKS = tuple(RUN_BY_DEFAULT) + tuple(k for k in task_configs() if k.endswith("-logprobs"))


def _scale(key: str) -> float:
    return 100.0 if task_config(key).metric_class in _UNIT_SCALE else 1.0


class SeahelmSuite(Suite):
    """SEA-HELM v1.2.1's Thai tasks (AI Singapore): generated answers after an answer tag, normalised accuracy,
    repeated runs with SEA-HELM's standard errors."""

    name: ClassVar[str] = SUITE_NAME
    title: ClassVar[str] = "SEA-HELM v1.2 Thai (AI Singapore)"
    short_title: ClassVar[str] = "SEA-HELM Thai"
    position: ClassVar[int] = 40
    version: ClassVar[str] = "1.2.1"
    tasks: ClassVar[tuple[str, ...]] = TASKS
    notebooks: ClassVar[tuple[str, ...]] = ("seahelm.ipynb",)
    data_folder: ClassVar[str] = "seahelm"
    scale_note: ClassVar[str] = "SEA-HELM Thai on 0-100 (normalised accuracy, F1, ROUGE-L, MetricX or chrF++)"
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable("seahelm", "SEA-HELM Thai: mean over runs (SE over runs, SEA-HELM's)",
                         ("score", "se_over_runs", "runs", "null_answers", "failed_thinking"), group="competency"),)
    detail_inputs: ClassVar[frozenset[str]] = DETAIL_INPUTS | {"run", "seed", "label", "source", "messages"}
    detail_metrics: ClassVar[frozenset[str]] = frozenset({"gold_logprob"})

    # ------------------------------------------------------------------------------------------- stored runs
    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """One headline per task: per item, SEA-HELM's individual score averaged over the stored runs (keyed by the
        row id); the run's value is SEA-HELM's mean over runs, its ``stderr`` SEA-HELM's SE over runs."""
        s = run.summary or {}
        ids, means = s.get("ids") or [], s.get("item_means") or []
        if not ids or len(ids) != len(means) or run.task not in task_configs():
            return []
        recs = {}
        for r in run.records():
            recs.setdefault(str(r["id"]), r)
        items = pd.DataFrame({"key": ids, "value": means,
                              "input": [(recs.get(i) or {}).get("source") or "" for i in ids],
                              "ref": [str((recs.get(i) or {}).get("label") or "") for i in ids],
                              "hyp": [(recs.get(i) or {}).get("scored") or "" for i in ids]})
        primary = s.get("primary_metric", "score")
        note = f"mean over {s.get('over_runs', {}).get('runs')} run(s); SE over runs {s.get('over_runs', {}).get('stderr')}"
        return [Headline(f"{self.name}/{run.task}/{primary}", self.name, run.task, "mean", _scale(run.task), items, run,
                         note=note)]

    def item_views(self, run: StoredRun, heads: Sequence[Headline], data_dir: Path | None,
                   pools: dict[str, list[str]], notes: list[str]) -> list[ItemView]:
        """Each stored reply (every run): the prompt, the raw reply, the gold label, the item's value in that run."""
        s = run.summary or {}
        ids = [str(i) for i in s.get("ids") or []]
        views = []
        for r in run.records():
            per = ((s.get("runs") or {}).get(str(r.get("run"))) or {}).get("per_item") or []
            pos = ids.index(str(r["id"])) if str(r["id"]) in ids else None
            value = per[pos] if pos is not None and pos < len(per) else None
            msgs = r.get("messages") or []
            views.append(ItemView(run.task, str(r["key"]), value=value, question=msgs[-1]["content"] if msgs else None,
                                  output=r.get("reply"), reference=str(r.get("label")), repeat=r.get("run"),
                                  note="thinking never closed: a failed answer" if r.get("failed") else None))
        return views

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Any) -> list[dict[str, Any]]:
        """Per task: SEA-HELM's mean over runs with our bootstrap interval over items, and SEA-HELM's SE over
        runs, the runs, null answers and failed thinking beside it; rows grouped by competency."""
        out = []
        for h in heads:
            if h.family != self.name:
                continue
            s = h.run.summary or {}
            over = s.get("over_runs") or {}
            iv = ((s.get("scores") or {}).get(s.get("primary_metric")) or {}).get("interval") or {}
            n = s.get("n")
            note = f"partial: {n} of {s.get('n_docs')} items" if n and s.get("n_docs") and n < s["n_docs"] else ""
            if s.get("logprobs_note"):
                note = (note + "; " if note else "") + "-logprobs: not a parity number (P1)"
            group = s.get("competency")
            items = f"{self.name}|{h.stratum}"
            out.append(cell(self.name, model, "score", over.get("mean"), n, items, group=group, low=iv.get("low"),
                            high=iv.get("high"), note=note))
            for column, value in (("se_over_runs", over.get("stderr")), ("runs", over.get("runs")),
                                  ("null_answers", s.get("null_count")), ("failed_thinking", s.get("failed_thinking"))):
                out.append(cell(self.name, model, column, value, n, items, group=group))
        return out

    # ------------------------------------------------------------------------------------------------ exports
    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """``{task: {metric: value}}``: the primary metric's mean and SE over runs, and the last run's metrics."""
        s = run.summary or {}
        over = s.get("over_runs") or {}
        if over.get("mean") is None:
            return {}
        out = {s.get("primary_metric", "score"): float(over["mean"]), "stderr_over_runs": float(over["stderr"])}
        return {f"seahelm_{run.task}": out}

    # ---------------------------------------------------------------------------------------------------- run
    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The tasks asked for, ``runs`` (``thai-eval run --runs``; None: SEA-HELM's eight) and the common
        generation options under the notebook's names."""
        options = options or {}
        params: dict[str, Any] = {"tasks": list(tasks) or (list(DEMO_TASKS) if options.get("demo") else None)}
        if options.get("runs") is not None:
            params["runs"] = int(options["runs"])
        return params

    def dry_run(self, data: Path, tokenizer: TokenCounter, *, tasks: tuple[str, ...] = (), limit: int | None,
                max_new_tokens: int | None) -> list[dict[str, Any]]:
        """Per task: rows, generations (x the eight runs) and the prompts' tokens."""
        rows_out = []
        for key in tasks or RUN_BY_DEFAULT:
            task = task_config(key)
            if task.metric_class in ("IFEvalMetric", "MTBenchJudgeMetric"):
                continue
            d = load_task_data(task, data if data.is_dir() else None)
            rows = d.rows[:limit] if limit else d.rows
            texts = [build_messages(task, r)[0]["content"] for r in rows]
            runs = len(task.runs(N_RUNS))
            rows_out.append({"benchmark": self.name, "task": key, "documents": len(rows),
                             "requests": len(rows) * runs, "generations": len(rows) * runs,
                             "max_new_tokens": min(task.max_tokens, max_new_tokens or task.max_tokens),
                             "fed_tokens": (tokenizer.count(texts) or 0) * runs if tokenizer.count(texts) else None,
                             "tree_tokens": None, "judge_calls": 0})
        return rows_out


SUITE = SeahelmSuite()
