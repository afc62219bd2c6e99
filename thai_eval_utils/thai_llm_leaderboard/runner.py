"""A log-likelihood task of the Thai LLM Leaderboard as a resumable run (spec thai_llm_leaderboard.md 2, 5.1):
items validated whole first (:mod:`.data`), then the task's declaration (:mod:`.declarations`) run by
``tasks.runner.run_task`` in the leaderboard's stored layout (:class:`~thai_eval_utils.tasks.runner.RunLayout`:
stored as ``thai_llm_leaderboard/<task>`` with the config, records and summary runs had before declarations; kill -9
safe: each batch is stored as it finishes, a rerun computes only what is missing), then the summary: the declared
metrics, accuracy (the leaderboard's number) and macro F1, with n and a bootstrap interval, the runner's other
metric columns beside them, excluded and truncated rows counted, and a signature naming
the task variant, label set, protocol options, data and template hashes, model and versions.

:func:`score_task` is the same scoring without a store (benchmarks, parity checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from thai_eval_utils import __version__
from thai_eval_utils.backend.openai_client import stable_model_identity
from thai_eval_utils.core.provenance import Score, package_versions, sha256_text
from thai_eval_utils.core.protocols import prepare_loglikelihood
from thai_eval_utils.tasks.runner import RunLayout, TaskRun, run_task
from thai_eval_utils.thai_llm_leaderboard.data import TaskData, load_task
from thai_eval_utils.thai_llm_leaderboard.declarations import declare
from thai_eval_utils.thai_llm_leaderboard.metrics import runner_metrics
from thai_eval_utils.thai_llm_leaderboard.prompts import template
from thai_eval_utils.thai_llm_leaderboard.protocol import LEADERBOARD, NLUProtocol
from thai_eval_utils.thai_llm_leaderboard.scoring import check_engine, item_record, label_results, score_batch
from thai_eval_utils.thai_llm_leaderboard.tasks import NLUTask, nlu_task

#: The suite's name: runs are stored as ``thai_llm_leaderboard/<task>``.
SUITE_NAME = "thai_llm_leaderboard"
#: The layout of the records and summary (recorded in each run's config).
RECORD_FORMAT = 1
#: Items per model call when neither the caller nor the model says (each call's items are stored together).
DEFAULT_BATCH = 8


@dataclass
class NLURun(TaskRun):
    """A finished run of one task (a declared task's run, :class:`~thai_eval_utils.tasks.runner.TaskRun`: records
    in item order, ``scores``, the summary, where it is stored, ``table()``), with the rows the runner excludes."""

    excluded: list[dict[str, Any]] = field(default_factory=list)

    @property
    def accuracy(self) -> Score:
        """The leaderboard's number as a Score (value, n, standard error, signature)."""
        s = self.summary["scores"]["accuracy"]
        return Score(s["name"], s["value"], s["n"], s.get("stderr"), s["signature"])

    def __str__(self) -> str:
        s = self.summary
        return f"{self.accuracy} | excluded {s['n_excluded']}, truncated {s['n_truncated']}"


def signature(task: NLUTask, protocol: NLUProtocol, data: TaskData, model: Any, n: int) -> str:
    """A score's provenance line: task and variant, labels, protocol options, data and template hashes, model,
    versions, and the limit when partial."""
    limit = f"|limit:{n}/{len(data.items)}" if n < len(data.items) else ""
    model_id = getattr(model, "name", "model")
    versions = package_versions(("torch", "transformers"))
    return (
        f"{task.key}:{task.variant}|{task.label_note()}|{protocol.signature()}|data:{data.source['sha256'][:8]}"
        f"|tmpl:{sha256_text(template(task.task_type))[:8]}|model:{model_id}|thai-eval {__version__}"
        f"|transformers {versions.get('transformers')}{limit}"
    )


def score_task(
    model: Any,
    task: NLUTask | str,
    data: TaskData | None = None,
    *,
    data_dir: str | Path | None = None,
    protocol: NLUProtocol = LEADERBOARD,
    limit: int | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Score a task's items on ``model`` without storing anything: one record per scored item (:func:`.scoring.
    score_batch`: ``lls``, ``pred``, ``gold``, ``correct``, ...), in item order. ``data``: the loaded task data,
    else read from ``data_dir``; ``limit``: the first N scored items;
    ``batch_size``: items per ``model.loglikelihood`` call (default: all in one call, so the engine packs as many
    prompts per forward as its token budget allows)."""
    task = nlu_task(task) if isinstance(task, str) else task
    data = data if data is not None else load_task(task, data_dir)
    items = data.items if limit is None else data.items[: max(0, int(limit))]
    protocol = protocol.for_model(model)  # sums="labels" needs token-id scoring and float32 totals
    trunc = check_engine(model, protocol)
    size = max(1, int(batch_size or len(items) or 1))
    out = []
    for start in range(0, len(items), size):
        out += score_batch(model, items[start : start + size], protocol, limit=trunc, progress=progress)
    return out


def summarize(
    task: NLUTask,
    records: Sequence[dict[str, Any]],
    data: TaskData,
    protocol: NLUProtocol,
    model: Any,
    limit: int | None,
) -> dict[str, Any]:
    """The run's summary: ``scores`` (accuracy and macro F1 with n, interval and signature), ``runner_metrics``
    (the runner's ten columns), counts of items, excluded and truncated rows."""
    golds, preds = [int(r["gold"]) for r in records], [int(r["pred"]) for r in records]
    sig = signature(task, protocol, data, model, len(records))
    scores = {}
    for metric in declare(task).scorers:  # accuracy (the leaderboard's number), then macro F1 over the predictions
        name = f"{SUITE_NAME}/{task.key}/{metric.name}"
        if metric.kind == "corpus":
            score = Score(name, metric(preds, golds), len(records), None, sig)
        else:
            score = Score.mean(name, [int(metric.score_item(p, g)) for p, g in zip(preds, golds)], sig)
        iv = metric.interval(preds, golds)
        scores[metric.name] = {**score.to_dict(), "interval": iv.to_dict() if iv else None}
    truncated = [str(r["key"]) for r in records if r.get("truncated")]
    what = {"task": task.key, "variant": task.variant, "folder": task.folder}
    counts = {"n": len(records), "n_docs": len(data.items), "limit": limit, "n_rows": data.n_rows}
    excluded = {"n_excluded": len(data.excluded), "excluded": data.excluded}
    cut = {"n_truncated": len(truncated), "truncated": truncated}
    how = {"source": data.source, "protocol": protocol.to_dict()}
    columns = runner_metrics(golds, preds) if records else {}  # the runner's ten metric columns
    return {**what, **counts, **excluded, **cut, **how, "runner_metrics": columns, "scores": scores}


def run_nlu_task(
    model: Any,
    task: NLUTask | str,
    *,
    data_dir: str | Path | None = None,
    data: TaskData | None = None,
    protocol: NLUProtocol = LEADERBOARD,
    limit: int | None = None,
    outputs: str | Path | None = None,
    batch_size: int | None = None,
    progress: bool = True,
) -> NLURun:
    """Run one log-likelihood task on ``model``, resuming whatever its run already stored, and write the summary.

    Args:
        model: a loaded model with ``loglikelihood`` (``backend.models.load_model``).
        task: the task or its name (``tasks.NLU_TASKS``).
        data_dir: the folder of the HF repos' files (``data/thai_llm_leaderboard``); or ``data``: loaded already.
        protocol: the scoring options (:class:`~.protocol.NLUProtocol`; default: the published numbers').
        limit: the first N scored items (a limited run is the same run folder: a later full run adds the rest).
        outputs: the outputs folder (default ``$THAI_EVAL_OUTPUTS`` or ``outputs``).
        batch_size: items per model call and per store flush (default: the model's ``concurrency``, else 8).
        progress: show a progress bar.

    Raises:
        ThaiEvalDataError: a bad row (file, row and field named) before any run folder is made or any call.
    """
    task = nlu_task(task) if isinstance(task, str) else task
    data = data if data is not None else load_task(task, data_dir)
    items = data.items if limit is None else data.items[: max(0, int(limit))]
    protocol = protocol.for_model(model)  # sums="labels" needs token-id scoring and float32 totals
    trunc = check_engine(model, protocol)
    source = {k: data.source[k] for k in ("repo", "file", "split", "revision")}
    config = {"task": task.key, "variant": task.variant, "labels": task.label_note(), "protocol": protocol.to_dict()}
    config |= {"truncation_length": trunc, "source": source, "record_format": RECORD_FORMAT}
    prepare_loglikelihood(model)  # a served model's order probe: before the run card records its identity
    layout = RunLayout(
        f"{SUITE_NAME}/{task.key}",
        config,
        lambda it, answer: item_record(it["item"], answer, protocol),
        {"lls": list, "pred": int, "gold": int},
        lambda records, support, run: {
            **summarize(task, records, data, protocol, model, limit),
            "n_computed_this_run": run.computed,
        },
        call=lambda chunk: label_results(model, [it["item"] for it in chunk], protocol, limit=trunc),
        data_files=[str(data.path)],
        templates={"prompt": template(task.task_type)},
        model_identity=stable_model_identity(model),
        tolerate=(),
    )
    # each item keyed as before, its labels as its requests (one result per label, item_record's input)
    run_items = [{"id": it["key"], "item": it, "requests": [(it["prompt"], lb) for lb in it["labels"]]} for it in items]
    size = int(batch_size or getattr(model, "concurrency", None) or DEFAULT_BATCH)
    run = run_task(
        model, declare(task), items=run_items, layout=layout, batch_size=size, outputs=outputs, progress=progress
    )
    return NLURun(**vars(run), excluded=data.excluded)
