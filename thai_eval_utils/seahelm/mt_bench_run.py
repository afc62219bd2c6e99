"""Running SEA-HELM's mt-bench-judge with repeated runs (spec ``seahelm_thai.md`` 3.3, 3.5, 4.7): per run, the
model answers both turns (items ``r<run>/<id>`` in the task's store, both answers in one record: a row resumes
whole), then the judge grades every criterion through the package's one judge
(:func:`thai_eval_utils.judging.judge_items`: shared cache, resume, repeats), with the run's seed as SEA-HELM gives
it. Each run's judgements have their own store (``seahelm/mt-bench-judge-judgements``, config: the answers' run,
the run index, the judge) so that a judge run holds exactly one run's judgements.

The judge is any chat model (``judge``); SEA-HELM's is ``openai/gpt-oss-120b`` (:data:`~.mt_bench.DEFAULT_JUDGE`).
With none given the evaluated model judges its own answers (an offline check of the pipeline, said in the
signature and the summary; not SEA-HELM's number).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from thai_eval_utils.backend.openai_client import ApiModel, stable_identity
from thai_eval_utils.core.protocols import ChatModel, Model
from thai_eval_utils.core.provenance import Score, sha256_text
from thai_eval_utils.core.runloop import run_items
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import Judge, JudgementCache, JudgeOutcome, judge_items
from thai_eval_utils.seahelm import mt_bench as mb
from thai_eval_utils.seahelm.aggregate import AGGREGATION_SEED, task_over_runs
from thai_eval_utils.seahelm.config import N_RUNS, SEAHELM_COMMIT, SEEDS, task_config
from thai_eval_utils.seahelm.data import load_task_data
from thai_eval_utils.seahelm.generation import chat_replies, model_sampling
from thai_eval_utils.tasks.thinking import apply_to_model, split_reply
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

KEY = mb.TASK
JUDGEMENTS = f"{SUITE_NAME}/{KEY}-judgements"
#: The shared judgement cache of every mt-bench-judge run under an outputs folder.
CACHE_NAME = "seahelm_mt_bench_judgements.jsonl"


#: A self-judged run's judge budget (no judge given: the evaluated model grades its own answers, a pipeline check,
#: not SEA-HELM's number): SEA-HELM's 16,384 tokens per criterion would keep a CPU busy for hours on a small model
#: that never stops; the reflection and the classification the score parser reads fit in this. Recorded in the
#: judge's config, the summary (``judge.max_tokens``) and the signature (``judge_max_tokens:512``);
#: ``judge_max_tokens`` overrides it.
SELF_JUDGE_MAX_TOKENS = 512

#: The kernels' environment variable holding the judge's key (``batch.JUDGE_KEY_ENV``; never a parameter or a file).
JUDGE_KEY_ENV = "THAI_EVAL_JUDGE_API_KEY"
#: ``local:<spec>``: a judge loaded in-process with ``load_model(spec)``.
LOCAL_PREFIX = "local:"


def open_judge(
    judge_model: str | None, base_url: str | None = None, load_local: Callable[[str], ChatModel] | None = None
) -> ChatModel | None:
    """The judge of a run from the notebook's ``judge_model`` (``thai-eval run --judge``): None -> None (the
    evaluated model judges itself); ``local:<spec>`` -> ``load_local(spec)`` (the notebook passes
    ``backend.models.load_model``: the model in-process); else a model id at ``base_url`` (an OpenAI-compatible
    endpoint: ``openai/gpt-oss-120b`` on a vLLM server is SEA-HELM's judge), its key from ``$THAI_EVAL_JUDGE_API_KEY``
    when set (never a parameter)."""
    if not judge_model:
        return None
    if judge_model.startswith(LOCAL_PREFIX):
        if load_local is None:
            raise ValueError(f"{judge_model!r}: a local judge needs load_local (backend.models.load_model)")
        return load_local(judge_model.removeprefix(LOCAL_PREFIX))
    return ApiModel(judge_model, base_url=base_url, api_key=os.environ.get(JUDGE_KEY_ENV) or None)


def _rows(data_rows: Sequence[Mapping[str, Any]], path: str, limit: int | None) -> list[mb.MTBenchRow]:
    rows = [mb.parse_row(r, path=path, row=i) for i, r in enumerate(data_rows)]
    return rows if limit is None else rows[: max(0, int(limit))]


def _answer(
    model: Model, chunk: list[tuple[int, mb.MTBenchRow]], *, seed: int, max_new: int, sampling: Any, protocol: Protocol
) -> list[dict[str, Any]]:
    """Both turns of a batch of rows: turn 1 for all, then turn 2 with each row's own first answer."""
    first = [mb.turn_messages(row, 0) for _, row in chunk]
    raw1 = chat_replies(model, first, max_tokens=max_new, seed=seed, sampling=sampling)
    a1 = [mb.answered(t, protocol.thinking) for t in raw1]
    second = [mb.turn_messages(row, 1, a) for (_, row), a in zip(chunk, a1, strict=True)]
    raw2 = chat_replies(model, second, max_tokens=max_new, seed=seed, sampling=sampling)
    return [
        {
            "run": run,
            "seed": seed,
            "id": row.id,
            "messages": conv,
            "prompt_sha256": sha256_text(repr(conv)),
            "replies": [t1, t2],
        }
        for (run, row), conv, t1, t2 in zip(chunk, second, raw1, raw2, strict=True)
    ]


def run_mt_bench(
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
    judge: ChatModel | None = None,
    judge_batch_size: int | None = None,
    judge_max_tokens: int | None = None,
) -> SeahelmTaskRun:
    """Answer and judge mt-bench-judge ``runs`` times (run r: seed ``SEEDS[r]`` for the answers and the judge),
    resuming what the stores and the judgement cache hold; then score every run and aggregate over runs.

    ``judge``: any chat model (None: the evaluated model judges itself, labelled). ``judge_max_tokens``: the judge's
    token budget (default SEA-HELM's 16,384, capped by ``protocol.max_tokens`` when that is set for a quick look,
    and at :data:`SELF_JUDGE_MAX_TOKENS` when self-judged; recorded in the judge run's config and the signature)."""
    if key != KEY:
        raise ValueError(f"run_mt_bench runs {KEY!r}, not {key!r}")
    if not 1 <= runs <= len(SEEDS):
        raise ValueError(f"runs must be 1-{len(SEEDS)} (SEA-HELM's seeds), got {runs}")
    task = task_config(KEY)
    data = load_task_data(task, data_dir)
    rows = _rows(data.rows, data.files[0], limit)
    sampling = model_sampling(model, greedy=protocol.greedy)
    max_new = protocol.max_new_tokens(task)
    judge_model = judge if judge is not None else model
    judge_tokens = judge_max_tokens or min(
        mb.judge_params().max_tokens,
        protocol.max_tokens or mb.judge_params().max_tokens,
        SELF_JUDGE_MAX_TOKENS if judge is None else mb.judge_params().max_tokens,
    )
    config = {
        "suite": SUITE_NAME,
        "seahelm_commit": SEAHELM_COMMIT,
        "task": asdict(task),
        "protocol": protocol.keyed(task, sampling),
        "data": data.source,
        "record_format": RECORD_FORMAT,
        "judge": {"model": str(judge_model.name), "rubric_sha256": mb.rubric().sha256, "max_tokens": judge_tokens},
    }
    identity = stable_identity(dict(getattr(model, "identity", None) or {"name": model.name}))
    run_ids = task.runs(runs, reasoning=protocol.reasoning)
    wanted = {item_key(r, {"id": row.id}) for r in run_ids for row in rows}
    computed = 0
    outcomes: dict[int, tuple[list[mb.CriterionItem], list[str], JudgeOutcome]] = {}
    answers: dict[int, list[list[str]]] = {}
    with (
        RunStore.open(
            model.name,
            f"{SUITE_NAME}/{KEY}",
            config,
            model_identity=identity,
            data_files=data.files,
            prompt_templates={**task.templates(), "judge": mb.rubric().text},
            outputs=outputs,
        ) as store,
        apply_to_model(model, protocol.thinking) as support,
    ):
        for r in run_ids:
            seed = SEEDS[r]
            size = protocol.batch_size or getattr(model, "concurrency", None) or 8
            with unscored_when_a_reply_fails(KEY, store, wanted):
                outcome = run_items(
                    store,
                    [(r, row) for row in rows],
                    lambda it: item_key(it[0], {"id": it[1].id}),
                    lambda chunk, seed=seed: _answer(
                        model, chunk, seed=seed, max_new=max_new, sampling=sampling, protocol=protocol
                    ),
                    batch_size=size,
                    desc=f"seahelm {KEY} run {r} ({model.name})",
                    progress=progress,
                    fields={"replies": list},
                )
            computed += outcome.computed
            recs = [outcome.records.get(item_key(r, {"id": row.id})) for row in rows]
            if all(rec is not None for rec in recs):
                answers[r] = [rec["replies"] for rec in recs]
                outcomes[r] = judge_run(
                    model.name,
                    store,
                    rows,
                    recs,
                    r,
                    judge_model,
                    protocol,
                    outputs,
                    progress=progress,
                    batch_size=judge_batch_size,
                    max_tokens=judge_tokens,
                )
        summary = summarize(
            rows, run_ids, outcomes, data, protocol, sampling, rng, judge_model, judge is None, judge_tokens
        )
        summary.update(answer_counts(answers, protocol))
        summary.update(
            reply_summary(
                [x for x in store.iter_records() if x["key"] in wanted], protocol.thinking, support, field="replies"
            )
        )  # both turns of every row: two replies each
        summary.update({"n_computed_this_run": computed, "limit": limit})
        store.write_summary(summary)
    fatal = next((o.fatal for _, _, o in outcomes.values() if o.fatal is not None), None)
    if fatal is not None:
        raise fatal
    return SeahelmTaskRun(KEY, summary, store.root, computed)


def judge_run(
    model_name: str,
    answers: RunStore,
    rows: Sequence[mb.MTBenchRow],
    recs: Sequence[Mapping[str, Any]],
    r: int,
    judge_model: ChatModel,
    protocol: Protocol,
    outputs: str | Path | None,
    *,
    progress: bool,
    batch_size: int | None,
    max_tokens: int,
) -> tuple[list[mb.CriterionItem], list[str], JudgeOutcome]:
    """Judge run r's answers (its own judge store; the shared cache): the criteria items, the skipped ids, the
    outcome."""
    answers_seen = [tuple(mb.answered(t, protocol.thinking) for t in rec["replies"]) for rec in recs]
    items, skipped = mb.judge_items_of(rows, answers_seen)
    params = replace(mb.judge_params(seed=SEEDS[r]), max_tokens=max_tokens)
    judge = Judge(mb.rubric(params), judge_model, batch_size=batch_size)
    config = {
        "answers": answers.config_id,
        "run": r,
        "judge_model": judge.label,
        "params": judge.settings.to_dict(),
        "rubric_sha256": judge.rubric.sha256,
    }
    with RunStore.open(
        model_name,
        JUDGEMENTS,
        config,
        model_identity=answers.card.get("model"),
        prompt_templates={"judge": judge.rubric.text},
        outputs=outputs,
    ) as store:
        # the rubric's final statuses: a reply with no classification is final (SEA-HELM scores it 0, no retry)
        cache = JudgementCache(store.shared_file(CACHE_NAME), statuses=judge.rubric.parser.final_statuses)
        done = judge_items(
            judge, [it.texts for it in items], store, cache, ids=[it.custom_id for it in items], progress=progress
        )
        store.write_summary(
            {
                "run": r,
                "n_judgements": len(items),
                "skipped": skipped,
                "computed": done.computed,
                "n_unjudged": sum(1 for j in done.plan if done.record(j).get("status") == "unjudged"),
            }
        )
    return items, skipped, done


def answer_counts(answers: Mapping[int, Sequence[Sequence[str]]], protocol: Protocol) -> dict[str, int]:
    """Over every run and turn: replies whose thinking never closed (``failed_thinking``) and empty answers
    (``null_count``: an empty reply or a failed one)."""
    splits = [split_reply(t, protocol.thinking) for turns in answers.values() for pair in turns for t in pair]
    return {"failed_thinking": sum(x.failed for x in splits), "null_count": sum(not x.scored.strip() for x in splits)}


def run_scores(
    rows: Sequence[mb.MTBenchRow], items: Sequence[mb.CriterionItem], done: JudgeOutcome
) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """One run's metrics, per-row scores (with each criterion's classification) and its unjudged count."""
    by_id: dict[str, float | None] = {}
    detail: dict[str, dict[str, Any]] = {}
    unjudged = 0
    for it, j in zip(items, done.plan, strict=True):
        rec = done.record(j)
        raw = (rec.get("raw_judgements") or [None])[-1]
        unjudged += rec.get("status") == "unjudged"
        by_id[it.custom_id] = rec.get("score")
        detail[it.custom_id] = {
            "classification": mb.extract_classification(raw),
            "reflection": mb.extract_reflection(raw),
            "status": rec.get("status"),
            "score": rec.get("score"),
        }
    per_row = mb.scored_rows(rows, items, by_id)
    for row, out in zip(rows, per_row, strict=True):
        out["criteria"] = {cid: d for cid, d in detail.items() if cid.split("_")[0] == row.id}
    metrics = mb.mt_bench_metrics([x["final_scores"] for x in per_row], [x["category"] for x in per_row])
    return metrics, per_row, unjudged


def summarize(
    rows: Sequence[mb.MTBenchRow],
    run_ids: Sequence[int],
    outcomes: Mapping[int, tuple[list[mb.CriterionItem], list[str], JudgeOutcome]],
    data: Any,
    protocol: Protocol,
    sampling: Any,
    rng: np.random.Generator | None,
    judge_model: ChatModel,
    self_judged: bool,
    judge_tokens: int,
) -> dict[str, Any]:
    """Every judged run's metrics and the aggregation over runs (SEA-HELM's notebook: the row scores x 100)."""
    task = task_config(KEY)
    per_run: dict[str, Any] = {}
    scores: list[list[float]] = []
    for r in run_ids:
        if r not in outcomes:
            scores.append([])
            continue
        items, skipped, done = outcomes[r]
        metrics, per_row, unjudged = run_scores(rows, items, done)
        per_run[str(r)] = {
            "seed": SEEDS[r],
            "metrics": metrics,
            "per_item": [x["final_scores"] for x in per_row],
            "rows": per_row,
            "skipped_criteria": skipped,
            "n_unjudged": unjudged,
        }
        scores.append(per_run[str(r)]["per_item"])
    over = task_over_runs(
        scores, [[] for _ in scores], rng if rng is not None else np.random.default_rng(AGGREGATION_SEED)
    )
    done_scores = [s for s in scores if s]
    item_means = np.mean(done_scores, axis=0).tolist() if done_scores else []
    sig = (
        signature(task, protocol, sampling, data_hash(data), len(rows), len(data.rows), len(done_scores), None)
        + f"|judge:{judge_model.name}{'(self)' if self_judged else ''}|rubric:{mb.rubric().sha256[:8]}"
        + f"|judge_max_tokens:{judge_tokens}"
    )
    score = Score(f"{SUITE_NAME}/{KEY}/{mb.PRIMARY}", over.mean, len(rows), over.stderr, sig).to_dict()
    score.update(
        {
            "stderr_kind": "SEA-HELM: sd of 30 bootstrap replicates over runs / sqrt(30) (not clustered)",
            "interval": item_interval([v * 100 for v in item_means]),
            "interval_kind": "ours: percentile bootstrap over items of the per-item mean over runs x 100",
        }
    )
    run_means = [v["metrics"][mb.PRIMARY] for v in per_run.values()]
    return {
        "suite": SUITE_NAME,
        "task": KEY,
        "competency": task.competency,
        "aggregation_group": task.aggregation_group,
        "primary_metric": mb.PRIMARY,
        "n": len(rows),
        "n_docs": len(data.rows),
        "ids": [row.id for row in rows],
        "runs_requested": list(run_ids),
        "records_per_item": len(run_ids),
        "runs": per_run,
        "over_runs": over.to_dict(),
        "item_means": item_means,
        "run_metric_mean": float(np.mean(run_means)) if run_means else None,
        "judge": {
            "model": str(judge_model.name),
            "seahelm_judge": mb.DEFAULT_JUDGE,
            "self_judged": self_judged,
            "max_tokens": judge_tokens,
            "note": "the evaluated model judged its own answers (no judge given): a pipeline check, not "
            f"SEA-HELM's number; judge budget {judge_tokens} tokens"
            if self_judged
            else "",
        },
        "n_unjudged": sum(v["n_unjudged"] for v in per_run.values()),
        "signature": sig,
        "scores": {mb.PRIMARY: score},
    }


#: The runner ``runner.external_runner`` finds (``EXTERNAL_MODULES``; this module never imports ``runner``).
run_seahelm_task = run_mt_bench
