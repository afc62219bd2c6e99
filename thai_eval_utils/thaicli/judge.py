"""ThaiCLI LLM-as-a-judge (Kim et al., arXiv 2410.04795, section 4): the judging loop (prompt and parser:
:mod:`thai_eval_utils.thaicli.judge_prompt`; scores: :mod:`thai_eval_utils.thaicli.scores`).

The judge sees the question, the chosen answer (a good example), the rejected answer (a bad example) and
the model's answer, and replies ``<score>N</score><explanation>...</explanation>``. A reply that does not
parse is asked for again, at most :data:`~thai_eval_utils.thaicli.judge_prompt.MAX_JUDGE_CALLS` calls per item in
all; then the item scores 0 (flagged ``fallback_zero``; the 0 counts in the mean). Transport errors (429, 5xx, timeouts) are retried by
the openai client, never count as one of those calls and never become a score: an item whose requests keep
failing stays unjudged and is reported (``n_unjudged``), and a rerun judges it. A malformed 200 reply (not
JSON, no choices, null content: see :func:`~thai_eval_utils.backend.openai_client.reply_problem`) is such a
failed request. No failure aborts the run except a refused key, access or model (:data:`FATAL_ERRORS`), and
even then the items already judged are written with the summary before :class:`JudgeError` is raised.

The judge is any model that can ``chat``: an ``ApiModel`` (requests in flight together, bounded by its
semaphore), a ``LocalModel`` judging in-process (the waiting judgements as one ``chat`` batch; no HTTP server) or a
``ServedModel``; ThaiCLI's judge is its answers task's judged metric
(:func:`~thai_eval_utils.thaicli.judge_prompt.thaicli_metric`, a :class:`~thai_eval_utils.tasks.judged.JudgedMetric`
whose "up to 16 calls, else 0" rule and judgement values are the metric's), as a :class:`thai_eval_utils.judging.Judge`;
the loop below is :func:`thai_eval_utils.judging.judge_items`.

Judging runs as every run does (:func:`judge_answers`): prepare (the judgements the run's store or the shared cache
already hold are not asked for again), call (:func:`~thai_eval_utils.core.runloop.run_items_async`: requests in
flight together, each final judgement appended to the run's ``items.jsonl`` through its
:class:`~thai_eval_utils.core.store.RunStore` as it finishes, so a run killed at any point loses only the requests in
flight and a rerun repeats none), finish (a record for every judgement, unjudged ones with the reason; the new
judgements added to the append-only judgement cache in ``<outputs>/cache/``, keyed by the texts, judge model, prompt
hash and parameters, which other runs with the same texts reuse; ``items.jsonl`` rewritten in item order).

Repeated judgements: ``repeats=k`` judges every answer k times, repeat r with seed ``params.seed + r`` and its own
cache key (repeat 0 keeps the key it always had), and the summary gains the judge's noise floor
(:func:`~thai_eval_utils.thaicli.judge_summary.judge_noise`); ``reference_order="rejected_first"`` swaps the two references
in the prompt (its own template hash; the effect of the order: :mod:`~thai_eval_utils.thaicli.judge_order`).
"""

from __future__ import annotations

import math
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.protocols import ChatModel
from thai_eval_utils.core.provenance import outputs_dir, redact
from thai_eval_utils.core.records import is_blank
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging import Judge, JudgementCache, JudgeOutcome, JudgeParams, judge_items
from thai_eval_utils.judging.batch import BatchMode
from thai_eval_utils.judging.run import Judgement, cache_part
from thai_eval_utils.tasks.judged import judge_batch as judge_batch  # the notebook's and tests' name
from thai_eval_utils.thaicli.judge_prompt import (
    FALLBACK_SCORE,
    TEMPLATE_SHA256,  # noqa: F401 - re-exported: the notebook reads the prompt's hash and version here
    TEMPLATE_VERSION,  # noqa: F401
    THAICLI_FIELDS,
    JudgeTemplate,
    ReferenceOrder,
    ThaiCLIJudged,
    judge_template,
    thaicli_metric,
)
from thai_eval_utils.thaicli.judge_summary import (
    ANSWER_COLUMNS,
    ROW_FIELDS,
    item_row,
    repeat_summary,
    run_summary,
)
from thai_eval_utils.thaicli.scores import ThaiCLIScores, thaicli_scores

#: The judgement cache's file in ``<outputs>/cache/`` (the shared, append-only
#: :class:`~thai_eval_utils.judging.cache.JudgementCache`, keyed by the four texts, judge, prompt hash and parameters).
CACHE_NAME = "thaicli_judgements.jsonl"
#: Why an item whose answer is missing stays unjudged (never scored: the judge never saw an answer).
NO_ANSWER = "no answer: the evaluated model's answer was not generated (rerun generate_answers)"
#: Why an item scores 0 without a judge call: its thinking never closed, a failed answer
#: (``generate_answers``' ``answer_failed``; ``tasks.thinking``'s strict rule).
FAILED_ANSWER = "failed answer: the model's thinking never closed; scored 0 without a judge call"
#: The stored status of such an item (counted in the means with score 0; never cached: no judge saw it).
FAILED_STATUS = "failed_answer"


@dataclass
class JudgeRun:
    """A judging run: one row per (item, repeat) (``score`` NaN where unjudged), the summary, the scores (item
    means over the repeats), the store."""

    items: pd.DataFrame
    summary: dict[str, Any]
    scores: ThaiCLIScores
    store: RunStore = field(repr=False)

    @property
    def n_unjudged(self) -> int:
        return int(self.summary["n_unjudged"])


def _not_generated(answers: pd.DataFrame) -> set[int]:
    """Rows whose answer is missing (None or NaN): ``generate_answers`` could not get them from the server."""
    return {i for i, v in enumerate(answers["answer"]) if v is None or (isinstance(v, float) and math.isnan(v))}


def _failed(answers: pd.DataFrame) -> set[int]:
    """Rows whose answer failed (thinking never closed, ``answer_failed`` True): they score 0, unjudged."""
    if "answer_failed" not in answers.columns:
        return set()
    return {i for i, v in enumerate(answers["answer_failed"]) if v is True}


def _check_answers(answers: pd.DataFrame) -> None:
    """Every column present, every text a string; question, chosen and rejected not empty (an empty answer is
    an answer: the judge scores it; a missing one, None or NaN, was not generated and stays unjudged)."""
    missing = [c for c in ANSWER_COLUMNS if c not in answers.columns]
    if missing:
        raise ThaiEvalDataError(f"answers lack columns {missing}", field=missing[0])
    skip = {"answer": _not_generated(answers)}
    for col in ("question", "chosen", "rejected", "answer"):
        bad = [i for i, v in enumerate(answers[col]) if not isinstance(v, str) and i not in skip.get(col, ())]
        if bad:
            raise ThaiEvalDataError(f"not a string: {answers[col].iloc[bad[0]]!r}", row=bad[0], field=col)
        if col != "answer":
            empty = [i for i, v in enumerate(answers[col]) if is_blank(v)]  # zero-width-only text is empty too
            if empty:
                raise ThaiEvalDataError("empty text", row=empty[0], field=col)


def _check_repeats(answers: pd.DataFrame, repeats: int) -> None:
    """``repeats`` a positive int; with more than one, every ``id`` unique (the repeats of an item are found by id)."""
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    if repeats > 1:
        dup = answers["id"].duplicated()
        if dup.any():
            row = int(dup.to_numpy().nonzero()[0][0])
            raise ThaiEvalDataError(
                f"id {answers['id'].iloc[row]!r} appears twice; repeats need unique ids", row=row, field="id"
            )


def judge_answers(
    answers: pd.DataFrame,
    judge: ChatModel,
    *,
    model_name: str | None = None,
    params: JudgeParams | None = None,
    outputs: str | Path | None = None,
    cache_path: str | Path | None = None,
    progress: bool = True,
    repeats: int = 1,
    reference_order: ReferenceOrder = "chosen_first",
    batch: BatchMode | None = None,
) -> JudgeRun:
    """Judge every answer (prepare, call, finish: see the module's docstring); record items, run card and summary.

    Args:
        answers: columns id, format, theme, question, chosen, rejected, answer (``generate_answers``).
        judge: the judge model, any chat model: an ``ApiModel`` (its ``concurrency`` bounds the requests in flight),
            a ``LocalModel`` (judges in-process, its ``concurrency`` judgements per ``chat`` call), a ``ServedModel``.
        model_name: the evaluated model (default ``answers.attrs["model_name"]``); names the run folder.
        params: judge call settings (default: max_tokens 512, temperature 0, seed 0, 16 calls).
        outputs: the outputs folder (default ``results.outputs_dir()``).
        cache_path: the judgement cache (default ``<outputs>/cache/thaicli_judgements.jsonl``).
        progress: show a tqdm bar.
        repeats: judge every answer this many times (seeds, one row per (item, repeat), item means over
            the judged repeats, ``summary["judge_noise"]``); more than 1 needs unique ids.
        reference_order: ``"chosen_first"`` (the template as written) or ``"rejected_first"`` (swapped references:
            another prompt, another hash, another run).
        batch: judge through batches instead of live calls (:func:`judge_batch`; docs/batch_mode.md): the
            requests go to the OpenAI Batch API (or to a JSONL file, or come from one); a batch still running leaves
            its judgements unjudged and ``summary["batch"]["running"]`` names it: run again to collect.

    Returns:
        A :class:`JudgeRun`; ``summary["n_unjudged"]`` counts judgements (item x repeat) whose requests kept failing.

    Raises:
        JudgeError: the endpoint refused the key, the access or the model; what was judged before is written first.
        RunLockedError: another process is judging the same run (nothing is called twice).
    """
    _check_answers(answers)  # the answers and repeats checked before anything is opened or called
    _check_repeats(answers, repeats)
    metric = thaicli_metric(judge, params or JudgeParams(), reference_order)
    job = _Job(answers, metric, metric.as_judge(), judge_template(reference_order), repeats)
    store = _open_run(job, model_name or answers.attrs.get("model_name") or "unknown-model", outputs)
    try:  # prepare, call, finish: as every run, through the run's store (thai_eval_utils.judging.judge_items)
        cache = JudgementCache(cache_path or store.shared_file(CACHE_NAME))
        skip = dict.fromkeys(_not_generated(answers), NO_ANSWER)
        skip.update(dict.fromkeys(_failed(answers), FAILED_ANSWER))
        texts = [job.metric.texts(r, r["answer"]) for r in answers[list(THAICLI_FIELDS)].to_dict(orient="records")]
        opts = {"repeats": repeats, "skip": skip, "row_fields": ROW_FIELDS, "progress": progress, "batch": batch}
        done = judge_items(
            job.judge, texts, store, cache, ids=list(answers["id"]), record=partial(_record, job), **opts
        )
        items = pd.DataFrame([_item_row(job, j, done.record(j)) for j in done.plan])
        scores, summary = _summarise(job, items, done)
        if answers.attrs.get("replies"):  # the answers' thinking and answers-in-Thai stats beside the scores
            summary["answers_replies"] = answers.attrs["replies"]
        if done.batch is not None:
            summary["batch"] = redact(done.batch)
        store.write_summary(summary)
    finally:
        store.close()
    if done.fatal is not None:
        raise done.fatal
    return JudgeRun(items=items, summary=summary, scores=scores, store=store)


@dataclass(frozen=True, eq=False)
class _Job:
    """What a judging run is: the checked answers, the judged metric and its judge (rubric and model), its prompt
    and the repeats."""

    answers: pd.DataFrame
    metric: ThaiCLIJudged
    judge: Judge
    template: JudgeTemplate
    repeats: int

    @property
    def params(self) -> JudgeParams:
        return self.judge.settings


def _open_run(job: _Job, model_name: str, outputs: str | Path | None) -> RunStore:
    """The judging run's store (its one writer: a second process is refused before any call)."""
    config = {
        "judge_model": job.judge.label,
        "judge_params": job.params.to_dict(),
        "answers_run": job.answers.attrs.get("config_id"),
    }
    if job.repeats != 1:  # the defaults add nothing, so runs made before repeats and orders existed keep resuming
        config["repeats"] = job.repeats
    if job.template.reference_order != "chosen_first":
        config["reference_order"] = job.template.reference_order
    return RunStore.open(
        model_name,
        "thaicli/judge",
        config,
        prompt_templates={job.template.version: job.template.text},
        model_identity=job.answers.attrs.get("model_identity") or {"name": model_name},
        outputs=Path(outputs) if outputs is not None else outputs_dir(),
        legacy_nan_fields=("served_model", "system_fingerprint"),
    )


def _record(job: _Job, j: Judgement, judgement: dict[str, Any]) -> dict[str, Any]:
    """The stored record of judgement ``j``: its answer row's id, format and theme, its repeat, seed and order,
    and the judgement (the judge's reply and its accounting; status ``unjudged`` and an ``error`` when none)."""
    row = job.answers.iloc[j.row]
    if judgement.get("error") == FAILED_ANSWER:  # a failed answer: 0, as the judge's own fallback
        judgement = {**judgement, "status": FAILED_STATUS, "score": 0.0}
    return {
        "id": row["id"],
        "format": row["format"],
        "theme": row["theme"],
        **cache_part(judgement, ROW_FIELDS),  # the judge's record without the key and the answer row's fields
        "repeat": j.repeat,
        "seed": job.params.for_repeat(j.repeat).seed,
        "reference_order": job.template.reference_order,
        "error": judgement.get("error", ""),
        "judgement_key": j.key,
    }


def _item_row(job: _Job, j: Judgement, rec: dict[str, Any]) -> dict[str, Any]:
    """Judgement ``j``'s row of the items table, its score the metric's value (a failed answer: 0)."""
    value = FALLBACK_SCORE if rec.get("status") == FAILED_STATUS else job.metric.value(rec)
    return item_row(job.answers.iloc[j.row], j.repeat, j.key, rec, value)


def _summarise(job: _Job, items: pd.DataFrame, done: JudgeOutcome) -> tuple[ThaiCLIScores, dict[str, Any]]:
    """The scores and the summary (a fatal error named in it)."""
    params, template = job.params, job.template
    signature = (
        f"judge:{job.judge.label}|prompt:{template.version}@{template.sha256[:8]}|max_calls:{params.max_calls}"
        f"|temp:{params.temperature}|seed:{params.seed}|max_tokens:{params.max_tokens}"
        + (f"|repeats:{job.repeats}" if job.repeats != 1 else "")
    )
    scores = thaicli_scores(items, signature=signature)
    judged = {j.key: done.known[j.key] for j in done.plan if j.key in done.known}
    summary = run_summary(
        items, judged, job.judge.model, done.usage, len(done.plan) - done.n_asked, done.computed, scores
    )
    summary.update(
        redact(
            repeat_summary(len(job.answers), items, [params.for_repeat(r).seed for r in range(job.repeats)], template)
        )
    )
    if done.fatal is not None:
        summary["fatal_error"] = str(done.fatal)
    return scores, summary
