"""A stored SEA-HELM task run in SEA-HELM's own layout (spec ``seahelm_thai.md`` 6): the suite's
:meth:`~thai_eval_utils.core.benchmark.Suite.seahelm_results` hook, which ``thai-eval export --format seahelm``
(:mod:`thai_eval_utils.export.seahelm`) writes as run folders SEA-HELM's aggregation notebook reads.

Per run r (folder ``run_<r>``): the task's results dict (the metric class's keys) and one inference line per row with
what the notebook and a reader of SEA-HELM's files use (``base_dataloader.py:402-441``): ``id``, ``label`` (labelled
tasks only: the notebook tells multiple-choice tasks by it), ``metadata`` (IF-Eval: ``subcategory``, which the
notebook reads to skip ``number_words``), ``conversations``, ``responses`` (one per turn, raw), ``cleaned_responses``
(the extracted answer), ``individual_scores`` (``{primary metric: value}``, NaN for rows SEA-HELM does not score)
and the task's columns (IF-Eval ``result``, ``correct_language``, ``detected_language``, ``lang_normalized_result``;
mt-bench-judge ``scores``, ``turn_scores``, ``reflection``, ``final_scores``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thai_eval_utils.core.benchmark import SeahelmRun, SeahelmTask
from thai_eval_utils.core.runs import StoredRun
from thai_eval_utils.tasks.thinking import ThinkingOption, split_reply

#: The task keys whose inference lines carry the IF-Eval and mt-bench-judge columns.
IFEVAL, MT_BENCH = "if-eval", "mt-bench-judge"
#: The IF-Eval columns of an inference line (SEA-HELM's per-item results).
IFEVAL_COLUMNS = ("subcategory", "result", "correct_language", "detected_language", "lang_normalized_result")


def task_entry(task: Mapping[str, Any]) -> dict[str, Any]:
    """The task's entry of SEA-HELM's run config from the stored task configuration (``asdict(TaskConfig)``)."""
    prompt = {k: task.get(k, "") for k in ("preamble", "task_template", "answer_template", "answer_tag")}
    entry = {
        "name": task.get("name"),
        "competency": task.get("competency"),
        "metric": task.get("metric"),
        "languages": {
            "th": {"filepath": task.get("filepath"), "max_tokens": task.get("max_tokens"), "prompt_template": prompt}
        },
    }
    for k in ("aggregation_group", "max_n_runs", "use_logprobs"):
        if task.get(k) not in (None, False):
            entry[k] = task[k]
    return entry


def _line(metric: str, rec: Mapping[str, Any], value: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """One inference line: the record's id, label (labelled tasks), conversation, raw replies, ``extra``'s
    ``cleaned`` answer (default the record's scored text), the item's value and ``extra``'s columns."""
    return {
        "id": rec.get("id"),
        **({"label": rec["label"]} if rec.get("label") is not None else {}),
        "conversations": rec.get("messages"),
        "responses": rec.get("replies") if "replies" in rec else [rec.get("reply")],
        "cleaned_responses": extra.pop("cleaned", rec.get("scored")),
        "individual_scores": {metric: value},
        **extra,
    }


def _ifeval_line(item: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An IF-Eval row's value (NaN for a skipped row) and columns, from its run's per-item check."""
    value = item["lang_normalized_result"]
    extra = {"metadata": {"language": "th", "subcategory": item["subcategory"]}, "cleaned": item.get("checked")}
    return float("nan") if value is None else bool(value), {**extra, **{k: item.get(k) for k in IFEVAL_COLUMNS}}


def _mt_bench_line(rec: Mapping[str, Any], row: Mapping[str, Any], thinking: ThinkingOption) -> tuple[Any, dict]:
    """An mt-bench-judge row's value and columns: its scores, and per turn its answers and the judge's reflections."""
    crit = row.get("criteria") or {}
    reflections = [[crit[c]["reflection"] for c in sorted(crit) if c.split("_")[1] == f"turn{t}"] for t in (0, 1)]
    extra = {
        "metadata": {"language": "th", "category": row["category"]},
        "cleaned": [None if t is None else split_reply(t, thinking).answer for t in rec.get("replies") or []],
        "scores": row["scores"],
        "turn_scores": row["turn_scores"],
        "reflection": reflections,
        "final_scores": row["final_scores"],
    }
    return row["final_scores"], extra


def seahelm_results(run: StoredRun) -> list[SeahelmTask]:
    """A stored SEA-HELM task run (:mod:`~thai_eval_utils.seahelm.runner`'s summary and records) as one task of
    SEA-HELM's results; none for a run without per-run results (a judge store, an unfinished run)."""
    summary = run.summary or {}
    per_run = summary.get("runs") or {}
    task_cfg = (run.card.get("config") or {}).get("task") or {}
    if not per_run or not task_cfg or summary.get("suite") != "seahelm":
        return []
    key, metric = summary["task"], summary["primary_metric"]
    records = {r["key"]: r for r in run.records()}
    ids = [str(i) for i in summary.get("all_ids") or summary.get("ids") or []]  # IF-Eval: skipped rows too
    runs = []
    for index, data in sorted(per_run.items(), key=lambda kv: int(kv[0])):
        recs = [records[f"r{index}/{i}"] for i in ids if f"r{index}/{i}" in records]
        if len(recs) != len(ids):
            continue
        if key == IFEVAL:
            parts = [_ifeval_line(item) for item in data["items"]]
        elif key == MT_BENCH:
            thinking = ThinkingOption(**(((run.card.get("config") or {}).get("protocol") or {}).get("thinking") or {}))
            parts = [_mt_bench_line(rec, row, thinking) for rec, row in zip(recs, data["rows"], strict=True)]
        else:
            preds = data.get("predictions") or [None] * len(recs)
            parts = [(value, {"cleaned": pred}) for value, pred in zip(data["per_item"], preds, strict=True)]
        lines = [_line(metric, rec, value, extra) for rec, (value, extra) in zip(recs, parts, strict=True)]
        runs.append(SeahelmRun(int(index), data.get("seed"), dict(data["metrics"]), lines))
    entry = {**task_entry(task_cfg), "metric": metric}
    competency = summary.get("competency") or entry["competency"]
    return [SeahelmTask(key, "th", competency, metric, summary.get("aggregation_group"), entry, tuple(runs))]
