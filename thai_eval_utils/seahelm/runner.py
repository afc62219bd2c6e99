"""Running SEA-HELM Thai tasks with repeated runs (spec ``seahelm_thai.md`` 3.3, 5): each task a declared
generation task (:mod:`.declarations`) run on the package's one task runner in SEA-HELM's stored layout
(:func:`.task_run.run_repeated`: one store per task, items keyed ``r<run>/<id>``, each run with its own seed), so a
killed run resumes per run and per item; then each run scored as SEA-HELM's metric classes score it, and the mean
and standard error over runs as its aggregation notebook computes them.

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
from typing import Any

import numpy as np

from thai_eval_utils.core.protocols import Model
from thai_eval_utils.seahelm import ifeval_run, mt_bench_run
from thai_eval_utils.seahelm.aggregate import (
    AGGREGATION_SEED,
    N_BOOTSTRAPS,
    OverRuns,
    language_over_runs,
    task_over_runs,
)
from thai_eval_utils.seahelm.config import DEFAULT_TASKS, N_RUNS, constants, task_config
from thai_eval_utils.seahelm.declarations import RunMetric, declare, run_metric
from thai_eval_utils.seahelm.generation import base_replies, chat_replies
from thai_eval_utils.seahelm.pooling import pool_replies
from thai_eval_utils.seahelm.task_run import (
    RECORD_FIELDS,
    Protocol,
    SeahelmTaskRun,
    TaskSetup,
    headline,
    run_repeated,
    task_setup,
)
from thai_eval_utils.seahelm.translation import MetricX

#: The tasks another module runs (IF-Eval and the MT-Bench judge: their own records and scoring) on the same path
#: (:func:`.task_run.run_repeated`), with this module's arguments and ``options``, writing a summary with this
#: module's keys (the suite's hooks read it unchanged).
RUNNERS: dict[str, Callable[..., SeahelmTaskRun]] = {
    ifeval_run.KEY: ifeval_run.run_ifeval,
    mt_bench_run.KEY: mt_bench_run.run_mt_bench,
}


def run_seahelm_task(
    model: Model,
    key: str,
    *,
    runs: int = N_RUNS,
    limit: int | None = None,
    data_dir: str | Path | None = None,
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
        data_dir: the rows' folder (default: the shipped samples).
        protocol: base or instruct, reasoning, greedy, a max_tokens cap, the thinking option.
        metricx: the MetricX-24 model for translation (None: no MetricX score; chrF++ ours beside it).
        rng: the aggregation's generator (default a fresh ``default_rng(94370244)``; pass one to consume it over
            tasks in order, as SEA-HELM does).
        options: passed to the runner of a task another module owns (e.g. the MT-Bench judge's ``judge``).
    """
    common = dict(runs=runs, limit=limit, data_dir=data_dir, outputs=outputs, protocol=protocol, progress=progress)
    if key in RUNNERS:
        return RUNNERS[key](model, rng=rng, **common, **(options or {}))
    setup = task_setup(model, key, runs=runs, limit=limit, data_dir=data_dir, protocol=protocol)
    task, metric = setup.task, run_metric(setup.task, metricx)

    def compute(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One run's batch: SEA-HELM's conversations, the replies with the run's seed, their records."""
        convs = [setup.messages(it["row"]) for it in chunk]
        asked = {"max_tokens": setup.max_new, "seed": chunk[0]["seed"], "sampling": setup.sampling}
        if protocol.base:
            replies = base_replies(model, convs, answer_tag=task.answer_tag, **asked)
        else:
            replies = chat_replies(model, convs, **asked)
        return [
            setup.record(model, it["run"], it["row"], conv, raw)
            for it, conv, raw in zip(chunk, convs, replies, strict=True)
        ]

    return run_repeated(
        model,
        setup,
        declare(task, metric),
        compute,
        lambda records, _: summarize(setup, metric, records, rng, metricx),
        fields=RECORD_FIELDS,
        outputs=outputs,
        progress=progress,
        limit=limit,
    )


def summarize(
    setup: TaskSetup,
    metric: RunMetric,
    records: Mapping[str, Mapping[str, Any]],
    rng: np.random.Generator | None,
    metricx: MetricX | None = None,
) -> dict[str, Any]:
    """Score each run (SEA-HELM's metric class, ``metric``) and aggregate over runs (its notebook), from the stored
    records by key; ``metricx``: the MetricX model the suite was given (recorded in every task's summary)."""
    task, data, ids = setup.task, setup.data, setup.ids

    def entry(r: int) -> dict[str, Any]:
        recs = setup.run_records(records, r)
        metrics, per_item, preds = metric.score_run(recs)
        failed = sum(bool(x.get("failed")) for x in recs)
        return {"metrics": metrics, "per_item": per_item, "predictions": preds, "failed_thinking": failed}

    labels = [[x["label"] for x in setup.run_records(records, r)] for r in setup.run_ids]
    per_run, over, item_means, n_done = setup.score_runs(entry, rng, labels)
    sig = setup.signature(n_done, metricx)
    return {
        **setup.summary(metric.name, {"n": len(ids), "n_docs": len(data.rows), "ids": ids}, per_run, over, item_means),
        "failed_thinking": sum(v["failed_thinking"] for v in per_run.values()),
        "null_count": sum(int(v["metrics"].get("null_count", 0)) for v in per_run.values()),
        "fewshot_leak": {
            "ids": data.leaked_ids() if setup.protocol.base else [],
            "shots": len(setup.shots),
            "note": LEAK_NOTE if task.parent.startswith("thai_exam") else "",
        },
        "logprobs_note": LOGPROBS_NOTE if task.is_logprobs else "",
        "metricx": metricx.identity() if metricx else None,
        "signature": sig,
        "scores": {metric.name: headline(task.key, metric.name, over, len(ids), sig, item_means)},
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
    another module owns (IF-Eval, MT-Bench judge) run through :data:`RUNNERS` (``options`` go to
    them); base models skip SEA-HELM's ``base_models_skip_tasks``. ``pool``: first generate
    the pending replies of every task this module runs in shared engine calls (:mod:`.pooling`: the same texts,
    fewer decode steps; only where the model takes a budget per prompt), then score task by task."""
    keys = list(tasks) if tasks else list(RUN_BY_DEFAULT)
    skip = set(constants()["base_models_skip_tasks"]) if protocol.base else set()
    keys = [k for k in keys if k not in skip]
    common = dict(runs=runs, limit=limit, data_dir=data_dir, outputs=outputs, protocol=protocol, progress=progress)
    if pool:
        pool_replies(model, [k for k in keys if k not in RUNNERS], **common)
    rng = np.random.default_rng(AGGREGATION_SEED)
    return {key: run_seahelm_task(model, key, metricx=metricx, rng=rng, options=options, **common) for key in keys}


def thai_totals(done: Mapping[str, SeahelmTaskRun]) -> list[dict[str, Any]]:
    """SEA-HELM's Thai scores over tasks (spec 5.2, ``helpers/results_aggregation.ipynb``): from each task's 30
    replicates over runs (``run_suite``'s one generator), an aggregation group's, a competency's and the language's
    mean and standard error (:func:`~.aggregate.language_over_runs`). Every task of SEA-HELM's Thai list counts: one
    not in ``done`` (not run, or no data) is 0 with no random draw, as the notebook counts a task without files, so a
    run of some tasks gives the total SEA-HELM would give it (said in ``tasks_run`` and ``missing``)."""
    over: dict[str, OverRuns] = {}
    for key in DEFAULT_TASKS:
        o = (done[key].summary.get("over_runs") or {}) if key in done else {}
        over[key] = (
            OverRuns(o["mean"], o["stderr"], list(o["mean_list"]), o["runs"], o["is_incomplete"], o["branch"])
            if o.get("mean_list")
            else task_over_runs([], [], np.random.default_rng(AGGREGATION_SEED))  # no data: the notebook's zeros
        )
    ran = {k for k, o in over.items() if o.branch != "no data"}
    competency = {k: task_config(k).competency for k in over}
    group = {k: task_config(k).aggregation_group for k in over}
    agg = language_over_runs(over, competency, group)
    levels = {"language": {"th": agg["language"]}, "competency": agg["competencies"], "group": agg["groups"]}
    member_of = {"language": lambda k: "th", "competency": competency.get, "group": group.get}
    return [
        {
            "level": level,
            "name": name,
            "mean": row["mean"],
            "stderr": row["stderr"],
            "tasks_run": sum(k in ran for k in tasks),
            "tasks": len(tasks),
            "missing": ", ".join(k for k in tasks if k not in ran),
            "signature": f"seahelm-thai|{level}:{name}|replicates:{N_BOOTSTRAPS}|seed:{AGGREGATION_SEED}",
        }
        for level, table in levels.items()
        for name, row in table.items()
        for tasks in [[k for k in over if member_of[level](k) == name]]
    ]


#: The summary's notes on ThaiExam's few-shot rows and on the ``-logprobs`` twins.
LEAK_NOTE = "ThaiExam's few-shot rows are its first test rows (SEA-HELM's leak, kept)"
LOGPROBS_NOTE = (
    "SEA-HELM v1.2.1 cannot complete the -logprobs path (pitfall P1): this is what its configuration describes, "
    "not a parity number"
)
#: What ``run_suite`` runs when no task is named: SEA-HELM's Thai list (spec 1.1), then Belebele.
RUN_BY_DEFAULT = (*DEFAULT_TASKS, "belebele-qa-mc")
