"""ThaiCLI LLM-as-a-judge (Kim et al., arXiv 2410.04795, section 4): the judging loop (prompt and parser:
:mod:`thai_eval_utils.thaicli.judge_prompt`; scores: :mod:`thai_eval_utils.thaicli.scores`).

The judge sees the question, the chosen answer (a good example), the rejected answer (a bad example) and
the model's answer, and replies ``<score>N</score><explanation>...</explanation>``. A reply that does not
parse is asked for again, at most :data:`MAX_JUDGE_CALLS` calls per item in all; then the item scores 0
(flagged ``fallback_zero``; the 0 counts in the mean). Transport errors (429, 5xx, timeouts) are retried by
the openai client, never count as one of those calls and never become a score: an item whose requests keep
failing stays unjudged and is reported (``n_unjudged``), and a rerun judges it. A malformed 200 reply (not
JSON, no choices, null content: see :func:`~thai_eval_utils.backend.openai_client.reply_problem`) is such a
failed request. No failure aborts the run except a refused key, access or model (:data:`FATAL_ERRORS`), and
even then the items already judged are written with the summary before :class:`JudgeError` is raised.

Judging runs as every run does (:func:`judge_answers`): prepare (the judgements the run's store or the shared cache
already hold are not asked for again), call (:func:`~thai_eval_utils.core.runloop.run_items_async`: requests in
flight together, each final judgement appended to the run's ``items.jsonl`` through its
:class:`~thai_eval_utils.core.store.RunStore` as it finishes, so a run killed at any point loses only the requests in
flight and a rerun repeats none), finish (a record for every judgement, unjudged ones with the reason; the new
judgements added to the append-only judgement cache in ``<outputs>/cache/``, keyed by the texts, judge model, prompt
hash and parameters, which other runs with the same texts reuse; ``items.jsonl`` rewritten in item order).

Issue 14: ``repeats=k`` judges every answer k times, repeat r with seed ``params.seed + r`` and its own cache key
(repeat 0 keeps the key it always had), and the summary gains the judge's noise floor
(:mod:`~thai_eval_utils.thaicli.judge_noise`); ``reference_order="rejected_first"`` swaps the two references
in the prompt (its own template hash; the effect of the order: :mod:`~thai_eval_utils.thaicli.judge_order`).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import openai
import pandas as pd

from thai_eval_utils.core.errors import JudgeError, ThaiEvalDataError
from thai_eval_utils.backend.openai_client import (
    FATAL_ERRORS,
    ApiError,
    ApiModel,
    ApiSession,
    describe_error,
    run_sync,
)
from thai_eval_utils.core.provenance import outputs_dir, redact
from thai_eval_utils.core.records import is_blank
from thai_eval_utils.core.runloop import RunOutcome, run_items_async
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.thaicli.judge_cache import JudgementCache, is_final, judgement_key
from thai_eval_utils.thaicli.judge_prompt import (
    FALLBACK_SCORE,
    MAX_JUDGE_CALLS,
    TEMPLATE_SHA256,  # noqa: F401 - re-exported: notebooks and tests read the prompt's hash here
    TEMPLATE_TEXT,  # noqa: F401
    TEMPLATE_VERSION,  # noqa: F401
    JudgeTemplate,
    ReferenceOrder,
    build_messages,  # noqa: F401 - re-exported
    judge_template,
    parse_judgement,
)
from thai_eval_utils.thaicli.judge_summary import (
    ANSWER_COLUMNS,
    item_row,
    judgement_part,
    repeat_summary,
    run_summary,
)
from thai_eval_utils.thaicli.scores import (  # noqa: F401 - SCORE_COLUMNS re-exported
    SCORE_COLUMNS,
    ThaiCLIScores,
    item_means,
    thaicli_scores,
)

#: Why an item whose answer is missing stays unjudged (never scored: the judge never saw an answer).
NO_ANSWER = "no answer: the evaluated model's answer was not generated (rerun generate_answers)"
#: The judgement cache's file in ``<outputs>/cache/`` (:meth:`RunStore.shared_file`).
CACHE_NAME = "thaicli_judgements.jsonl"


@dataclass(frozen=True)
class JudgeParams:
    """What is sent with every judge call (temperature 0 and a seed, explicitly) and the call budget."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    max_calls: int = MAX_JUDGE_CALLS

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def for_repeat(self, repeat: int) -> JudgeParams:
        """The settings of repeat ``repeat``: seed ``seed + repeat`` (None stays None), all else the same."""
        return replace(self, seed=None if self.seed is None else self.seed + repeat)


async def judge_one(session: ApiSession, messages: list[dict[str, str]], params: JudgeParams) -> dict[str, Any]:
    """Ask until a reply parses, at most ``params.max_calls`` calls; the final judgement as a record.

    Raises the openai error when a request fails after the client's retries (the item stays unjudged).
    """
    raws: list[str] = []
    tokens = [0, 0]
    last = None
    result = None
    while result is None and len(raws) < params.max_calls:
        last = await session.complete(
            messages, max_tokens=params.max_tokens, temperature=params.temperature, top_p=params.top_p, seed=params.seed
        )
        raws.append(last.text)
        tokens[0] += last.prompt_tokens
        tokens[1] += last.completion_tokens
        result = parse_judgement(last.text)
    score, explanation = result if result is not None else (FALLBACK_SCORE, "")
    return {
        "status": "scored" if result is not None else "fallback_zero",
        "score": score,
        "explanation": explanation,
        "attempts": len(raws),
        "parse_failures": len(raws) - (result is not None),
        "raw_judgements": raws,
        "token_usage": {"prompt": tokens[0], "completion": tokens[1]},
        "served_model": last.model if last else None,
        "system_fingerprint": last.system_fingerprint if last else None,
        "finish_reason": last.finish_reason if last else None,
    }


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
            raise ThaiEvalDataError(f"id {answers['id'].iloc[row]!r} appears twice; repeats need unique ids", row=row, field="id")


def judge_answers(answers: pd.DataFrame, judge: ApiModel, *, model_name: str | None = None,
                  params: JudgeParams | None = None, outputs: str | Path | None = None,
                  cache_path: str | Path | None = None, progress: bool = True, repeats: int = 1,
                  reference_order: ReferenceOrder = "chosen_first") -> JudgeRun:  # fmt: skip
    """Judge every answer (prepare, call, finish: see the module's docstring); record items, run card and summary.

    Args:
        answers: columns id, format, theme, question, chosen, rejected, answer (``generate_answers``).
        judge: the judge endpoint (``ApiModel``); its ``concurrency`` bounds the requests in flight.
        model_name: the evaluated model (default ``answers.attrs["model_name"]``); names the run folder.
        params: judge call settings (default: max_tokens 512, temperature 0, seed 0, 16 calls).
        outputs: the outputs folder (default ``results.outputs_dir()``).
        cache_path: the judgement cache (default ``<outputs>/cache/thaicli_judgements.jsonl``).
        progress: show a tqdm bar.
        repeats: judge every answer this many times (issue 14: seeds, one row per (item, repeat), item means over
            the judged repeats, ``summary["judge_noise"]``); more than 1 needs unique ids.
        reference_order: ``"chosen_first"`` (the template as written) or ``"rejected_first"`` (swapped references:
            another prompt, another hash, another run).

    Returns:
        A :class:`JudgeRun`; ``summary["n_unjudged"]`` counts judgements (item x repeat) whose requests kept failing.

    Raises:
        JudgeError: the endpoint refused the key, the access or the model; what was judged before is written first.
        RunLockedError: another process is judging the same run (nothing is called twice).
    """
    job = _job(answers, judge, params or JudgeParams(), judge_template(reference_order), repeats)
    store = _open_run(job, model_name or answers.attrs.get("model_name") or "unknown-model", outputs)
    try:  # prepare, call, finish: as every run, through the run's store
        usage_before, cache = dict(judge.usage), JudgementCache(cache_path or store.shared_file(CACHE_NAME))
        known, todo = _prepare(job, store, cache)
        outcome = _call(job, store, todo, progress)
        items = _finish(job, store, cache, known, outcome)
        scores, summary = _summarise(job, items, known, usage_before, len(todo), outcome)
        store.write_summary(summary)
    finally:
        store.close()
    if outcome.fatal is not None:
        raise outcome.fatal
    return JudgeRun(items=items, summary=summary, scores=scores, store=store)


@dataclass(frozen=True)
class Judgement:
    """One judgement of a run: answer row ``row``, repeat ``repeat``; ``key`` hashes what decides it
    (:func:`~thai_eval_utils.thaicli.judge_cache.judgement_key`, the cache's key) and ``store_key`` is its key in
    the run's ``items.jsonl`` (``<id>:<first 16 hex digits of key>``)."""

    row: int
    repeat: int
    key: str
    store_key: str


@dataclass(frozen=True, eq=False)
class _Job:
    """What a judging run is: the checked answers, the judge, its settings and prompt, the repeats and the plan
    (every judgement, one per (answer row, repeat), in row order)."""

    answers: pd.DataFrame
    judge: ApiModel
    params: JudgeParams
    template: JudgeTemplate
    repeats: int
    plan: list[Judgement]


def _job(answers: pd.DataFrame, judge: ApiModel, params: JudgeParams, template: JudgeTemplate, repeats: int) -> _Job:
    """Check the answers and repeats (before anything is opened or called) and plan the judgements."""
    _check_answers(answers)
    _check_repeats(answers, repeats)
    texts = list(answers[["question", "chosen", "rejected", "answer"]].itertuples(index=False, name=None))
    plan = []
    for i, ident in enumerate(answers["id"]):
        for r in range(repeats):
            key = judgement_key(*texts[i], judge_model=judge.model_id, template_sha256=template.sha256,
                                params=params.for_repeat(r).to_dict(), repeat=r)  # fmt: skip
            plan.append(Judgement(i, r, key, f"{ident}:{key[:16]}"))
    return _Job(answers, judge, params, template, repeats, plan)


def _open_run(job: _Job, model_name: str, outputs: str | Path | None) -> RunStore:
    """The judging run's store (its one writer: a second process is refused before any call)."""
    config = {"judge_model": job.judge.model_id, "judge_params": job.params.to_dict(),
              "answers_run": job.answers.attrs.get("config_id")}  # fmt: skip
    if job.repeats != 1:  # the defaults add nothing, so runs made before repeats and orders existed keep resuming
        config["repeats"] = job.repeats
    if job.template.reference_order != "chosen_first":
        config["reference_order"] = job.template.reference_order
    return RunStore.open(model_name, "thaicli/judge", config, prompt_templates={job.template.version: job.template.text},
                         model_identity=job.answers.attrs.get("model_identity") or {"name": model_name},
                         outputs=Path(outputs) if outputs is not None else outputs_dir(),
                         legacy_nan_fields=("served_model", "system_fingerprint"))  # fmt: skip


def _merge(known: dict[str, dict[str, Any]], records: Iterable[Mapping[str, Any]]) -> None:
    """Add the final ones of stored ``records`` to ``known`` (judgement key -> record), over what it holds (a record
    stored by an older version lacks the reply and its tokens: the cache's record supplies them)."""
    for rec in records:
        if is_final(rec) and isinstance(rec.get("judgement_key"), str):
            known[rec["judgement_key"]] = {**known.get(rec["judgement_key"], {}), **rec}


def _prepare(job: _Job, store: RunStore, cache: JudgementCache) -> tuple[dict[str, dict[str, Any]], list[Judgement]]:
    """The judgements made before (judgement key -> record, from the run's store and the shared cache) and the
    judgements to ask for: the first of each key that neither holds, whose answer was generated."""
    known = {r["key"]: dict(r) for r in cache}
    _merge(known, store.completed().values())
    ungenerated, todo, queued = _not_generated(job.answers), [], set()
    for j in job.plan:
        if j.key not in known and j.key not in queued and j.row not in ungenerated:
            queued.add(j.key)
            todo.append(j)
    return known, todo


def _call(job: _Job, store: RunStore, todo: list[Judgement], progress: bool) -> RunOutcome[Judgement]:
    """Ask the judge for every judgement of ``todo`` (:func:`run_items_async`: each record stored as it finishes).
    A failed request leaves its judgement unjudged (``outcome.failed``); a refused key, access or model ends the
    run (``outcome.fatal``, a :class:`JudgeError`)."""
    judge, template = job.judge, job.template

    def prepare(j: Judgement) -> tuple[list[dict[str, str]], JudgeParams]:
        row = job.answers.iloc[j.row]
        return template.messages(row["question"], row["chosen"], row["rejected"], row["answer"]), job.params.for_repeat(j.repeat)

    def finish(j: Judgement, rec: dict[str, Any]) -> dict[str, Any]:
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        return _record(job, j, {**rec, "judge_model": judge.model_id, "template": template.version,
                                "template_sha256": template.sha256, "params": job.params.for_repeat(j.repeat).to_dict(),
                                "judged_at": now})  # fmt: skip

    async def main() -> RunOutcome[Judgement]:
        async with judge.session() as session:

            async def call(prepared: tuple[list[dict[str, str]], JudgeParams]) -> dict[str, Any]:
                try:
                    return await judge_one(session, *prepared)
                except FATAL_ERRORS as exc:  # "from None": the chained original would print the server's raw text
                    raise JudgeError(f"judge {judge.model_id}: {describe_error(exc)}") from None

            return await run_items_async(store, todo, lambda j: j.store_key, call, prepare=prepare, finish=finish,
                                         done=is_final, desc=f"judging ({judge.model_id})", progress=progress,
                                         tolerate=(Exception,), fatal=(JudgeError,), describe=_describe)  # fmt: skip

    return run_sync(main)


def _describe(exc: BaseException) -> str:
    """Why a judgement stays unjudged: a request that failed after the client's retries, or another error."""
    return describe_error(exc) if isinstance(exc, (openai.APIError, ApiError)) else f"unexpected {describe_error(exc)}"


def _record(job: _Job, j: Judgement, judgement: Mapping[str, Any]) -> dict[str, Any]:
    """The stored record of judgement ``j``: its answer row's id, format and theme, its repeat, seed and order,
    and the judgement (the judge's reply and its accounting; status ``unjudged`` and an ``error`` when none)."""
    row = job.answers.iloc[j.row]
    return {"id": row["id"], "format": row["format"], "theme": row["theme"], **judgement_part(judgement),
            "repeat": j.repeat, "seed": job.params.for_repeat(j.repeat).seed,
            "reference_order": job.template.reference_order, "error": judgement.get("error", ""),
            "judgement_key": j.key}  # fmt: skip


def _finish(job: _Job, store: RunStore, cache: JudgementCache, known: dict[str, dict[str, Any]],
            outcome: RunOutcome[Judgement]) -> pd.DataFrame:  # fmt: skip
    """Store a record for every judgement of the plan that has none (made before, or unjudged with the reason),
    add the new final judgements to the shared cache, rewrite ``items.jsonl`` in plan order; the items table."""
    _merge(known, outcome.records.values())
    stored, ungenerated = store.completed(), _not_generated(job.answers)
    asked = {j.key: j.store_key for j in reversed(job.plan)}  # key -> the store key it was asked for under (its first)
    missing = []
    for j in job.plan:
        if not is_final(stored.get(j.store_key)):
            reason = NO_ANSWER if j.row in ungenerated else outcome.failed.get(asked[j.key], "not judged")
            missing.append((j.store_key, _record(job, j, known.get(j.key, {"status": "unjudged", "score": None,
                                                                            "error": reason}))))  # fmt: skip
    store.append_many(missing)
    cache.append_many([{**judgement_part(r), "key": k} for k, r in known.items() if k not in cache])
    store.compact([j.store_key for j in job.plan])
    records = store.completed()
    return pd.DataFrame([item_row(job.answers.iloc[j.row], j.repeat, j.key, {**known.get(j.key, {}), **records[j.store_key]})
                         for j in job.plan])  # fmt: skip


def _summarise(job: _Job, items: pd.DataFrame, known: Mapping[str, Mapping[str, Any]], usage_before: dict[str, int],
               n_asked: int, outcome: RunOutcome[Judgement]) -> tuple[ThaiCLIScores, dict[str, Any]]:  # fmt: skip
    """The scores and the summary (a fatal error named in it)."""
    params, template = job.params, job.template
    signature = (f"judge:{job.judge.model_id}|prompt:{template.version}@{template.sha256[:8]}|max_calls:{params.max_calls}"
                 f"|temp:{params.temperature}|seed:{params.seed}|max_tokens:{params.max_tokens}"
                 + (f"|repeats:{job.repeats}" if job.repeats != 1 else ""))  # fmt: skip
    scores = thaicli_scores(items, signature=signature)
    judged = {j.key: known[j.key] for j in job.plan if j.key in known}
    summary = run_summary(items, judged, job.judge, usage_before, len(job.plan) - n_asked, outcome.computed, scores)
    summary.update(redact(repeat_summary(len(job.answers), items, [params.for_repeat(r).seed for r in range(job.repeats)],
                                         template)))  # fmt: skip
    if outcome.fatal is not None:
        summary["fatal_error"] = str(outcome.fatal)
    return scores, summary
