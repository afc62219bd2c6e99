"""Batch mode for a judging run: the judgements a run still needs are sent as one OpenAI Batch API job (or
written to a JSONL file for ``vllm run-batch``), at about half the price, and the replies go through the SAME attempt
logic as live replies (:func:`~thai_eval_utils.judging.judge.judge_one` replays them).

How it works (docs/batch_mode.md): every judgement's calls are replayed from the replies collected so far (the run
folder's ``batch_replies.jsonl``); the first call without a reply becomes a batch request, its ``custom_id`` being
``<store key>#a<attempt>t<try>`` (the store's item key, the rubric's attempt number, and how many times this attempt's
request came back unusable), so a reply maps back to exactly one call. A reply that does not parse is one of the
rubric's attempts (ThaiCLI: the next attempt is a request in the follow-up batch; after 16, the fallback 0). A
per-request error or a malformed body is another try of the same attempt, up to ``BatchMode.max_request_failures``,
then the judgement is unjudged (never scored). A request an expired or cancelled batch did not answer is sent once
more; a second time, unjudged.

The files, submission (split into parts at the API's limits), polling, collecting and resume after a kill are
:mod:`thai_eval_utils.core.batch_rounds`'s, shared with API models' answers (:mod:`thai_eval_utils.backend.batch_model`);
this module is the judge's replay. It imports ``core`` only; the transport (the OpenAI client) is
:mod:`thai_eval_utils.backend.batch_api`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.core.async_bridge import run_sync
from thai_eval_utils.core.batch_files import (
    BatchFolder,
    chat_body,
    custom_id,
    read_output_lines,
    reply_of,
    write_input_file,
)
from thai_eval_utils.core.batch_rounds import (
    MAX_EXPIRED,
    TERMINAL,
    BatchMode,
    BatchReport,
    BatchRounds,
    BatchTransport,
    FailedTries,
)
from thai_eval_utils.core.errors import JudgeError, ThaiEvalDataError
from thai_eval_utils.core.protocols import Reply
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.core.runloop import RunOutcome, run_items_async
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging.cache import is_final
from thai_eval_utils.judging.judge import Judge, judge_one

#: Re-exported: the judge's callers and tests name them from here.
__all__ = [
    "MAX_EXPIRED",
    "TERMINAL",
    "BatchFolder",
    "BatchIssue",
    "BatchMode",
    "BatchPending",
    "BatchReport",
    "BatchRequestFailed",
    "BatchTransport",
    "custom_id",
    "run_batch",
]


class BatchIssue(Exception):
    """Why a judgement has no final record in batch mode (its text is the unjudged record's reason)."""


class BatchPending(BatchIssue):
    """The judgement's next call is a request of a (follow-up) batch."""


class BatchRequestFailed(BatchIssue):
    """The judgement's requests kept failing (errors, malformed bodies, expiries): unjudged."""


class _Replay:
    """One judgement's calls answered from the collected replies; the first without one becomes a request."""

    def __init__(
        self,
        store_key: str,
        replies: Mapping[str, dict[str, Any]],
        requests: dict[str, dict[str, Any]],
        body: Callable[..., dict[str, Any]],
        max_failures: int,
        observe: Callable[[Reply], None] | None = None,
    ) -> None:
        self.store_key, self.replies, self.requests, self.body = store_key, replies, requests, body
        self.observe = observe
        self.max_failures = max_failures
        self.attempt = 0

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> Reply:
        self.attempt += 1
        tries, try_ = FailedTries(self.max_failures), 0
        while True:
            cid = custom_id(self.store_key, self.attempt, try_)
            entry = self.replies.get(cid)
            if entry is None:
                self.requests[cid] = self.body(
                    messages, max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed
                )
                raise BatchPending(f"waiting for a batch reply ({cid})")
            try:
                reply = reply_of(entry)
            except ValueError as exc:
                if (reason := tries.give_up(entry, exc)) is not None:
                    raise BatchRequestFailed(reason) from None
                try_ += 1
                continue
            if self.observe is not None:
                self.observe(reply)
            return reply


class _Runner:
    """One judging run in batch mode (rounds of replay, submit, poll, collect)."""

    def __init__(
        self,
        judge: Judge,
        items: Sequence[Mapping[str, str]],
        store: RunStore,
        mode: BatchMode,
        record: Callable[..., dict[str, Any]],
        finish: Callable[..., dict[str, Any]],
        usage: dict[str, int],
        progress: bool,
        prefix: str = "",
    ) -> None:
        self.judge, self.items, self.store, self.mode = judge, items, store, mode
        self.finish, self.usage, self.progress, self.prefix = finish, usage, progress, prefix
        self.folder = BatchFolder(store.root)
        self.report = BatchReport()
        self.statuses = judge.rubric.parser.final_statuses
        deadline = time.monotonic() + max(0.0, float(mode.wait_s))
        self.rounds = BatchRounds(store.root, mode, self.report, deadline, prefix=prefix)

    def body(self, messages: list[dict[str, str]], **kw: Any) -> dict[str, Any]:
        t = self.mode.transport
        return t.body(messages, **kw) if t is not None else chat_body(self.judge.label, messages, **kw)

    # -- replay ---------------------------------------------------------------------------------------------------
    def replay(self, todo: list[Any]) -> tuple[RunOutcome[Any], dict[str, dict[str, Any]]]:
        replies = self.folder.replies()
        requests: dict[str, dict[str, Any]] = {}
        rubric, settings, judge = self.judge.rubric, self.judge.settings, self.judge

        def prepare(j: Any) -> tuple[Any, list[dict[str, str]], Any]:
            return j, rubric.messages(self.items[j.row]), settings.for_repeat(j.repeat)

        async def call(prepared: tuple[Any, list[dict[str, str]], Any]) -> dict[str, Any]:
            j, messages, params = prepared
            session = _Replay(
                self.prefix + j.store_key,
                replies,
                requests,
                self.body,
                self.mode.max_request_failures,
                getattr(self.mode.transport, "observe", None),
            )
            own = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
            result = await judge_one(session, messages, params, rubric.parser, own)
            for k, v in own.items():  # counted once: when the judgement is final (replayed calls are not new calls)
                self.usage[k] += v
            return result

        def describe(exc: BaseException) -> str:
            return str(exc) if isinstance(exc, BatchIssue) else judge.describe(exc)

        async def main() -> RunOutcome[Any]:
            return await run_items_async(
                self.store,
                todo,
                lambda j: j.store_key,
                call,
                prepare=prepare,
                finish=self.finish,
                done=lambda r: is_final(r, self.statuses),
                desc=f"batch replies ({judge.label})",
                progress=False,
                tolerate=(Exception,),
                fatal=(JudgeError,),
                describe=describe,
            )

        return run_sync(main), requests

    # -- the run ----------------------------------------------------------------------------------------------------
    def run(self, todo: list[Any]) -> RunOutcome[Any]:
        mode = self.mode
        if mode.file_in is not None:
            self.rounds.read_file_in()
        total = RunOutcome(keys=[j.store_key for j in todo], records={})
        try:
            self._rounds(todo, total)
        except (ThaiEvalDataError, JudgeError):
            raise
        except Exception as exc:  # noqa: BLE001 - the API's failure ends the run as a JudgeError (summary first)
            total.fatal = JudgeError(scrub(f"judge {self.judge.label}: batch: {type(exc).__name__}: {exc}"))
        return total

    def _rounds(self, todo: list[Any], total: RunOutcome[Any]) -> None:
        mode = self.mode
        remaining = list(todo)
        max_rounds = self.judge.settings.max_calls * (mode.max_request_failures + MAX_EXPIRED) + 2
        for _ in range(max_rounds):
            if mode.transport is not None:  # a killed run's submission finished, the round's batches polled, collected
                running = self.rounds.sync()
                if running is not None:
                    total.failed = {j.store_key: f"waiting for batch {running}" for j in remaining}
                    break
            outcome, requests = self.replay(remaining)
            total.records.update(outcome.records)
            total.computed += outcome.computed
            total.failed = dict(outcome.failed)
            total.fatal = outcome.fatal
            remaining = [j for j in remaining if j.store_key in outcome.failed]
            if outcome.fatal is not None or not requests:
                break
            if mode.file_out is not None:
                self._write_file_out(Path(mode.file_out), requests, todo)
                self.report.written = len(requests)
                self.rounds.say(
                    f"batch file {mode.file_out}: {len(requests)} requests written; answer them (e.g. "
                    "`vllm run-batch`) and run again with --batch-file-in"
                )
                break
            if mode.transport is None:
                break
            self.rounds.submit(requests)

    def _write_file_out(self, path: Path, requests: dict[str, dict[str, Any]], todo: list[Any]) -> None:
        """Write this run's requests to ``path``, replacing this run's older lines (requests of its judgements, to ask
        now or stored) and keeping the other runs' (another judged task or suite of the same command)."""
        own = {self.prefix + key for key in [*(j.store_key for j in todo), *self.store.completed()]}
        kept = []
        if path.exists():
            lines = read_output_lines(path.read_text(encoding="utf-8"), str(path))
            # a request id is <prefix><store key>#a<attempt>t<try>
            kept = [
                (ln["custom_id"], ln.get("body") or {}) for ln in lines if ln["custom_id"].rsplit("#", 1)[0] not in own
            ]
        write_input_file(path, {**dict(kept), **requests})


def run_batch(
    judge: Judge,
    items: Sequence[Mapping[str, str]],
    store: RunStore,
    todo: list[Any],
    mode: BatchMode,
    record: Callable[..., dict[str, Any]],
    finish: Callable[..., dict[str, Any]],
    usage: dict[str, int],
    progress: bool,
    prefix: str = "",
) -> tuple[RunOutcome[Any], BatchReport]:
    """The call step of :func:`~thai_eval_utils.judging.run.judge_items` in batch mode (``finish`` makes a record of a
    judgement as the live call step does). ``prefix`` starts every request's ``custom_id``: the replies of an offline
    file that are this run's (a file may hold several runs' requests: each keeps the others' lines)."""
    if mode.transport is None and mode.file_in is None and mode.file_out is None:
        raise ValueError("batch mode needs a transport (an API judge), file_in or file_out")
    runner = _Runner(judge, items, store, mode, record, finish, usage, progress, prefix)
    return runner.run(todo), runner.report
