"""Running SEA-HELM Thai tasks with repeated runs (spec ``seahelm_thai.md`` 3.3, 5): each run with its own seed,
every reply stored as it arrives (one :class:`RunStore` per task, items keyed ``r<run>/<id>``), so a killed run
resumes per run and per item; then each run scored as SEA-HELM's metric classes score it, and the mean and standard
error over runs as its aggregation notebook computes them.

The number of runs is not part of the run's config id: ``--runs 8`` after ``--runs 2`` adds runs 2-7 to the same
folder. The raw reply is stored whole; the scored text is the reply with the thinking cut
(``tasks.thinking.split_reply``; a thinking block that never closes is a failed answer, counted). The model calls
run inside ``tasks.thinking.apply_to_model`` (``enable_thinking``, a thinking budget); the summary says what the
model did with them (``thinking``) and, over the requested runs' replies, how many thought, never closed their
thinking, and answered in Thai (``replies``; per run ``replies_by_run``: :func:`reply_summary`). The thinking option
is part of the config id for every setting (SEA-HELM's runs carried it from their first version).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from thai_eval_utils.core.protocols import Model
from thai_eval_utils.core.provenance import Score
from thai_eval_utils.core.runloop import run_items
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.seahelm import ifeval_run, mt_bench_run
from thai_eval_utils.seahelm.aggregate import AGGREGATION_SEED, OverRuns, task_over_runs
from thai_eval_utils.seahelm.config import N_RUNS, SEEDS, TaskConfig, constants
from thai_eval_utils.seahelm.data import TaskData
from thai_eval_utils.seahelm.generation import Sampling, base_replies, chat_replies, probability
from thai_eval_utils.seahelm.metrics import f1_acc_metrics, qa_metrics, summarization_metrics
from thai_eval_utils.seahelm.pooling import pool_replies
from thai_eval_utils.seahelm.task_run import (
    RECORD_FIELDS,
    RECORD_FORMAT,
    SUITE_NAME,
    Protocol,
    SeahelmTaskRun,
    data_hash,
    item_interval,
    item_key,
    reply_summary,
    shots_for,
    signature,
    task_setup,
    unscored_when_a_reply_fails,
)
from thai_eval_utils.seahelm.translation import MetricX, metricx_input, metricx_metrics, translation_metrics
from thai_eval_utils.tasks.thinking import apply_to_model

__all__ = [
    "EXTERNAL_MODULES",
    "EXTERNAL_RUNNERS",
    "RECORD_FORMAT",
    "SUITE_NAME",
    "Protocol",
    "SeahelmTaskRun",
    "item_key",
    "run_suite",
    "run_seahelm_task",
    "signature",
    "reply_summary",
    "summarize",
]

#: The task table's entries that another module runs (IF-Eval and the MT-Bench judge): key -> module. The module
#: exposes ``run_seahelm_task(model, key, *, runs, limit, data_dir, outputs, protocol, rng, progress, **options) -> SeahelmTaskRun``
#: and writes a summary with this module's keys (``primary_metric``, ``n``, ``n_docs``, ``ids``, ``runs`` {run: {seed,
#: metrics, per_item}}, ``over_runs`` (:func:`~.aggregate.task_over_runs` on the per-item values, consuming ``rng``),
#: ``item_means``, ``null_count``, ``failed_thinking``, ``competency``, ``signature``, ``scores``), so the suite's
#: hooks read it unchanged. The modules are imported here, statically: they build on :mod:`.task_run` (the record,
#: the signature, the reply summary) and never import this module, so the imports hold no cycle.
EXTERNAL_MODULES: dict[str, ModuleType] = {"if-eval": ifeval_run, "mt-bench-judge": mt_bench_run}
#: Runners registered in code (tests, a user's own): key -> runner with the signature above; before the modules.
EXTERNAL_RUNNERS: dict[str, Callable[..., "SeahelmTaskRun"]] = {}


def external_runner(key: str) -> Callable[..., "SeahelmTaskRun"] | None:
    """The runner of a task another module owns (registered, else its module's ``run_seahelm_task``, looked up on each call
    so a patched module is honoured); None for a task this module runs itself."""
    if key in EXTERNAL_RUNNERS:
        return EXTERNAL_RUNNERS[key]
    module = EXTERNAL_MODULES.get(key)
    return None if module is None else module.run_seahelm_task


def _score_run(
    task: TaskConfig, recs: Sequence[Mapping[str, Any]], metricx: MetricX | None
) -> tuple[dict[str, Any], list[float], list[Any]]:
    """One run's metrics, per-item values (SEA-HELM's ``individual_scores``) and predictions."""
    replies = [r["scored"] for r in recs]
    labels = [r["label"] for r in recs]
    tag = task.answer_tag
    if task.is_logprobs:
        probs = [probability(r.get("gold_logprob")) for r in recs]
        lps = [r["gold_logprob"] for r in recs if r.get("gold_logprob") is not None]
        metrics = {
            "null_count": sum(r.get("gold_logprob") is None for r in recs),
            "average_cumulative_logprobs": float(np.mean(lps)) if len(lps) >= 2 else 0,
            "average_cumulative_probabilities": float(np.mean(probs)),
        }
        return metrics, probs, [None] * len(recs)
    if task.metric_class == "F1AccMetric":
        return f1_acc_metrics(labels, replies, tag)
    if task.metric_class == "QuestionAnsweringMetric":
        return qa_metrics(labels, replies, tag)
    if task.metric_class == "SummarizationMetric":
        return summarization_metrics(labels, replies, tag)
    if task.metric_class == "TranslationMetric":
        metrics, per_item, preds = translation_metrics(labels, replies, tag)
        if metricx is not None:
            inputs = [
                metricx_input(r["source"], None if r.get("failed") else p, r["label"]) for r, p in zip(recs, preds)
            ]
            mx, per_item = metricx_metrics(metricx.score(inputs))
            metrics.update(mx)
        return metrics, per_item, preds
    raise ValueError(f"{task.key}: metric class {task.metric_class} is scored by another module")


def primary_metric(task: TaskConfig, metricx: MetricX | None) -> str:
    """The task's headline metric: SEA-HELM's, except translation without a MetricX model (chrF++, ours)."""
    if task.metric_class == "TranslationMetric" and metricx is None:
        return "chrf_pp_ours"
    return task.metric


def run_seahelm_task(
    model: Model,
    key: str,
    *,
    runs: int = N_RUNS,
    limit: int | None = None,
    data_dir: str | Path | None = None,
    data: TaskData | None = None,
    outputs: str | Path | None = None,
    protocol: Protocol = Protocol(),
    metricx: MetricX | None = None,
    rng: np.random.Generator | None = None,
    progress: bool = True,
    options: Mapping[str, Any] | None = None,
) -> SeahelmTaskRun:
    """Run one SEA-HELM Thai task ``runs`` times (run r with seed ``SEEDS[r]``; ``max_n_runs`` respected), resuming
    what the store holds, then score every run and aggregate over runs.

    Args:
        model: any :class:`~thai_eval_utils.core.protocols.Model` (instruct: ``chat``; base: ``generate``).
        key: SEA-HELM's results key (``sentiment``, ``thai_exam_ic``, ``causal-logprobs``...).
        runs: how many of SEA-HELM's eight runs (default all eight).
        limit: the first N rows (``--limit``, ``huggingface_dataloader.py:64-65``).
        data_dir / data: the rows (default: the shipped samples).
        protocol: base or instruct, reasoning, greedy, a max_tokens cap, the thinking option.
        metricx: the MetricX-24 model for translation (None: no MetricX score; chrF++ ours beside it).
        rng: the aggregation's generator (default a fresh ``default_rng(94370244)``; pass one to consume it over
            tasks in order, as SEA-HELM does).
        options: passed to the runner of a task another module owns (e.g. the MT-Bench judge's ``judge``).
    """
    runner = external_runner(key)
    if runner is not None:
        return runner(
            model,
            key,
            runs=runs,
            limit=limit,
            data_dir=data_dir,
            outputs=outputs,
            protocol=protocol,
            rng=rng,
            progress=progress,
            **(options or {}),
        )
    setup = task_setup(model, key, runs=runs, limit=limit, data_dir=data_dir, data=data, protocol=protocol)
    task, data, rows, run_ids, sampling = setup.task, setup.data, setup.rows, setup.run_ids, setup.sampling
    wanted = {item_key(r, row) for r in run_ids for row in rows}
    computed = 0
    with setup.open_store(model, outputs) as store, apply_to_model(model, protocol.thinking) as support:
        for r in run_ids:
            seed = SEEDS[r]
            items = [(r, row) for row in rows]

            def compute(chunk: list[tuple[int, dict[str, Any]]], seed: int = seed) -> list[dict[str, Any]]:
                convs = [setup.messages(row) for _, row in chunk]
                if protocol.base:
                    replies = base_replies(
                        model, convs, max_tokens=setup.max_new, seed=seed, sampling=sampling, answer_tag=task.answer_tag
                    )
                else:
                    replies = chat_replies(model, convs, max_tokens=setup.max_new, seed=seed, sampling=sampling)
                return [
                    setup.record(model, run, row, conv, raw)
                    for (run, row), conv, raw in zip(chunk, convs, replies, strict=True)
                ]

            size = protocol.batch_size or getattr(model, "concurrency", None) or 8
            with unscored_when_a_reply_fails(key, store, wanted):
                outcome = run_items(
                    store,
                    items,
                    lambda it: item_key(*it),
                    compute,
                    batch_size=size,
                    desc=f"seahelm {key} run {r} ({model.name})",
                    progress=progress,
                    fields=RECORD_FIELDS,
                )
            computed += outcome.computed
        summary = summarize(task, store, rows, run_ids, data, protocol, sampling, metricx, rng)
        summary.update(
            reply_summary([x for x in store.iter_records() if x["key"] in wanted], protocol.thinking, support)
        )
        summary.update({"n_computed_this_run": computed, "limit": limit})
        store.write_summary(summary)
    return SeahelmTaskRun(key, summary, store.root, computed)


def summarize(
    task: TaskConfig,
    store: RunStore,
    rows: Sequence[Mapping[str, Any]],
    run_ids: Sequence[int],
    data: TaskData,
    protocol: Protocol,
    sampling: Sampling,
    metricx: MetricX | None,
    rng: np.random.Generator | None,
) -> dict[str, Any]:
    """Score each run (SEA-HELM's metric class) and aggregate over runs (its notebook), from the stored records."""
    records = {r["key"]: r for r in store.iter_records()}
    ids = [str(row["id"]) for row in rows]
    per_run: dict[str, Any] = {}
    scores: list[list[float]] = []
    labels: list[list[Any]] = []
    for r in run_ids:
        recs = [records.get(f"r{r}/{i}") for i in ids]
        if any(rec is None for rec in recs):
            scores.append([])
            labels.append([])
            continue
        metrics, per_item, preds = _score_run(task, recs, metricx)
        per_run[str(r)] = {
            "seed": SEEDS[r],
            "metrics": metrics,
            "per_item": per_item,
            "predictions": preds,
            "failed_thinking": sum(bool(x.get("failed")) for x in recs),
        }
        scores.append(per_item)
        labels.append([x["label"] for x in recs])
    primary = primary_metric(task, metricx)
    rng = rng if rng is not None else np.random.default_rng(AGGREGATION_SEED)
    over: OverRuns = task_over_runs(scores, labels, rng, single_run_logprobs=task.is_logprobs)
    done = [s for s in scores if s]
    item_means = np.mean(done, axis=0).tolist() if done else []
    n_docs = len(data.rows)
    sig = signature(task, protocol, sampling, data_hash(data), len(ids), n_docs, len(done), metricx)
    score = Score(f"{SUITE_NAME}/{task.key}/{primary}", over.mean, len(ids), over.stderr, sig).to_dict()
    score.update(
        {
            "stderr_kind": "SEA-HELM: sd of 30 bootstrap replicates over runs / sqrt(30) (not clustered)",
            "interval": item_interval(item_means),
            "interval_kind": "ours: percentile bootstrap over items of "
            "the per-item mean over runs (95%, 1000 resamples, seed 0)",
        }
    )
    run_means = [per_run[str(r)]["metrics"].get(primary) for r in run_ids if str(r) in per_run]
    return {
        "suite": SUITE_NAME,
        "task": task.key,
        "competency": task.competency,
        "aggregation_group": task.aggregation_group,
        "primary_metric": primary,
        "n": len(ids),
        "n_docs": n_docs,
        "ids": ids,
        "runs_requested": list(run_ids),
        "records_per_item": len(run_ids),
        "runs": per_run,
        "over_runs": over.to_dict(),
        "item_means": item_means,
        "run_metric_mean": float(np.mean(run_means)) if run_means else None,
        "failed_thinking": sum(v["failed_thinking"] for v in per_run.values()),
        "null_count": sum(int(v["metrics"].get("null_count", 0)) for v in per_run.values()),
        "fewshot_leak": {
            "ids": data.leaked_ids() if protocol.base else [],
            "shots": len(shots_for(task, data, protocol.base)),
            "note": "ThaiExam's few-shot rows are its first test rows (SEA-HELM's leak, kept)"
            if task.parent.startswith("thai_exam")
            else "",
        },
        "logprobs_note": "SEA-HELM v1.2.1 cannot complete the -logprobs path (pitfall P1): this is what its "
        "configuration describes, not a parity number"
        if task.is_logprobs
        else "",
        "metricx": metricx.identity() if metricx else None,
        "signature": sig,
        "scores": {primary: score},
    }


def run_suite(
    model: Model,
    tasks: Sequence[str] | None = None,
    *,
    runs: int = N_RUNS,
    limit: int | None = None,
    data_dir: str | Path | None = None,
    outputs: str | Path | None = None,
    protocol: Protocol = Protocol(),
    metricx: MetricX | None = None,
    progress: bool = True,
    options: Mapping[str, Any] | None = None,
    pool: bool = True,
) -> dict[str, SeahelmTaskRun]:
    """Every task asked for (default: SEA-HELM's Thai list this package runs), in order, with ONE aggregation
    generator ``default_rng(94370244)`` consumed task by task as SEA-HELM's notebook consumes it (P3). Tasks
    another module owns (IF-Eval, MT-Bench judge) run through :func:`external_runner` (``options`` go to
    them); base models skip SEA-HELM's ``base_models_skip_tasks``. ``pool``: first generate
    the pending replies of every task this module runs in shared engine calls (:mod:`.pooling`: the same texts,
    fewer decode steps; only where the model takes a budget per prompt), then score task by task."""
    keys = list(tasks) if tasks else list(RUN_BY_DEFAULT)
    skip = set(constants()["base_models_skip_tasks"]) if protocol.base else set()
    keys = [k for k in keys if k not in skip]
    if pool:
        pool_replies(
            model,
            [k for k in keys if external_runner(k) is None],
            runs=runs,
            limit=limit,
            data_dir=data_dir,
            outputs=outputs,
            protocol=protocol,
            progress=progress,
        )
    rng = np.random.default_rng(AGGREGATION_SEED)
    out = {}
    for key in keys:
        out[key] = run_seahelm_task(
            model,
            key,
            runs=runs,
            limit=limit,
            data_dir=data_dir,
            outputs=outputs,
            protocol=protocol,
            metricx=metricx,
            rng=rng,
            progress=progress,
            options=options,
        )
    return out


#: What ``run_suite`` runs when no task is named: SEA-HELM's Thai list (spec 1.1), then Belebele.
RUN_BY_DEFAULT = (
    "sentiment",
    "qa",
    "toxicity",
    "translation-en-xx",
    "translation-xx-en",
    "abssum",
    "causal",
    "nli",
    "if-eval",
    "thai_exam_a_level",
    "thai_exam_ic",
    "thai_exam_onet",
    "thai_exam_tgat",
    "thai_exam_tpat1",
    "mt-bench-judge",
    "belebele-qa-mc",
)
