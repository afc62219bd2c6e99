"""ThaiCLI LLM-as-a-judge (Kim et al., arXiv 2410.04795, section 4): the judging loop (prompt and parser:
:mod:`thai_eval_utils.thaicli.judge_prompt`; scores: :mod:`thai_eval_utils.thaicli.scores`).

The judge sees the question, the chosen answer (a good example), the rejected answer (a bad example) and
the model's answer, and replies ``<score>N</score><explanation>...</explanation>``. A reply that does not
parse is asked for again, at most :data:`MAX_JUDGE_CALLS` calls per item in all; then the item scores 0
(flagged ``fallback_zero``; the 0 counts in the mean). Transport errors (429, 5xx, timeouts) are retried by
the openai client, never count as one of those calls and never become a score: an item whose requests keep
failing stays unjudged and is reported (``n_unjudged``), and a rerun judges it. A malformed 200 reply (not
JSON, no choices, null content: see :func:`~thai_eval_utils.core.openai_client.reply_problem`) is such a
failed request. No failure aborts the run except a refused key, access or model (:data:`FATAL_ERRORS`), and
even then the items already judged are written with the summary before :class:`JudgeError` is raised. Final judgements go to an
append-only cache keyed by the texts, judge model, prompt hash and parameters, so a resumed run repeats none.

Issue 14: ``repeats=k`` judges every answer k times, repeat r with seed ``params.seed + r`` and its own cache key
(repeat 0 keeps the key it always had), and the summary gains the judge's noise floor
(:mod:`~thai_eval_utils.thaicli.judge_noise`); ``reference_order="rejected_first"`` swaps the two references
in the prompt (its own template hash; the effect of the order: :mod:`~thai_eval_utils.thaicli.judge_order`).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import openai
import pandas as pd

from thai_eval_utils.core.errors import JudgeError, ThaiEvalDataError
from thai_eval_utils.core.openai_client import (
    FATAL_ERRORS,
    ApiError,
    ApiModel,
    ApiSession,
    describe_error,
    estimate_cost,
    run_sync,
)
from thai_eval_utils.core.provenance import outputs_dir, redact
from thai_eval_utils.core.records import is_blank
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.thaicli.judge_cache import (
    CacheWriter,
    JudgementCache,
    judgement_key,
)
from thai_eval_utils.thaicli.judge_noise import judge_noise
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
from thai_eval_utils.thaicli.scores import (  # noqa: F401 - SCORE_COLUMNS re-exported
    SCORE_COLUMNS,
    ThaiCLIScores,
    item_means,
    thaicli_scores,
)

#: Why an item whose answer is missing stays unjudged (never scored: the judge never saw an answer).
NO_ANSWER = "no answer: the evaluated model's answer was not generated (rerun generate_answers)"
_ANSWER_COLUMNS = ("id", "format", "theme", "question", "chosen", "rejected", "answer")


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
    missing = [c for c in _ANSWER_COLUMNS if c not in answers.columns]
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


def judge_answers(
    answers: pd.DataFrame,
    judge: ApiModel,
    *,
    model_name: str | None = None,
    params: JudgeParams | None = None,
    outputs: str | Path | None = None,
    cache_path: str | Path | None = None,
    progress: bool = True,
    repeats: int = 1,
    reference_order: ReferenceOrder = "chosen_first",
) -> JudgeRun:
    """Judge every answer, reusing cached judgements; record items, run card and summary.

    Args:
        answers: columns id, format, theme, question, chosen, rejected, answer (``generate_answers``).
        judge: the judge endpoint (``ApiModel``); its ``concurrency`` bounds the requests in flight.
        model_name: the evaluated model (default ``answers.attrs["model_name"]``); names the run folder.
        params: judge call settings (default: max_tokens 512, temperature 0, seed 0, 16 calls).
        outputs: the outputs folder (default ``results.outputs_dir()``).
        cache_path: the judgement cache (default ``<outputs>/cache/thaicli_judgements.jsonl``).
        progress: show a tqdm bar.
        repeats: judge every answer this many times, repeat r with seed ``params.seed + r`` (issue 14). The
            items table has one row per (item, repeat) (columns ``repeat``, ``seed``); the scores average each
            item over its judged repeats; ``summary["judge_noise"]`` holds the spread (k >= 2). More than 1 needs
            unique ids. With temperature 0 a deterministic judge repeats itself; the spread then measures only
            what the seed changes.
        reference_order: ``"chosen_first"`` (the template as written) or ``"rejected_first"`` (the two references
            swapped: another prompt, another hash, another run).

    Returns:
        A :class:`JudgeRun`; ``summary["n_unjudged"]`` counts judgements (item x repeat) whose requests kept failing.

    Raises:
        JudgeError: the endpoint refused the key, the access or the model (no later call could succeed); the
            items judged before it are written with the summary first.
        RunLockedError: another process is judging the same run (nothing is called twice).
    """
    _check_answers(answers)
    _check_repeats(answers, repeats)
    template = judge_template(reference_order)
    params = params or JudgeParams()
    model_name = model_name or answers.attrs.get("model_name") or "unknown-model"
    out = Path(outputs) if outputs is not None else outputs_dir()
    cache = JudgementCache(cache_path or out / "cache" / "thaicli_judgements.jsonl")
    plan = [(i, r) for i in range(len(answers)) for r in range(repeats)]  # one row per (item, repeat)
    texts = list(answers[["question", "chosen", "rejected", "answer"]].itertuples(index=False, name=None))
    keys = [
        judgement_key(*texts[i], judge_model=judge.model_id, template_sha256=template.sha256,
                      params=params.for_repeat(r).to_dict(), repeat=r)
        for i, r in plan
    ]  # fmt: skip
    config = {"judge_model": judge.model_id, "judge_params": params.to_dict(), "answers_run": answers.attrs.get("config_id")}
    if repeats != 1:  # the defaults add nothing, so runs made before repeats and orders existed keep resuming
        config["repeats"] = repeats
    if reference_order != "chosen_first":
        config["reference_order"] = reference_order
    store = RunStore.open(
        model_name,
        "thaicli/judge",
        config,
        model_identity=answers.attrs.get("model_identity") or {"name": model_name},
        prompt_templates={template.version: template.text},
        outputs=out,
    )
    todo: dict[str, tuple[int, int]] = {}  # key -> its first (row, repeat), in row order
    errors: dict[str, str] = {}
    ungenerated = _not_generated(answers)
    for (i, r), k in zip(plan, keys):
        if i in ungenerated:
            errors[k] = NO_ANSWER
        elif k not in cache and k not in todo:
            todo[k] = (i, r)
    usage_before = dict(judge.usage)
    fatal: JudgeError | None = None
    try:
        if todo:
            try:
                _run_loop(answers, judge, params, template, cache, todo, errors, progress)
            except JudgeError as exc:  # write what finished, then raise
                fatal = exc
        items = _items_frame(answers, plan, keys, params, template, cache, errors)
        scores = thaicli_scores(items, signature=_signature(judge, params, template, repeats))
        summary = _summary(items, keys, cache, judge, usage_before, len(todo), scores)
        summary.update(redact(_repeat_summary(answers, items, params, template, repeats)))
        if fatal is not None:
            summary["fatal_error"] = str(fatal)
        _write_items(store, items)
        store.write_summary(summary)
    finally:
        store.close()
    if fatal is not None:
        raise fatal
    return JudgeRun(items=items, summary=summary, scores=scores, store=store)


def _run_loop(answers, judge, params, template, cache, todo, errors, progress) -> None:  # type: ignore[no-untyped-def]
    from tqdm.auto import tqdm

    bar = tqdm(total=len(todo), desc=f"judging ({judge.model_id})", disable=not progress)

    async def one(session: ApiSession, key: str, row: Any, repeat: int) -> None:
        messages = template.messages(row["question"], row["chosen"], row["rejected"], row["answer"])
        call_params = params.for_repeat(repeat)
        try:
            rec = await judge_one(session, messages, call_params)
        except FATAL_ERRORS as exc:  # "from None": the chained original would print the server's raw text
            raise JudgeError(f"judge {judge.model_id}: {describe_error(exc)}") from None
        except (openai.APIError, ApiError) as exc:  # spent the client's retries: leave unjudged, never a score
            errors[key] = describe_error(exc)
            bar.update(1)
            return
        except Exception as exc:  # noqa: BLE001 - any other failure of one item leaves it unjudged, never the run
            errors[key] = f"unexpected {describe_error(exc)}"
            bar.update(1)
            return
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        rec = {"key": key, **rec, "judge_model": judge.model_id, "template": template.version,
               "template_sha256": template.sha256, "params": call_params.to_dict(), "repeat": repeat,
               "reference_order": template.reference_order, "judged_at": now}  # fmt: skip
        writer.put(rec)
        bar.update(1)

    async def main() -> None:
        async with judge.session() as session, asyncio.TaskGroup() as group:
            for key, (i, r) in todo.items():
                group.create_task(one(session, key, answers.iloc[i], r))

    writer = CacheWriter(cache)
    try:
        run_sync(main)
    except BaseExceptionGroup as group:  # TaskGroup wraps the first fatal error
        fatal = group.subgroup(JudgeError)
        raise (fatal.exceptions[0] if fatal else group) from None
    finally:
        writer.close()  # every finished judgement is on disk before returning or raising
        bar.close()


def _items_frame(answers: pd.DataFrame, plan: list[tuple[int, int]], keys: list[str], params: JudgeParams,
                 template: JudgeTemplate, cache: JudgementCache, errors: dict[str, str]) -> pd.DataFrame:  # fmt: skip
    rows = []
    for (i, r), key in zip(plan, keys, strict=True):
        row = answers.iloc[i]
        rec = cache.get(key) or {}
        rows.append({
            **{c: row[c] for c in _ANSWER_COLUMNS},
            "repeat": r,
            "seed": params.for_repeat(r).seed,
            "reference_order": template.reference_order,
            "score": rec.get("score", math.nan),
            "status": rec.get("status", "unjudged"),
            "attempts": rec.get("attempts", 0),
            "parse_failures": rec.get("parse_failures", 0),
            "explanation": rec.get("explanation", ""),
            "last_judgement": (rec.get("raw_judgements") or [""])[-1],
            "served_model": rec.get("served_model"),
            "system_fingerprint": rec.get("system_fingerprint"),
            "error": errors.get(key, "" if rec else "not judged"),
            "judgement_key": key,
        })  # fmt: skip
    return pd.DataFrame(rows)


def _write_items(store: RunStore, items: pd.DataFrame) -> None:
    """The run's ``items.jsonl``, rewritten whole (atomically) at the end of every run: the judgement cache,
    appended as each item finishes, is the durable per-item log; this is the run's snapshot of it."""
    cols = ["id", "format", "theme", "repeat", "seed", "reference_order", "score", "status", "attempts",
            "parse_failures", "explanation", "served_model", "system_fingerprint", "error", "judgement_key"]  # fmt: skip
    lines = []
    for rec in items[cols].to_dict(orient="records"):
        rec["score"] = None if pd.isna(rec["score"]) else rec["score"]
        rec["seed"] = None if pd.isna(rec["seed"]) else int(rec["seed"])
        key = f"{rec['id']}:{rec['judgement_key'][:16]}"
        lines.append(json.dumps(redact({"key": key, **rec}), ensure_ascii=False, default=str) + "\n")
    tmp = store.items_path.with_name(f"items.jsonl.tmp{os.getpid()}")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, store.items_path)


def _signature(judge: ApiModel, params: JudgeParams, template: JudgeTemplate, repeats: int) -> str:
    return (
        f"judge:{judge.model_id}|prompt:{template.version}@{template.sha256[:8]}|max_calls:{params.max_calls}"
        f"|temp:{params.temperature}|seed:{params.seed}|max_tokens:{params.max_tokens}"
        + (f"|repeats:{repeats}" if repeats != 1 else "")
    )


def _repeat_summary(answers: pd.DataFrame, items: pd.DataFrame, params: JudgeParams, template: JudgeTemplate,
                    repeats: int) -> dict[str, Any]:  # fmt: skip
    """The summary's prompt, order and repeat entries: counts per item and per judgement, seeds, noise floor."""
    return {
        "n_items": len(answers),
        "n_judgements": len(items),
        "unjudged_ids": list(dict.fromkeys(items.loc[items["status"] == "unjudged", "id"])),
        "n_repeats": repeats,
        "seeds": [params.for_repeat(r).seed for r in range(repeats)],
        "reference_order": template.reference_order,
        "template": template.version,
        "template_sha256": template.sha256,
        "judge_noise": judge_noise(items),
    }


def _summary(items, keys, cache, judge, usage_before, n_todo, scores) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    unique = {k: cache.get(k) for k in dict.fromkeys(keys) if k in cache}
    served = sorted({r.get("served_model") for r in unique.values() if r.get("served_model")})
    run_tokens = (judge.usage["prompt_tokens"] - usage_before["prompt_tokens"],
                  judge.usage["completion_tokens"] - usage_before["completion_tokens"])  # fmt: skip
    all_tokens = (sum(r["token_usage"]["prompt"] for r in unique.values()),
                  sum(r["token_usage"]["completion"] for r in unique.values()))  # fmt: skip
    price_ids = [*served, judge.model_id]
    unjudged = items[items["status"] == "unjudged"]
    return redact({
        "n_items": len(items),
        "n_judged": int((items["status"] != "unjudged").sum()),
        "n_unjudged": len(unjudged),
        "unjudged_ids": unjudged["id"].tolist(),
        "unjudged_errors": sorted(set(unjudged["error"])),
        "n_judged_this_run": n_todo - len(unjudged.drop_duplicates("judgement_key")),
        "n_from_cache": len(keys) - n_todo,
        "judge_calls_this_run": judge.usage["requests"] - usage_before["requests"],
        "token_usage_this_run": {"prompt": run_tokens[0], "completion": run_tokens[1]},
        "token_usage_all_judgements": {"prompt": all_tokens[0], "completion": all_tokens[1]},
        "cost_usd_this_run": estimate_cost(price_ids, *run_tokens),
        "cost_usd_all_judgements": estimate_cost(price_ids, *all_tokens),
        "judge_model": judge.model_id,
        "judge_identity": judge.identity,
        "served_models": served,
        "system_fingerprints": sorted({r.get("system_fingerprint") for r in unique.values() if r.get("system_fingerprint")}),
        "template": TEMPLATE_VERSION,
        "template_sha256": TEMPLATE_SHA256,
        "scores": scores.to_dict(),
    })  # fmt: skip
