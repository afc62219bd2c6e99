"""SEA-HELM's Thai tasks as the registry sees them: name, tasks (SEA-HELM's results keys), notebook, data
folder (the task table: :data:`TASKS`; IF-Eval and the MT-Bench judge are run by their own modules through
``runner.RUNNERS``, and their runs show through the same hooks), and the hooks compare, the report and the exports
call: headlines (per item: the item's mean over runs), leaderboard cells grouped by competency (SEA-HELM's mean
over runs with its standard error beside our bootstrap interval), notebook parameters (``--runs``), export rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from thai_eval_utils.core.benchmark import (
    DETAIL_INPUTS,
    DataConverter,
    Headline,
    ItemView,
    LeaderboardTable,
    SeahelmTask,
    Suite,
    TokenCounter,
)
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.seahelm.config import N_RUNS, task_config, task_configs
from thai_eval_utils.seahelm.data import hf_files_to_task_files, load_task_data
from thai_eval_utils.seahelm.declarations import RunMetric
from thai_eval_utils.seahelm import ifeval
from thai_eval_utils.seahelm import mt_bench as mb
from thai_eval_utils.seahelm.export import seahelm_results
from thai_eval_utils.seahelm.prompts import build_messages
from thai_eval_utils.seahelm.runner import RUN_BY_DEFAULT
from thai_eval_utils.seahelm.task_run import SUITE_NAME, Protocol
from thai_eval_utils.stats.cells import cell
from thai_eval_utils.tasks.language import stats_columns, stats_note

#: ``make demo``'s slice (with its 2 rows, 2 runs, 48 tokens): a choice task, Thai QA F1, an exam, Thai ROUGE-L.
DEMO_TASKS = ("sentiment", "qa", "thai_exam_ic", "abssum")
#: The leaderboard table's columns and its rows' grouping.
COLUMNS = ("score", "se_over_runs", "runs", "answers_in_thai", "thinking_unclosed", "null_answers", "failed_thinking")
GROUP = "competency / task"
#: Every task key this suite knows: SEA-HELM's Thai list and Belebele, then the ``-logprobs`` twins.
TASKS = tuple(RUN_BY_DEFAULT) + tuple(k for k in task_configs() if k.endswith("-logprobs"))


def _item_texts(rec: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A stored record's prompt and raw reply as the item view shows them: the last user message and ``reply``;
    an MT-Bench record (``replies``: both turns' raw answers, ``messages``: turn 2's conversation) shows both user
    turns and both answers, each headed by its turn."""
    msgs = rec.get("messages") or []
    turns = rec.get("replies")
    if isinstance(turns, list):
        users = [m["content"] for m in msgs if m.get("role") == "user"]
        question = "\n\n".join(f"[turn {i + 1}]\n{u}" for i, u in enumerate(users)) or None
        return question, "\n\n".join(f"[turn {i + 1}]\n{t}" for i, t in enumerate(turns))
    return (msgs[-1]["content"] if msgs else None), rec.get("reply")


def _scale(key: str) -> float:
    """What turns a task's per-item values into the 0-100 tables: its metric object's ``scale``."""
    return RunMetric(task_config(key)).scale


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

    def data_converters(self) -> Mapping[str, DataConverter]:
        """Its Hugging Face splits written in SEA-HELM's row contract (``data_manifest.json``'s ``seahelm_rows``)."""
        return {"seahelm_rows": hf_files_to_task_files}

    scale_note: ClassVar[str] = "SEA-HELM Thai on 0-100 (normalised accuracy, F1, ROUGE-L, MetricX or chrF++)"
    leaderboard_tables: ClassVar[tuple[LeaderboardTable, ...]] = (
        LeaderboardTable("seahelm", "SEA-HELM Thai: mean over runs (SE over runs, SEA-HELM's)", COLUMNS, group=GROUP),
    )
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
        first = {str(r["id"]): r for r in reversed(run.records())}  # each item's first stored record (run 0's)
        recs = [first.get(i) or {} for i in ids]
        items = pd.DataFrame(
            {
                "key": ids,
                "value": means,
                "input": [r.get("source") or "" for r in recs],
                "ref": [str(r.get("label") or "") for r in recs],
                "hyp": [r.get("scored") or "" for r in recs],
            }
        )
        name = f"{self.name}/{run.task}/{s.get('primary_metric', 'score')}"
        note = f"mean over {s.get('over_runs', {}).get('runs')} run(s); SE over runs {s.get('over_runs', {}).get('stderr')}"
        return [Headline(name, self.name, run.task, "mean", _scale(run.task), items, run, note=note)]

    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Each stored reply (every run): the prompt, the raw reply, the gold label, the item's value in that run."""
        s = run.summary or {}
        ids = [str(i) for i in s.get("ids") or []]
        views = []
        for r in run.records():
            per = ((s.get("runs") or {}).get(str(r.get("run"))) or {}).get("per_item") or []
            pos = ids.index(str(r["id"])) if str(r["id"]) in ids else None
            value = per[pos] if pos is not None and pos < len(per) else None
            question, output = _item_texts(r)
            label = r.get("label")
            views.append(
                ItemView(
                    run.task,
                    str(r["key"]),
                    value=value,
                    question=question,
                    output=output,
                    reference=None if label is None else str(label),
                    repeat=r.get("run"),
                    note="thinking never closed: a failed answer" if r.get("failed") else None,
                )
            )
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
            n, logprobs, replies = s.get("n"), bool(s.get("logprobs_note")), s.get("replies")
            gen = None if logprobs else replies  # answers in Thai and unclosed thinking beside a generation score
            notes = (  # (note, whether it applies)
                (f"partial: {n} of {s.get('n_docs')} items", n and s.get("n_docs") and n < s["n_docs"]),
                ("-logprobs: not a parity number (P1)", logprobs),
                ("self-judged: a pipeline check, not SEA-HELM's number", (s.get("judge") or {}).get("self_judged")),
                (stats_note(gen), gen),
            )
            cols = stats_columns(gen)
            group = f"{s.get('competency')} / {h.stratum}"  # one row per task, sorted under its competency
            at = partial(cell, self.name, model, items=f"{self.name}|{h.stratum}", group=group)
            note = "; ".join(t for t, applies in notes if applies)
            out.append(at("score", over.get("mean"), n, low=iv.get("low"), high=iv.get("high"), note=note))
            for column, value in (
                ("se_over_runs", over.get("stderr")),
                ("runs", over.get("runs")),
                ("null_answers", s.get("null_count")),
                ("failed_thinking", s.get("failed_thinking")),
                ("thinking_unclosed", cols["n_thinking_unclosed"]),
            ):
                out.append(at(column, value, n))
            thai = None if cols["thai_rate"] is None else 100 * cols["thai_rate"]
            iv_thai = ((replies or {}).get("answers_in_thai") or {}).get("interval") or {}
            low, high = (None if iv_thai.get(k) is None else 100 * iv_thai[k] for k in ("low", "high"))
            note = f"% of {cols['thai_n']} replies (every run) mainly in Thai script, thinking cut; Wilson 95%"
            out.append(
                at("answers_in_thai", thai, cols["thai_n"], low=low, high=high, note=note if thai is not None else "")
            )
        return out

    # ------------------------------------------------------------------------------------------------ exports
    def seahelm_results(self, run: StoredRun) -> list[SeahelmTask]:
        """The run in SEA-HELM's own layout (``thai-eval export --format seahelm``; :mod:`.export`)."""
        return seahelm_results(run)

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

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
        runs: int | None = None,
    ) -> list[dict[str, Any]]:
        """Per task: rows, generations (rows x the runs asked for: ``--runs``, default SEA-HELM's eight, each task's
        ``max_n_runs`` respected; MT-Bench: x 2 turns) and the prompts' tokens (x the runs; MT-Bench's turn 2 counted
        without the first answer it carries); then MT-Bench's judge row: one judge call per criterion per run
        (SEA-HELM's judge: one call, no retry), at the judge's budget (16,384 tokens; capped by ``--max-new-tokens``
        as :func:`.mt_bench_run.run_mt_bench` caps it)."""
        rows_out = []
        for key in tasks or RUN_BY_DEFAULT:
            task = task_config(key)
            d = load_task_data(task, data if data.is_dir() else None)
            reps = len(task.runs(N_RUNS if runs is None else int(runs)))
            max_new = Protocol(max_tokens=max_new_tokens).max_new_tokens(task)
            row = dict(benchmark=self.name, task=key, tree_tokens=None, judge_calls=0, max_new_tokens=max_new)
            if task.metric_class == "MTBenchJudgeMetric":
                rows_out += _mt_bench_dry_run(row, d, tokenizer, limit, reps, max_new, max_new_tokens)
                continue
            if task.metric_class == "IFEvalMetric":
                parsed = [ifeval.parse_row(r, path=d.files[0], row=i) for i, r in enumerate(d.rows)]
                texts = [ifeval.messages(r)[-1]["content"] for r in parsed[: limit or None]]
            else:
                texts = [build_messages(task, r)[0]["content"] for r in d.rows[: limit or None]]
            rows_out.append({**row, "documents": len(texts), **_requests(texts, reps, tokenizer)})
        return rows_out


def _requests(texts: list[str], reps: int, tokenizer: TokenCounter) -> dict[str, Any]:
    """A dry run's requests, generations, fed tokens and prompt characters of prompts ``texts``, each sent once per
    run (``reps`` runs)."""
    counted = tokenizer.count(texts)
    fed = None if counted is None else counted * reps
    return {
        "requests": len(texts) * reps,
        "generations": len(texts) * reps,
        "fed_tokens": fed,
        "prompt_chars": sum(len(t) for t in texts) * reps,
    }


def _mt_bench_dry_run(
    row: dict[str, Any], d: Any, tokenizer: TokenCounter, limit: int | None, reps: int, max_new: int, cap: int | None
) -> list[dict[str, Any]]:
    """MT-Bench's answer row (2 turns per row per run) and its judge row (:meth:`SeahelmSuite.dry_run`)."""
    rows = [mb.parse_row(r, path=d.files[0], row=i) for i, r in enumerate(d.rows)][: limit or None]
    turn1 = [r.turn_text(0).strip() for r in rows]
    turn2 = [r.turn_text(0).strip() + r.turn_text(1).strip() for r in rows]  # without the first answer
    answers = {**row, "documents": len(rows), **_requests(turn1 + turn2, reps, tokenizer)}
    items, _ = mb.judge_items_of(rows, [("a", "a")] * len(rows))  # placeholder answers: every criterion is judged
    judge_tokens = min(mb.judge_params().max_tokens, cap or mb.judge_params().max_tokens)
    rubric_chars = len(mb.rubric().text)
    judge = {
        "benchmark": row["benchmark"],
        "task": f"{row['task']} (judge)",
        "documents": len(rows),
        "judge_calls": len(items) * reps,
        # for cli.dry_run_cost: every judge call's input (the rubric, the texts, both answers at their budget)
        "judge_items": len(items) * reps,
        "judge_max_calls": 1,
        "judge_max_tokens": judge_tokens,
        "judge_prompt_chars": sum(rubric_chars + sum(len(v) for v in it.texts.values()) for it in items) * reps,
        "judge_answer_tokens": len(items) * reps * 2 * max_new,
    }
    return [answers, judge]


SUITE = SeahelmSuite()
