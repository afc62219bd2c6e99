"""Judging as every run (DEVELOPERS.md "The judge on the run loop"), for any rubric and any model:
:func:`judge_items` is prepare, call, finish.

*prepare* plans one judgement per (item, repeat) and takes what the run's store (final records) or the shared
judgement cache already hold; *call* is :func:`~thai_eval_utils.core.runloop.run_items_async`: every judgement a task
(an API judge's semaphore bounds the requests in flight; an in-process model gets the waiting ones as one ``chat``
batch: :mod:`~thai_eval_utils.judging.sessions`), each final judgement appended to ``items.jsonl`` as it finishes, a
failed request left unjudged, a fatal error ending the run after the finished records are written; *finish* stores a
record with the reason for each judgement without one, adds the new judgements to the shared cache and rewrites
``items.jsonl`` in plan order. A run killed at any point loses only the calls in flight.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from thai_eval_utils.core.async_bridge import run_sync
from thai_eval_utils.core.errors import JudgeError
from thai_eval_utils.core.runloop import RunOutcome, run_items_async
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging.batch import BatchMode, run_batch
from thai_eval_utils.judging.cache import JudgementCache, is_final
from thai_eval_utils.judging.judge import Judge, judge_one, new_usage
from thai_eval_utils.judging.sessions import open_session

#: Fields of a stored judgement that come from its item and run, not from the judge (never cached) by default.
ROW_FIELDS = ("id", "seed", "error", "judgement_key")


@dataclass(frozen=True)
class Judgement:
    """One planned judgement: item ``row``, repeat ``repeat``; ``key`` hashes what decides it (the cache's key) and
    ``store_key`` is its key in the run's ``items.jsonl`` (``<id>:<first 16 hex digits of key>``)."""

    row: int
    repeat: int
    key: str
    store_key: str


@dataclass
class JudgeOutcome:
    """What :func:`judge_items` did: the plan, every final judgement known (judgement key -> record: made before or
    now), the stored records after finish (store key -> record, one per judgement of the plan), how many judgements
    were asked for and made, this run's answered calls and tokens (``usage``), the failures and a fatal error."""

    plan: list[Judgement]
    known: dict[str, dict[str, Any]]
    records: dict[str, dict[str, Any]]
    n_asked: int
    computed: int
    usage: dict[str, int]
    failed: dict[str, str] = field(default_factory=dict)
    fatal: BaseException | None = None
    batch: dict[str, Any] | None = None

    def record(self, j: Judgement) -> dict[str, Any]:
        """Judgement ``j``'s stored record over its known judgement (an older record lacks the reply: the cache's)."""
        return {**self.known.get(j.key, {}), **self.records[j.store_key]}


def plan(judge: Judge, items: Sequence[Mapping[str, str]], ids: Sequence[str], repeats: int = 1) -> list[Judgement]:
    """One judgement per (item, repeat), in item order."""
    out = []
    for i, (item, ident) in enumerate(zip(items, ids, strict=True)):
        for r in range(repeats):
            key = judge.key(item, r)
            out.append(Judgement(i, r, key, f"{ident}:{key[:16]}"))
    return out


def default_record(
    ids: Sequence[str], judge: Judge, row_fields: Sequence[str] = ROW_FIELDS
) -> Callable[[Judgement, Mapping[str, Any]], dict[str, Any]]:
    """The stored record of a judgement: its item's id, the judgement, its repeat, seed, error and key."""

    def record(j: Judgement, judgement: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": ids[j.row],
            **cache_part(judgement, row_fields),
            "repeat": j.repeat,
            "seed": judge.settings.for_repeat(j.repeat).seed,
            "error": judgement.get("error", ""),
            "judgement_key": j.key,
        }

    return record


def cache_part(record: Mapping[str, Any], row_fields: Sequence[str] = ROW_FIELDS) -> dict[str, Any]:
    """A stored judgement without its store key and its item's fields (what the shared cache holds)."""
    return {k: v for k, v in record.items() if k not in ("key", *row_fields)}


def judge_items(
    judge: Judge,
    items: Sequence[Mapping[str, str]],
    store: RunStore,
    cache: JudgementCache,
    *,
    ids: Sequence[str],
    repeats: int = 1,
    skip: Mapping[int, str] | None = None,
    record: Callable[[Judgement, Mapping[str, Any]], dict[str, Any]] | None = None,
    row_fields: Sequence[str] = ROW_FIELDS,
    progress: bool = True,
    batch: BatchMode | None = None,
    batch_prefix: str = "",
) -> JudgeOutcome:
    """Judge every item ``repeats`` times through ``store`` and ``cache`` (prepare, call, finish: the module's docstring).

    Args:
        judge: the rubric and the model.
        items: the texts of each item (at least the rubric's ``fields``), in order.
        store: the run's store (open; the caller closes it and writes the summary).
        cache: the shared judgement cache (read before, appended after).
        ids: each item's id (store keys; unique when ``repeats`` > 1).
        repeats: judgements per item, repeat r with seed ``seed + r`` and its own key (repeat 0: the plain key).
        skip: item row -> why it is not judged (e.g. its answer was never generated): stored unjudged with the reason.
        record: (judgement, the judge's record) -> the stored record (default :func:`default_record`).
        row_fields: the fields of a stored record that are not the judge's (left out of the cache).
        progress: show a tqdm bar.
        batch: judge through batches (:mod:`~thai_eval_utils.judging.batch`: the OpenAI Batch API, or offline
            files) instead of live calls; ``outcome.batch`` says what it did (a batch still running: its id).
        batch_prefix: the start of every batch request's ``custom_id`` (a file shared with other runs: theirs kept).

    Returns:
        The :class:`JudgeOutcome` (``fatal`` set when a fatal error ended the run: the caller raises it after
        writing its summary).
    """
    skip = dict(skip or {})
    record = record or default_record(ids, judge, row_fields)
    statuses = judge.rubric.parser.final_statuses
    judgements = plan(judge, items, ids, repeats)
    known, todo = _prepare(judgements, store, cache, skip, statuses)
    usage = new_usage()
    report = None
    if batch is None:
        outcome = _call(judge, items, store, todo, record, usage, progress)
    else:
        finish = _finisher(judge, record)
        outcome, report = run_batch(judge, items, store, todo, batch, record, finish, usage, progress, batch_prefix)
    records = _finish(judgements, store, cache, known, outcome, skip, record, row_fields, statuses)
    return JudgeOutcome(
        judgements,
        known,
        records,
        len(todo),
        outcome.computed,
        usage,
        outcome.failed,
        outcome.fatal,
        batch=report.to_dict() if report is not None else None,
    )


def _merge(known: dict[str, dict[str, Any]], records: Iterable[Mapping[str, Any]], statuses: tuple[str, ...]) -> None:
    """Add the final ones of stored ``records`` to ``known`` (judgement key -> record), over what it holds (a record
    stored by an older version lacks the reply and its tokens: the cache's record supplies them)."""
    for rec in records:
        if is_final(rec, statuses) and isinstance(rec.get("judgement_key"), str):
            known[rec["judgement_key"]] = {**known.get(rec["judgement_key"], {}), **rec}


def _prepare(
    judgements: list[Judgement],
    store: RunStore,
    cache: JudgementCache,
    skip: Mapping[int, str],
    statuses: tuple[str, ...],
) -> tuple[dict[str, dict[str, Any]], list[Judgement]]:
    """The judgements made before (judgement key -> record, from the run's store and the shared cache) and the
    judgements to ask for: the first of each key that neither holds, whose item is not skipped."""
    known = {r["key"]: dict(r) for r in cache}
    _merge(known, store.completed().values(), statuses)
    todo, queued = [], set()
    for j in judgements:
        if j.key not in known and j.key not in queued and j.row not in skip:
            queued.add(j.key)
            todo.append(j)
    return known, todo


def _finisher(
    judge: Judge, record: Callable[[Judgement, Mapping[str, Any]], dict[str, Any]]
) -> Callable[[Judgement, dict[str, Any]], dict[str, Any]]:
    """A finished judgement's stored record: the judge's record with the judge, template, settings and time."""
    rubric, settings = judge.rubric, judge.settings

    def finish(j: Judgement, rec: dict[str, Any]) -> dict[str, Any]:
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        return record(
            j,
            {
                **rec,
                "judge_model": judge.label,
                "template": rubric.version,
                "template_sha256": rubric.sha256,
                "params": settings.for_repeat(j.repeat).to_dict(),
                "judged_at": now,
            },
        )

    return finish


def _call(
    judge: Judge,
    items: Sequence[Mapping[str, str]],
    store: RunStore,
    todo: list[Judgement],
    record: Callable[[Judgement, Mapping[str, Any]], dict[str, Any]],
    usage: dict[str, int],
    progress: bool,
) -> RunOutcome[Judgement]:
    """Ask the judge for every judgement of ``todo`` (each record stored as it finishes)."""
    rubric, settings, statuses = judge.rubric, judge.settings, judge.rubric.parser.final_statuses

    def prepare(j: Judgement) -> tuple[list[dict[str, str]], Any]:
        return rubric.messages(items[j.row]), settings.for_repeat(j.repeat)

    finish = _finisher(judge, record)

    async def main() -> RunOutcome[Judgement]:
        async with open_session(judge.model, batch_size=judge.batch_size) as session:

            async def call(prepared: tuple[list[dict[str, str]], Any]) -> dict[str, Any]:
                try:
                    return await judge_one(session, *prepared, rubric.parser, usage)
                except judge.fatal as exc:  # "from None": the chained original would print the server's raw text
                    raise JudgeError(f"judge {judge.label}: {judge.describe(exc)}") from None

            return await run_items_async(
                store,
                todo,
                lambda j: j.store_key,
                call,
                prepare=prepare,
                finish=finish,
                done=lambda r: is_final(r, statuses),
                desc=f"judging ({judge.label})",
                progress=progress,
                tolerate=(Exception,),
                fatal=(JudgeError,),
                describe=judge.describe,
            )

    return run_sync(main)


def _finish(
    judgements: list[Judgement],
    store: RunStore,
    cache: JudgementCache,
    known: dict[str, dict[str, Any]],
    outcome: RunOutcome[Judgement],
    skip: Mapping[int, str],
    record: Callable[[Judgement, Mapping[str, Any]], dict[str, Any]],
    row_fields: Sequence[str],
    statuses: tuple[str, ...],
) -> dict[str, dict[str, Any]]:
    """Store a record for every judgement of the plan that has none (made before, or unjudged with the reason),
    add the new final judgements to the shared cache, rewrite ``items.jsonl`` in plan order; the stored records."""
    _merge(known, outcome.records.values(), statuses)
    stored = store.completed()
    asked = {
        j.key: j.store_key for j in reversed(judgements)
    }  # key -> the store key it was asked for under (its first)
    missing = []
    for j in judgements:
        if not is_final(stored.get(j.store_key), statuses):
            reason = skip[j.row] if j.row in skip else outcome.failed.get(asked[j.key], "not judged")
            missing.append(
                (j.store_key, record(j, known.get(j.key, {"status": "unjudged", "score": None, "error": reason})))
            )
    store.append_many(missing)
    cache.append_many([{**cache_part(r, row_fields), "key": k} for k, r in known.items() if k not in cache])
    store.compact([j.store_key for j in judgements])
    return store.completed()
