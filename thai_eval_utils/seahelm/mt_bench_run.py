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

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from thai_eval_utils.backend.models import load_judge
from thai_eval_utils.core.errors import JudgeError
from thai_eval_utils.core.protocols import ChatModel, Model
from thai_eval_utils.core.runloop import RunOutcome
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import Judge, JudgementCache, JudgeOutcome, judge_items
from thai_eval_utils.seahelm import mt_bench as mb
from thai_eval_utils.seahelm.config import N_RUNS, SEEDS
from thai_eval_utils.seahelm.declarations import RunMetric, declare
from thai_eval_utils.seahelm.generation import chat_replies
from thai_eval_utils.seahelm import task_run
from thai_eval_utils.seahelm.task_run import SUITE_NAME, Protocol, SeahelmTaskRun, TaskSetup, task_setup
from thai_eval_utils.tasks.thinking import apply_to_model, split_reply

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


def open_judge(judge_model: str | None, base_url: str | None = None) -> ChatModel | None:
    """The judge of a run from the notebook's ``judge_model`` (``thai-eval run --judge``): None -> None (the
    evaluated model judges itself); else ``backend.models.load_judge``: ``local:<spec>`` the model in-process, a
    model id at ``base_url`` (an OpenAI-compatible endpoint: ``openai/gpt-oss-120b`` on a vLLM server is SEA-HELM's
    judge), its key from ``$THAI_EVAL_JUDGE_API_KEY`` when set (never a parameter)."""
    return load_judge(judge_model, base_url=base_url) if judge_model else None


def _answer(
    model: Model, chunk: list[dict[str, Any]], *, max_new: int, sampling: Any, protocol: Protocol
) -> list[dict[str, Any]]:
    """Both turns of one run's batch of rows: turn 1 for all, then turn 2 with each row's own first answer."""
    seed = chunk[0]["seed"]
    first = [mb.turn_messages(it["row"], 0) for it in chunk]
    raw1 = chat_replies(model, first, max_tokens=max_new, seed=seed, sampling=sampling)
    a1 = [mb.answered(t, protocol.thinking) for t in raw1]
    second = [mb.turn_messages(it["row"], 1, a) for it, a in zip(chunk, a1, strict=True)]
    raw2 = chat_replies(model, second, max_tokens=max_new, seed=seed, sampling=sampling)
    return [
        task_run.parsed_record(it, conv, replies=[t1, t2])
        for it, conv, t1, t2 in zip(chunk, second, raw1, raw2, strict=True)
    ]


class CriteriaScore(RunMetric):
    """MTBenchJudgeMetric: each criterion of both turns graded by the judge (SEA-HELM's rubric, the run's seed),
    a row's score the mean of its criteria; a run's metrics and per-row scores from its judgements
    (:meth:`score_judged`, the judge's outcome: SEA-HELM's judge scores a run, not a stored reply)."""

    def parameters(self) -> dict[str, Any]:
        return {"metric_class": self.metric_class, "rubric_sha256": mb.rubric().sha256}

    def score_judged(
        self, rows: Sequence[mb.MTBenchRow], items: Sequence[mb.CriterionItem], done: JudgeOutcome
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


def run_mt_bench(
    model: Model,
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
    and at :data:`SELF_JUDGE_MAX_TOKENS` when self-judged; recorded in the judge run's config and the signature).
    Every run is answered first, then each run is judged (its own judge store), all before the summary."""
    setup = task_setup(model, KEY, runs=runs, limit=limit, data_dir=data_dir, protocol=protocol, parse=mb.parse_row)
    judge_model = judge if judge is not None else model
    full = mb.judge_params().max_tokens
    judge_tokens = judge_max_tokens or min(
        full, protocol.max_tokens or full, SELF_JUDGE_MAX_TOKENS if judge is None else full
    )
    judged_by = {"model": str(judge_model.name), "rubric_sha256": mb.rubric().sha256, "max_tokens": judge_tokens}
    setup = replace(setup, config={**setup.config, "judge": judged_by})
    metric = CriteriaScore(setup.task)

    def judge_of(r: int) -> Judge:
        """Run r's judge: SEA-HELM's settings with the run's seed, at the judge budget."""
        params = replace(mb.judge_params(seed=SEEDS[r]), max_tokens=judge_tokens)
        return Judge(mb.rubric(params), judge_model, batch_size=judge_batch_size)

    def judged(records: Mapping[str, Mapping[str, Any]], run: RunOutcome) -> dict[str, Any]:
        """Judge every answered run (the thinking settings in force, as while answering: a self-judged model
        grades with them), then score and aggregate."""
        recs = {r: setup.run_records(records, r) for r in setup.run_ids}
        answers: RunStore = run.store  # type: ignore[assignment]
        with apply_to_model(model, protocol.thinking):
            outcomes = {
                r: judge_run(setup, model.name, answers, recs[r], r, judge_of(r), outputs, progress) for r in recs
            }
        check_judged(outcomes)
        summary = summarize(setup, outcomes, rng, judge_model, judge is None, judge_tokens, metric)
        # over every run and turn: replies whose thinking never closed, and empty answers (empty or failed)
        splits = [split_reply(t, protocol.thinking) for rs in recs.values() for rec in rs for t in rec["replies"]]
        return {
            **summary,
            "failed_thinking": sum(x.failed for x in splits),
            "null_count": sum(not x.scored.strip() for x in splits),
        }

    # a judge error or an unjudged judgement stops the task in ``judged`` (:func:`check_judged`), before the summary
    return task_run.run_repeated(
        model,
        setup,
        declare(setup.task, metric),
        lambda chunk: _answer(model, chunk, max_new=setup.max_new, sampling=setup.sampling, protocol=protocol),
        judged,
        fields={"replies": list},
        outputs=outputs,
        progress=progress,
        limit=limit,
        templates={**setup.task.templates(), "judge": mb.rubric().text},
        reply_field="replies",  # both turns of every row: two replies each
    )


def judge_run(
    setup: TaskSetup,
    model_name: str,
    answers: RunStore,
    recs: Sequence[Mapping[str, Any]],
    r: int,
    judge: Judge,
    outputs: str | Path | None,
    progress: bool,
) -> tuple[list[mb.CriterionItem], list[str], JudgeOutcome]:
    """Judge run r's answers with its ``judge`` (its own judge store; the shared cache): the criteria items, the
    skipped ids, the outcome."""
    answers_seen = [tuple(mb.answered(t, setup.protocol.thinking) for t in rec["replies"]) for rec in recs]
    items, skipped = mb.judge_items_of(setup.rows, answers_seen)
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


def check_judged(outcomes: Mapping[int, tuple[list[mb.CriterionItem], list[str], JudgeOutcome]]) -> None:
    """Stop before anything is scored when a judgement is missing: a fatal judge error (a refused key, access or
    model), or a request that kept failing (unjudged). SEA-HELM would count such a criterion 0, as a judge reply
    without a classification; here a failed request is never a score (as a reply never generated:
    :func:`~.task_run.not_generated`), and the same command judges exactly the missing ones (the rest are stored)."""
    for _, _, done in outcomes.values():
        if done.fatal is not None:
            raise JudgeError(f"seahelm {KEY}: {done.fatal}")
    records = [done.record(j) for _, _, done in outcomes.values() for j in done.plan]
    unjudged = [rec for rec in records if rec.get("status") == "unjudged"]
    if unjudged:
        raise JudgeError(
            f"seahelm {KEY}: {len(unjudged)} of {len(records)} judgements unjudged ({unjudged[0].get('error')}), so "
            "nothing is scored; run the same command again to judge them (the judgements made are stored)"
        )


def summarize(
    setup: TaskSetup,
    outcomes: Mapping[int, tuple[list[mb.CriterionItem], list[str], JudgeOutcome]],
    rng: np.random.Generator | None,
    judge_model: ChatModel,
    self_judged: bool,
    judge_tokens: int,
    metric: CriteriaScore,
) -> dict[str, Any]:
    """Every judged run's metrics and the aggregation over runs (SEA-HELM's notebook: the row scores x 100)."""
    rows, data = setup.rows, setup.data

    def entry(r: int) -> dict[str, Any]:
        items, skipped, done = outcomes[r]
        metrics, per_row, unjudged = metric.score_judged(rows, items, done)
        return {
            "metrics": metrics,
            "per_item": [x["final_scores"] for x in per_row],
            "rows": per_row,
            "skipped_criteria": skipped,
            "n_unjudged": unjudged,
        }

    per_run, over, item_means, n_done = setup.score_runs(entry, rng)
    sig = (
        setup.signature(n_done)
        + f"|judge:{judge_model.name}{'(self)' if self_judged else ''}|rubric:{mb.rubric().sha256[:8]}"
        + f"|judge_max_tokens:{judge_tokens}"
    )
    return {
        **setup.summary(
            mb.PRIMARY, {"n": len(rows), "n_docs": len(data.rows), "ids": setup.ids}, per_run, over, item_means
        ),
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
        "scores": {mb.PRIMARY: task_run.headline(KEY, mb.PRIMARY, over, len(rows), sig, item_means, percent=True)},
    }
