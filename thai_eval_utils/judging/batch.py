"""Batch mode for a judging run (issue 32): the judgements a run still needs are sent as one OpenAI Batch API job (or
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

The run folder holds ``batch_input.jsonl`` (the requests, written before the upload), ``batch.json`` (state, file ids,
batch id, request count; written atomically before and after each step) and ``batch_replies.jsonl`` (what came back,
appended before ``batch.json`` says it was collected). A run killed at any point and run again finishes what the
killed one started: it re-uploads the same input when no file id was written, looks the batch up by its input file
when no batch id was written (``transport.find``), and polls a submitted batch: one batch per round in total.

This module imports ``core`` only; the transport (the OpenAI client) is :mod:`thai_eval_utils.backend.batch_api`'s.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from thai_eval_utils.core.async_bridge import run_sync
from thai_eval_utils.core.errors import JudgeError, ThaiEvalDataError
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.core.runloop import RunOutcome, run_items_async
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.judging.batch_files import (
    BatchFolder,
    chat_body,
    custom_id,
    read_output_lines,
    reply_of,
    write_input_file,
)
from thai_eval_utils.judging.cache import is_final
from thai_eval_utils.judging.judge import Judge, judge_one
from thai_eval_utils.judging.sessions import Reply

#: A batch status after which nothing more comes back.
TERMINAL = ("completed", "expired", "cancelled", "failed")
#: Batches a request not answered by an expired or cancelled batch is sent in, at most.
MAX_EXPIRED = 2


class BatchTransport(Protocol):
    """What batch mode needs of an API (``backend.batch_api.OpenAIBatchTransport``; tests may fake it)."""

    def body(self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float, top_p: float,
             seed: int | None) -> dict[str, Any]: ...  # fmt: skip

    def upload(self, data: bytes) -> str: ...

    def create(self, input_file_id: str, metadata: Mapping[str, str]) -> str: ...

    def find(self, input_file_id: str) -> str | None: ...

    def retrieve(self, batch_id: str) -> dict[str, Any]: ...

    def content(self, file_id: str) -> str: ...


@dataclass(frozen=True)
class BatchMode:
    """How a judging run uses batches.

    Args:
        transport: the API (None: offline files only).
        file_out: write the requests still needed to this JSONL file (the Batch API's input format) instead of
            submitting them.
        file_in: read replies from this batch OUTPUT file first (``vllm run-batch``'s, or one downloaded).
        wait_s: how long to poll a submitted batch before returning (0: look once; the next run collects).
        poll_s: seconds between polls.
        max_request_failures: tries of one attempt whose request failed (per-request error, malformed body).
        progress: a tqdm bar while polling.
        echo: where the run's messages go (default ``print``).
        hooks: test points by name (``after_upload``, ``created`` (before its id is written), ``after_create``, ``poll``,
            ``collected`` (replies stored, ``batch.json`` not yet updated)): called with the state dict.
    """

    transport: BatchTransport | None = None
    file_out: Path | str | None = None
    file_in: Path | str | None = None
    wait_s: float = 0.0
    poll_s: float = 5.0
    max_request_failures: int = 3
    progress: bool = True
    echo: Callable[[str], None] = print
    hooks: Mapping[str, Callable[[dict[str, Any]], None]] = field(default_factory=dict)


class BatchIssue(Exception):
    """Why a judgement has no final record in batch mode (its text is the unjudged record's reason)."""


class BatchPending(BatchIssue):
    """The judgement's next call is a request of a (follow-up) batch."""


class BatchRequestFailed(BatchIssue):
    """The judgement's requests kept failing (errors, malformed bodies, expiries): unjudged."""


class _Replay:
    """One judgement's calls answered from the collected replies; the first without one becomes a request."""

    def __init__(self, store_key: str, replies: Mapping[str, dict[str, Any]], requests: dict[str, dict[str, Any]],
                 body: Callable[..., dict[str, Any]], max_failures: int,
                 observe: Callable[[Reply], None] | None = None) -> None:  # fmt: skip
        self.store_key, self.replies, self.requests, self.body = store_key, replies, requests, body
        self.observe = observe
        self.max_failures = max_failures
        self.attempt = 0

    async def complete(self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float = 0.0,
                       top_p: float = 1.0, seed: int | None = None) -> Reply:  # fmt: skip
        self.attempt += 1
        failures, expired, try_ = 0, 0, 0
        while True:
            cid = custom_id(self.store_key, self.attempt, try_)
            entry = self.replies.get(cid)
            if entry is None:
                self.requests[cid] = self.body(messages, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                                               seed=seed)  # fmt: skip
                raise BatchPending(f"waiting for a batch reply ({cid})")
            try:
                reply = reply_of(entry)
            except ValueError as exc:
                if entry.get("expired"):
                    expired += 1
                    if expired >= MAX_EXPIRED:
                        raise BatchRequestFailed(f"batch request not answered twice: {exc}") from None
                else:
                    failures += 1
                    if failures >= self.max_failures:
                        raise BatchRequestFailed(f"batch request failed {failures} times: {exc}") from None
                try_ += 1
                continue
            if self.observe is not None:
                self.observe(reply)
            return reply


@dataclass
class BatchReport:
    """What batch mode did in this run: the batches (ids), whether one is still running, the messages printed."""

    batch_ids: list[str] = field(default_factory=list)
    running: str | None = None
    written: int = 0
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"batch_ids": self.batch_ids, "running": self.running, "requests_written": self.written,
                "messages": self.messages}  # fmt: skip


class _Runner:
    """One judging run in batch mode (rounds of replay, submit, poll, collect)."""

    def __init__(self, judge: Judge, items: Sequence[Mapping[str, str]], store: RunStore, mode: BatchMode,
                 record: Callable[..., dict[str, Any]], finish: Callable[..., dict[str, Any]],
                 usage: dict[str, int], progress: bool) -> None:  # fmt: skip
        self.judge, self.items, self.store, self.mode = judge, items, store, mode
        self.finish, self.usage, self.progress = finish, usage, progress
        self.folder = BatchFolder(store.root)
        self.report = BatchReport()
        self.statuses = judge.rubric.parser.final_statuses
        self.deadline = time.monotonic() + max(0.0, float(mode.wait_s))

    def say(self, text: str) -> None:
        self.report.messages.append(text)
        self.mode.echo(text)

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
            session = _Replay(j.store_key, replies, requests, self.body, self.mode.max_request_failures,
                              getattr(self.mode.transport, "observe", None))
            own = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
            result = await judge_one(session, messages, params, rubric.parser, own)
            for k, v in own.items():  # counted once: when the judgement is final (replayed calls are not new calls)
                self.usage[k] += v
            return result

        def describe(exc: BaseException) -> str:
            return str(exc) if isinstance(exc, BatchIssue) else judge.describe(exc)

        async def main() -> RunOutcome[Any]:
            return await run_items_async(self.store, todo, lambda j: j.store_key, call, prepare=prepare,
                                         finish=self.finish, done=lambda r: is_final(r, self.statuses),
                                         desc=f"batch replies ({judge.label})", progress=False,
                                         tolerate=(Exception,), fatal=(JudgeError,), describe=describe)  # fmt: skip

        return run_sync(main), requests

    # -- files in and out -----------------------------------------------------------------------------------------
    def read_file_in(self) -> None:
        path = Path(self.mode.file_in)  # type: ignore[arg-type]
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ThaiEvalDataError(f"cannot read the batch output file: {exc.strerror}", path=str(path)) from None
        lines = read_output_lines(text, str(path))
        have = self.folder.replies()
        new = [{"custom_id": ln["custom_id"], "batch_id": f"file:{path.name}", "line": ln} for ln in lines
               if ln["custom_id"] not in have]  # fmt: skip
        self.folder.add_replies(new)
        self.say(f"batch file {path}: {len(lines)} replies read, {len(new)} new")

    # -- the API ----------------------------------------------------------------------------------------------------
    def hook(self, name: str, state: dict[str, Any]) -> None:
        fn = self.mode.hooks.get(name)
        if fn is not None:
            fn(state)

    def submit(self, requests: Mapping[str, Mapping[str, Any]] | None, state: dict[str, Any]) -> dict[str, Any]:
        """Write the input and the state, upload, create (each step's result in ``batch.json`` before the next);
        with ``requests`` None, finish the submission a killed run began."""
        t = self.mode.transport
        assert t is not None
        if requests is not None:
            data = write_input_file(self.folder.input_path, requests)
            state = {"state": "uploading", "requests": len(requests), "input_sha256": hashlib.sha256(data).hexdigest(),
                     "history": state.get("history", [])}  # fmt: skip
            self.folder.write_state(state)
        data = self.folder.input_path.read_bytes()
        if state["state"] == "uploading":
            state = {**state, "state": "uploaded", "input_file_id": t.upload(data)}
            self.folder.write_state(state)
            self.hook("after_upload", state)
        if state["state"] == "uploaded":
            batch_id = t.find(state["input_file_id"])
            if batch_id is None:
                batch_id = t.create(state["input_file_id"], {"thai_eval_input_sha256": state["input_sha256"][:64]})
                self.hook("created", {**state, "batch_id": batch_id})  # a kill here: the rerun finds it by its file
            state = {**state, "state": "submitted", "batch_id": batch_id}
            self.folder.write_state(state)
            self.hook("after_create", state)
            self.report.batch_ids.append(batch_id)
            self.say(f"batch {batch_id}: {state['requests']} requests submitted")
        return state

    def poll(self, state: dict[str, Any]) -> dict[str, Any] | None:
        """The batch's final status once it ends before the deadline, else None (still running: said so)."""
        t = self.mode.transport
        assert t is not None
        batch_id = state["batch_id"]
        bar = None
        try:
            while True:
                info = t.retrieve(batch_id)
                counts = info.get("request_counts") or {}
                total = int(counts.get("total") or state.get("requests") or 0)
                done = int(counts.get("completed") or 0) + int(counts.get("failed") or 0)
                if self.mode.progress:
                    if bar is None:
                        bar = tqdm(total=total, desc=f"batch {batch_id}", unit="request")
                    bar.n = done
                    bar.refresh()
                self.hook("poll", {**state, "status": info.get("status")})
                if info.get("status") in TERMINAL:
                    return info
                if time.monotonic() >= self.deadline:
                    self.report.running = batch_id
                    self.say(f"batch {batch_id}: {done}/{total} done ({info.get('status')}); "
                             "run the same command again to collect")  # fmt: skip
                    return None
                time.sleep(max(0.0, min(float(self.mode.poll_s), self.deadline - time.monotonic())))
        finally:
            if bar is not None:
                bar.close()

    def collect(self, state: dict[str, Any], info: Mapping[str, Any]) -> None:
        """Store what a finished batch returned (replies first, then ``batch.json``); requests it did not answer
        are marked (an expired or cancelled batch: sent once more; a failed batch: a failed try)."""
        t = self.mode.transport
        assert t is not None
        batch_id, status = state["batch_id"], str(info.get("status"))
        lines: list[dict[str, Any]] = []
        for key in ("output_file_id", "error_file_id"):
            if info.get(key):
                lines += read_output_lines(t.content(info[key]), f"{key} {info[key]} of batch {batch_id}")
        sent = [json.loads(x)["custom_id"] for x in self.folder.input_path.read_text(encoding="utf-8").splitlines() if x.strip()]
        have = self.folder.replies()
        back = {ln["custom_id"] for ln in lines}
        entries = [{"custom_id": ln["custom_id"], "batch_id": batch_id, "line": ln} for ln in lines
                   if ln["custom_id"] in set(sent) and ln["custom_id"] not in have]  # fmt: skip
        missing = [cid for cid in sent if cid not in back and cid not in have]
        if status == "failed":
            errs = info.get("errors") or {}
            why = scrub(str(errs)[:300]) if errs else "batch failed"
            entries += [{"custom_id": cid, "batch_id": batch_id, "line": {"custom_id": cid, "error": {"message": why}}}
                        for cid in missing]  # fmt: skip
        else:
            entries += [{"custom_id": cid, "batch_id": batch_id, "expired": True, "status": status} for cid in missing]
        self.folder.add_replies(entries)
        self.hook("collected", state)  # a kill here: the next run downloads again and adds no line twice
        history = [*state.get("history", []), {"batch_id": batch_id, "status": status, "requests": len(sent),
                                               "returned": len(back), "input_file_id": state.get("input_file_id")}]  # fmt: skip
        self.folder.write_state({"state": "collected", "history": history})
        if missing:
            self.say(f"batch {batch_id} {status}: {len(sent) - len(missing)} of {len(sent)} requests came back; the "
                     f"other {len(missing)} are sent once more (a second time unanswered: unjudged)")  # fmt: skip
        else:
            self.say(f"batch {batch_id} {status}: {len(sent)} replies collected")

    # -- the run ----------------------------------------------------------------------------------------------------
    def run(self, todo: list[Any]) -> RunOutcome[Any]:
        mode = self.mode
        if mode.file_in is not None:
            self.read_file_in()
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
            state = self.folder.state() if mode.transport is not None else {"state": "idle", "history": []}
            if state["state"] in ("uploading", "uploaded"):  # a killed run's submission: finished, not made again
                state = self.submit(None, state)
            if state["state"] == "submitted":
                info = self.poll(state)
                if info is None:
                    total.failed = {j.store_key: f"waiting for batch {state['batch_id']}" for j in remaining}
                    break
                self.collect(state, info)
                if state["batch_id"] not in self.report.batch_ids:
                    self.report.batch_ids.append(state["batch_id"])
            outcome, requests = self.replay(remaining)
            total.records.update(outcome.records)
            total.computed += outcome.computed
            total.failed = dict(outcome.failed)
            total.fatal = outcome.fatal
            remaining = [j for j in remaining if j.store_key in outcome.failed]
            if outcome.fatal is not None or not requests:
                break
            if mode.file_out is not None:
                write_input_file(Path(mode.file_out), requests)
                self.report.written = len(requests)
                self.say(f"batch file {mode.file_out}: {len(requests)} requests written; answer them (e.g. `vllm "
                         "run-batch`) and run again with --batch-file-in")  # fmt: skip
                break
            if mode.transport is None:
                break
            self.submit(requests, state)


def run_batch(judge: Judge, items: Sequence[Mapping[str, str]], store: RunStore, todo: list[Any], mode: BatchMode,
              record: Callable[..., dict[str, Any]], finish: Callable[..., dict[str, Any]], usage: dict[str, int],
              progress: bool) -> tuple[RunOutcome[Any], BatchReport]:  # fmt: skip
    """The call step of :func:`~thai_eval_utils.judging.run.judge_items` in batch mode (``finish`` makes a record of a
    judgement as the live call step does)."""
    if mode.transport is None and mode.file_in is None and mode.file_out is None:
        raise ValueError("batch mode needs a transport (an API judge), file_in or file_out")
    runner = _Runner(judge, items, store, mode, record, finish, usage, progress)
    return runner.run(todo), runner.report
