"""A declared task as a :class:`~thai_eval_utils.core.benchmark.Suite`: the registry lists it, and
compare, the report, the exports and ``thai-eval run`` read it through the same hooks as a shipped benchmark.

One suite per task (name = the task's name, one task of the same name; runs stored as ``<name>/<name>``). Its
headline scores are the task's metrics, each as its object says (``Metric.kind`` and ``scale``): acc / acc_norm /
exact_match per item (binary), ROUGE-L or a judge's score per item (mean; an unjudged item left out), chrF / BLEU
over the corpus (recomputed by compare and the report from the items' ``hyp`` and ``ref``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from thai_eval_utils.core.benchmark import Headline, ItemView, LeaderboardTable, LmEvalTask, Suite, TokenCounter
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import slugify
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.stats.cells import cell, corpus_ci, mean_ci, scaled_values, summary_value
from thai_eval_utils.tasks.language import stats_note
from thai_eval_utils.tasks.thinking import DEFAULT, ThinkingOption, option_of
from thai_eval_utils.tasks.items import load_items
from thai_eval_utils.tasks.judged import judged_metrics
from thai_eval_utils.tasks.runner import scored_text, templates_of
from thai_eval_utils.tasks.shaping import Sampler, filter_name, lm_eval_filter_list

#: The notebook ``thai-eval run`` executes for a declared task (under ``notebooks/``).
TASK_NOTEBOOK = "task.ipynb"
#: lm-eval's ``output_type`` of each kind.
_OUTPUT_TYPE = {"multiple_choice": "multiple_choice", "generation": "generate_until"}


def _sent_text(record: Mapping[str, Any]) -> str | None:
    """The context a stored record says was sent (``context``; per-choice ``requests``: the first one's; a chat:
    its last message), None for a record stored before records carried it."""
    if "context" in record:
        return str(record["context"])
    if record.get("requests"):
        return str(record["requests"][0][0])
    if record.get("messages"):
        return str(record["messages"][-1]["content"])
    return None


def _sampler_name(sampler: Sampler | None) -> str:
    """lm-eval's name of a few-shot sampler (``first_n`` without one); a sampler lm-eval lacks: its class."""
    if sampler is None:
        return "first_n"
    return sampler.lm_eval_name or sampler.declaration()["class"]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DeclaredSuite(Suite):
    """The suite of one declared task (``task``: the declaration, bound to its file's folder; ``source``: the
    task file)."""

    notebooks = (TASK_NOTEBOOK,)
    position = 200

    def __init__(self, task: Any, source: str | Path | None = None) -> None:
        self.task = task
        self.source = None if source is None else Path(source).expanduser().resolve()
        self.name = task.name  # type: ignore[misc]  # per instance: one suite per declared task
        self.title = task.title or task.name  # type: ignore[misc]
        self.version = str(task.version)  # type: ignore[misc]
        self.tasks = (task.name,)  # type: ignore[misc]
        self.data_folder = task.name  # type: ignore[misc]  # --data ROOT: ROOT/<task> may hold the data files
        self.short_title = task.name  # type: ignore[misc]
        self.leaderboard_tables = (LeaderboardTable(task.name, self.title, task.metric_names),)  # type: ignore[misc]
        self.detail_metrics = frozenset(task.metric_names)  # type: ignore[misc]

    # ------------------------------------------------------------------------------------------- stored runs
    def headlines(self, run: StoredRun, data_dir: Path | None = None) -> list[Headline]:
        """One headline per declared metric, per item keyed by the item's id."""
        recs = run.records()
        task = self.task
        base = pd.DataFrame({"key": [str(r["id"]) for r in recs], "input": [r.get("question", "") for r in recs]})
        if task.kind == "multiple_choice":
            base["ref"] = [r["choices"][r["gold"]] for r in recs]
            base["hyp"] = [r["choices"][r["pred"]] for r in recs]
        else:
            base["ref"] = [r.get("reference", "") for r in recs]
            option = option_of(run.card.get("config") or {})  # the replies as the run scored them
            base["hyp"] = [scored_text(task, r.get("output") or "", option) for r in recs]
        out = []
        for metric in task.scorers:
            items = base.copy()
            name = f"{self.name}/{run.task}/{metric.name}"
            if metric.kind == "corpus":
                out.append(
                    Headline(name, self.name, run.task, "corpus", metric.scale, items, run, corpus_metric=metric)
                )
                continue
            values = [r.get(metric.name) for r in recs]  # None: an unjudged item, left out (counted in the summary)
            items = items[[v is not None for v in values]].reset_index(drop=True)
            items["value"] = [float(v) for v in values if v is not None]
            out.append(Headline(name, self.name, run.task, metric.kind, metric.scale, items, run))
        return out

    # ------------------------------------------------------------------------------------------------ display
    def item_views(
        self,
        run: StoredRun,
        heads: Sequence[Headline],
        data_dir: Path | None,
        pools: dict[str, list[str]],
        notes: list[str],
    ) -> list[ItemView]:
        """Each item: the question, choices, log-likelihoods, prediction and gold (multiple choice) or the output
        and reference (generation); ``value`` is the first metric's."""
        metric = self.task.scorers[0]
        first = metric.name
        views = []
        for r in run.records():
            value = r.get(first)
            view = ItemView(
                run.task, str(r["id"]), value=None if value is None else float(value), question=r.get("question")
            )
            if self.task.kind == "multiple_choice":
                view.choices, view.loglikelihoods = list(r["choices"]), list(r["lls"])
                view.pred, view.gold = metric.predict(view.loglikelihoods, view.choices), int(r["gold"])
                view.correct = int(float(r[first]) == 1.0)
            else:
                view.output, view.reference = r.get("output"), r.get("reference")
                if metric.kind == "binary" and value is not None:
                    view.correct = int(value)
            views.append(view)
        return views

    def leaderboard_cells(self, model: str, heads: Sequence[Headline], boot: Any) -> list[dict[str, Any]]:
        """One cell per metric: the run's summary value on the table's scale, n, a percentile bootstrap interval."""
        out = []
        for h in (h for h in heads if h.family == self.name):
            metric = h.name.rsplit("/", 1)[-1]
            value, n = summary_value(h.run.summary, metric, h.scale)
            low, high = self._interval(h, boot)
            n_docs = (h.run.summary or {}).get("n_docs")
            note = f"partial: {len(h.items)} of {n_docs} items" if n_docs and len(h.items) < int(n_docs) else ""
            replies = stats_note((h.run.summary or {}).get("replies"))  # beside a generation score
            note = "; ".join(x for x in (note, replies) if x)
            out.append(
                cell(self.name, model, metric, value, n, f"{self.name}|{h.stratum}", low=low, high=high, note=note)
            )
        return out

    @staticmethod
    def _interval(h: Headline, boot: Any) -> tuple[float | None, float | None]:
        """``stats.cells``' intervals; every item with the same value: that value at both ends (a percentile
        bootstrap of a constant)."""
        if h.kind == "corpus":
            return corpus_ci(h.items["hyp"].tolist(), h.items["ref"].tolist(), boot, h.corpus_metric)
        x = scaled_values(h)
        if x.size >= 2 and np.all(x == x[0]):
            return float(x[0]), float(x[0])
        return mean_ci(h, boot)

    # ------------------------------------------------------------------------------------------------ exports
    def leaderboard_results(self, run: StoredRun) -> dict[str, dict[str, float]]:
        """``{task: {metric: value}}`` from the run's summary (values as stored: acc 0-1, chrF 0-100)."""
        scores = (run.summary or {}).get("scores") or {}
        return {
            run.task: {
                m: float(e["value"]) for m, e in scores.items() if isinstance(e, dict) and e.get("value") is not None
            }
        }

    def lm_eval_task(self, run: StoredRun) -> str | None:
        """lm-eval's task name of the run: the declared task's name."""
        return run.task

    def lm_eval_export(self, run: StoredRun, data: Path | None = None) -> LmEvalTask:
        """The run as one lm-evaluation-harness 0.4.13 task: its ``results`` and ``configs`` entries and its samples
        lines (``doc_id, doc, target, arguments, resps, filtered_resps, filter, metrics, doc_hash, prompt_hash,
        target_hash`` and the metric values), rebuilt from the stored records; multiple choice: one ``arguments``
        pair per choice (the context with its few-shot block, delimiter + choice), ``resps`` ``[[ll, greedy]]``."""
        records = run.records()
        # a record carries what was sent; records stored before they did have it rebuilt from the data
        contexts = self._contexts() if any(_sent_text(r) is None for r in records) else {}
        option = option_of(run.card.get("config") or {})
        samples = [
            self._sample(r, _sent_text(r) or contexts.get(str(r["id"]), r.get("question", "")), option) for r in records
        ]
        summary = run.summary or {}
        results: dict[str, Any] = {
            "name": run.task,
            "alias": run.task,
            "sample_len": int(summary.get("n", len(samples))),
        }
        filters = getattr(self.task, "filters", ())
        key = filter_name(filters)
        for metric, entry in (summary.get("scores") or {}).items():
            if metric in self.task.metric_names and isinstance(entry, dict):
                results[f"{metric},{key}"] = entry.get("value")
                results[f"{metric}_stderr,{key}"] = "N/A" if entry.get("stderr") is None else entry["stderr"]
        fewshot = self.task.fewshot
        config = {
            "task": run.task,
            "dataset_path": self.task.data,
            "test_split": None,
            "fewshot_split": fewshot.file if fewshot else None,
            "output_type": _OUTPUT_TYPE[self.task.kind],
            "target_delimiter": self.task.target_delimiter,
            "fewshot_delimiter": fewshot.delimiter if fewshot else "\n\n",
            "fewshot_config": {
                "sampler": _sampler_name(fewshot.chooser if fewshot else None),
                "split": fewshot.file if fewshot else None,
            },
            "num_fewshot": fewshot.n if fewshot else 0,
            "metric_list": [
                {"metric": m.name, "aggregation": "mean", "higher_is_better": m.higher_is_better}
                for m in self.task.scorers
            ],
            "metadata": {"version": self.task.version, "declaration": run.card.get("config", {}).get("task")},
        }
        if filters:
            config["filter_list"] = lm_eval_filter_list(filters)
        if self.task.kind == "generation":
            config["generation_kwargs"] = {
                "until": list(self.task.stop),
                "max_gen_toks": self.task.max_new_tokens,
                "temperature": self.task.temperature,
                "do_sample": self.task.temperature > 0,
            }
        return LmEvalTask(run.task, results, config, fewshot.n if fewshot else 0, samples)

    def _contexts(self) -> dict[str, str]:
        """Item id -> the context sent (few-shot block included); empty when the data cannot be read from here."""
        try:
            return {it["id"]: it["context"] for it in load_items(self.task)}
        except ThaiEvalDataError:
            return {}

    def _sample(self, r: dict[str, Any], context: str, option: ThinkingOption = DEFAULT) -> dict[str, Any]:
        if self.task.kind == "multiple_choice":
            target = r["choices"][r["gold"]]
            pairs = r.get("requests") or [(context, self.task.target_delimiter + c) for c in r["choices"]]
            args = {f"gen_args_{i}": {"arg_0": c, "arg_1": x} for i, (c, x) in enumerate(pairs)}
            greedy = r.get("is_greedy") or [False] * len(r["lls"])
            resps = [[[str(ll), str(g)]] for ll, g in zip(r["lls"], greedy)]
            filtered = [[str(ll), str(g)] for ll, g in zip(r["lls"], greedy)]
            doc = {"id": r["id"], "question": r["question"], "choices": r["choices"], "gold": r["gold"]}
        else:
            target = r["reference"]
            args = {
                "gen_args_0": {
                    "arg_0": context,
                    "arg_1": {"until": list(self.task.stop), "max_gen_toks": self.task.max_new_tokens},
                }
            }
            resps, filtered = (
                [[r["output"]]],
                [scored_text(self.task, r["output"], option)],
            )  # lm-eval: after its filters
            doc = {"id": r["id"], "question": r["question"], "reference": r["reference"]}
        metrics = [m for m in self.task.metric_names if m in r]
        return {
            "doc_id": int(r["doc"]),
            "doc": doc,
            "target": target,
            "arguments": args,
            "resps": resps,
            "filtered_resps": filtered,
            "filter": filter_name(getattr(self.task, "filters", ())),
            "metrics": metrics,
            "doc_hash": _hash(json.dumps(doc, indent=2, default=str, ensure_ascii=False)),
            "prompt_hash": _hash(context),
            "target_hash": _hash(str(target)),
            **{m: r[m] for m in metrics},
        }

    # ---------------------------------------------------------------------------------------------------- run
    def notebook_parameters(self, tasks: tuple[str, ...], options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The task's name and the task file the notebook includes."""
        return {"task": self.name, "tasks_dir": None if self.source is None else str(self.source)}

    def executed_notebook(self, notebook: str) -> str:
        """``task_<name>.ipynb``: every declared task runs ``task.ipynb``, so each (model, task) keeps its own
        executed copy (as the scores' table ``task_<name>_<model>``)."""
        return f"{Path(notebook).stem}_{slugify(self.name)}{Path(notebook).suffix}"

    def dry_run(
        self,
        data: Path,
        tokenizer: TokenCounter,
        *,
        tasks: tuple[str, ...] = (),
        limit: int | None,
        max_new_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """The items, requests and tokens the task would feed (multiple choice: one request per choice; ``fed``
        as lm-eval feeds them, ``tree`` as the prefix-sharing engine runs them, when the tokenizer counts requests)."""
        items = load_items(self.task, limit=limit)
        if self.task.kind == "multiple_choice":
            requests = [(it["context"], self.task.target_delimiter + c) for it in items for c in it["choices"]]
            counts = tokenizer.count_requests(requests) if hasattr(tokenizer, "count_requests") else None
            fed = counts["fed"] if counts else tokenizer.count([c + x for c, x in requests])
            return [
                {
                    "benchmark": self.name,
                    "task": self.name,
                    "documents": len(items),
                    "requests": len(requests),
                    "fed_tokens": fed,
                    "tree_tokens": counts["tree"] if counts else None,
                    "generations": 0,
                    "max_new_tokens": None,
                    "judge_calls": 0,
                }
            ]
        texts = [
            it["context"] if "messages" not in it else "\n".join(m["content"] for m in it["messages"]) for it in items
        ]
        budget = max_new_tokens or self.task.max_new_tokens
        return [
            {
                "benchmark": self.name,
                "task": self.name,
                "documents": len(items),
                "requests": len(items),
                "fed_tokens": tokenizer.count(texts),
                "tree_tokens": None,
                "generations": len(items),
                "max_new_tokens": budget,
                "judge_calls": len(items) * len(judged_metrics(self.task.scorers)),  # at least one call per judgement
            }
        ]

    def templates(self) -> dict[str, str]:
        """The task's prompt templates by name."""
        return templates_of(self.task)

    def __repr__(self) -> str:
        return f"<declared {self.task.kind} task {self.name}{'' if self.source is None else f' from {self.source}'}>"
