"""API models' answers in batch mode (docs/batch_mode.md): :class:`BatchChatModel` stands in for an
``ApiModel`` in any generation run built on :func:`~thai_eval_utils.core.runloop.run_items` (ThaiCLI answers, dialect
generations, declared generation tasks and the suites built on them), and :meth:`BatchChatModel.run` repeats that run
in rounds: each pass answers from the replies collected so far, the calls without one become the next batch.

A pass is the benchmark's own function, unchanged: its run loop tells the model which items a call is for
(``runloop.current_call()``: the run's store and the items' keys), so each request's ``custom_id`` is
``<config id>/<store key>#a1t<try>`` (the run folder, the item's key, the answer's one attempt, and how many times its
request came back unusable), and the batch files live in the run's own folder
(:class:`~thai_eval_utils.core.batch_rounds.BatchRounds`: the judge's rounds, split into parts at the API's limits).
A reply becomes the text a live call returns (cut at the stop strings, as ``ApiModel.chat`` cuts it), so the records,
scores and summary are the live run's. An item without a reply raises :class:`BatchPending`, and one whose requests
kept failing :class:`BatchRequestFailed`: both are :class:`~thai_eval_utils.backend.api_replies.ApiError`, which every
generation run already tolerates as a failed request, so the item stays ungenerated (never scored) with the reason,
and the run goes on. Imports ``core`` and ``backend`` only.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from thai_eval_utils.backend.api_replies import ApiError
from thai_eval_utils.backend.batch_api import OpenAIBatchTransport
from thai_eval_utils.backend.openai_client import ApiModel
from thai_eval_utils.backend.stops import cut_at_stop
from thai_eval_utils.core.batch_files import chat_body, custom_id, input_line, read_output_lines, reply_of
from thai_eval_utils.core.batch_rounds import MAX_EXPIRED, BatchMode, BatchReport, BatchRounds, FailedTries
from thai_eval_utils.core.protocols import ChatModel, Identity, Messages
from thai_eval_utils.core.provenance import scrub
from thai_eval_utils.core.run_files import dumps_standard, write_text_atomic
from thai_eval_utils.core.runloop import current_call
from thai_eval_utils.core.store import RunStore

T = TypeVar("T")
#: An answer has one attempt (any text is an answer); a request that came back unusable is another try of it.
ANSWER_ATTEMPT = 1


class BatchPending(ApiError):
    """The item's request is in a batch that has not come back yet, or goes in the next one."""


class BatchRequestFailed(ApiError):
    """The item's requests kept failing (errors, malformed bodies, expiries): left unanswered, never scored."""


@dataclass
class _RunFolder:
    """One run folder in one pass: its rounds, the replies collected, the batch still running, the new requests."""

    rounds: BatchRounds
    prefix: str
    replies: dict[str, dict[str, Any]]
    running: str | None
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: ApiError | None = None


class BatchChatModel:
    """A chat model whose replies come from batches (the OpenAI Batch API, or offline files): give it to a generation
    run through :meth:`run`.

    Args:
        model: the model the batches are for (its name and identity name the run, so batch and live runs of the same
            settings share a run folder); an ``ApiModel`` when submitting.
        mode: the batch mode (:func:`batch_mode`): the transport, offline files, how long to wait, the limits.
    """

    #: Items per call of the run loops that size their batches by ``concurrency``: one, so an item whose reply has
    #: not come back leaves only itself ungenerated.
    concurrency = 1

    def __init__(self, model: ChatModel, mode: BatchMode) -> None:
        self.model, self.mode = model, mode
        self.name = model.name
        self.report = BatchReport()
        self._folders: dict[Path, _RunFolder] = {}
        self._read_in: set[Path] = set()
        self._deadline = time.monotonic()

    def __repr__(self) -> str:
        return f"BatchChatModel({self.model!r})"

    @property
    def identity(self) -> Identity:
        """The model's identity (the run's config id is the live run's)."""
        return self.model.identity

    # -- the rounds -------------------------------------------------------------------------------------------------
    def run(self, fn: Callable[[BatchChatModel], T]) -> T:
        """``fn(self)`` (a generation run: ``lambda m: generate_answers(m, items, ...)``) in rounds: after a pass,
        its new requests are submitted (or written to ``mode.file_out``), and the next pass polls them (until
        ``mode.wait_s``), collects and answers from them. Returns the last pass's result (its items still waiting
        for a batch: ungenerated, with the batch's id)."""
        self._deadline = time.monotonic() + max(0.0, float(self.mode.wait_s))
        result: T | None = None
        shown: list[warnings.WarningMessage] = []  # only the last pass's warnings are shown
        for _ in range(self.mode.max_request_failures + MAX_EXPIRED + 2):
            self._folders = {}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = fn(self)
            shown = list(caught or ())
            pending = [f for f in self._folders.values() if f.requests]
            if not pending:
                break
            if self.mode.file_out is not None:
                self._write_file_out(list(self._folders.values()))
                break
            if self.mode.transport is None:
                break
            for f in pending:
                f.rounds.submit(f.requests)
        for w in shown:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return result  # type: ignore[return-value]

    def _folder(self, store: RunStore) -> _RunFolder:
        """The run folder of ``store`` in this pass: offline replies read once, its batches polled and collected."""
        root = Path(store.root)
        if root not in self._folders:
            prefix = f"{store.config_id}/"
            rounds = BatchRounds(root, self.mode, self.report, self._deadline, prefix=prefix)
            if self.mode.file_in is not None and root not in self._read_in:
                rounds.read_file_in()
                self._read_in.add(root)
            running, error = None, None
            try:
                running = rounds.sync() if self.mode.transport is not None else None
            except ApiError as exc:  # the batch API failed: every item of the run says why (asked once a pass)
                error = exc
            self._folders[root] = _RunFolder(rounds, prefix, rounds.folder.replies(), running, error=error)
        return self._folders[root]

    def _write_file_out(self, folders: list[_RunFolder]) -> None:
        """Write the requests of this pass's runs to ``mode.file_out``, keeping the lines of other runs (another
        notebook of the same command) and replacing these runs' older lines."""
        path = Path(self.mode.file_out)  # type: ignore[arg-type]
        ours = tuple(f.prefix for f in folders)
        kept = []
        if path.exists():
            kept = [
                ln
                for ln in read_output_lines(path.read_text(encoding="utf-8"), str(path))
                if not ln["custom_id"].startswith(ours)
            ]
        lines = [*kept, *(input_line(cid, body) for f in folders for cid, body in f.requests.items())]
        write_text_atomic(path, scrub("".join(dumps_standard(ln) + "\n" for ln in lines)))
        for f in folders:
            if f.requests:
                self.report.written += len(f.requests)
                f.rounds.say(
                    f"batch file {path}: {len(f.requests)} requests written; answer them (e.g. `vllm "
                    "run-batch`) and run again with --batch-file-in"
                )

    # -- the calls ----------------------------------------------------------------------------------------------------
    def chat(
        self,
        messages_list: list[Messages],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> list[str]:
        """The collected reply of each conversation (one per item of the run loop's call), cut before the first stop
        string; raises :class:`BatchPending` / :class:`BatchRequestFailed` (after recording every conversation's
        request) when one has none."""
        call = current_call()
        if call is None or len(call.keys) != len(messages_list):
            raise ValueError(
                "batch mode answers inside a run loop's call, one conversation per item "
                "(core.runloop.run_items); use BatchChatModel.run(lambda m: <the generation run>(m, ...))"
            )
        folder = self._folder(call.store)
        texts: list[str] = []
        problem: ApiError | None = None
        for key, messages in zip(call.keys, messages_list):
            body = self._body(
                messages, max_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed, stop=stop
            )
            try:
                texts.append(self._answer(folder, key, body, stop))
            except ApiError as exc:
                problem = problem or exc
        if problem is not None:
            raise problem
        return texts

    def generate(
        self,
        prompts: list[str],
        *,
        max_new_tokens: int = 256,
        stop: Sequence[str] | str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[str]:
        """Each prompt as one user message (as ``ApiModel.generate``: a chat endpoint has no raw completion)."""
        return self.chat(
            [[{"role": "user", "content": p}] for p in prompts],
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            stop=stop,
        )

    def _body(self, messages: Messages, **kw: Any) -> dict[str, Any]:
        t = self.mode.transport
        if t is not None:
            return t.body(messages, **kw)
        return chat_body(str(getattr(self.model, "model_id", self.model.name)), messages, **kw)

    def _answer(self, f: _RunFolder, key: str, body: dict[str, Any], stop: Sequence[str] | str | None) -> str:
        """The text of the item's reply: its tries replayed (a failed or unanswered try is the next try)."""
        if f.error is not None:
            raise f.error
        tries, try_ = FailedTries(self.mode.max_request_failures), 0
        while True:
            cid = custom_id(f.prefix + key, ANSWER_ATTEMPT, try_)
            entry = f.replies.get(cid)
            if entry is None:
                if f.running is not None:
                    raise BatchPending(f"waiting for batch {f.running}")
                f.requests[cid] = body
                raise BatchPending(f"waiting for a batch reply ({cid})")
            try:
                reply = reply_of(entry)
            except ValueError as exc:
                if (reason := tries.give_up(entry, exc)) is not None:
                    raise BatchRequestFailed(reason) from None
                try_ += 1
                continue
            observe = getattr(self.mode.transport, "observe", None)
            if observe is not None:
                observe(reply)
            return cut_at_stop(reply.text, stop)


def batch_mode(
    model: ChatModel,
    *,
    submit: bool = False,
    file_out: str | Path | None = None,
    file_in: str | Path | None = None,
    wait_s: float = 0.0,
    poll_s: float = 10.0,
    progress: bool = True,
    **options: Any,
) -> BatchMode | None:
    """The batch mode of a model's answers: submit to its endpoint (an ``ApiModel``: the OpenAI Batch API, waiting at
    most ``wait_s`` seconds, polling every ``poll_s``), or write the requests still needed to ``file_out`` (no
    network), after reading the replies of ``file_in``. None when no option asks for batches, or (said so) when the
    model is not an API model: its answers are made live. ``options``: more :class:`BatchMode` fields."""
    if not (submit or file_out or file_in):
        return None
    if not isinstance(model, ApiModel):
        print(f"{model.name}: not an API model, so its answers are made live (batch mode is for openai: models)")
        return None
    return batch_settings(
        model,
        submit=submit,
        file_out=file_out,
        file_in=file_in,
        wait_s=wait_s,
        poll_s=poll_s,
        progress=progress,
        **options,
    )


def batch_settings(
    model: ChatModel,
    *,
    submit: bool,
    file_out: str | Path | None,
    file_in: str | Path | None,
    wait_s: float,
    poll_s: float,
    progress: bool,
    **options: Any,
) -> BatchMode:
    """The :class:`BatchMode` of these settings: through ``model``'s endpoint (the OpenAI Batch API) when submitting and
    not writing a file (ValueError unless ``model`` is an API model), else offline files only (any model).
    ``options``: more :class:`BatchMode` fields."""
    transport = None
    if submit and file_out is None:
        if not isinstance(model, ApiModel):
            raise ValueError(
                f"batch submission needs an API model (openai:<model-id>), not {type(model).__name__}; "
                "use file_out / file_in for offline batches"
            )
        transport = OpenAIBatchTransport(model)
    return BatchMode(
        transport=transport,
        file_out=file_out,
        file_in=file_in,
        wait_s=wait_s,
        poll_s=poll_s,
        progress=progress,
        **options,
    )


def run_answers(
    model: ChatModel,
    fn: Callable[[Any], T],
    *,
    submit: bool = False,
    file_out: str | Path | None = None,
    file_in: str | Path | None = None,
    wait_s: float = 0.0,
    **options: Any,
) -> T:
    """``fn(model)``: live, or in batch rounds (:class:`BatchChatModel`) when a batch option is set and ``model`` is an
    API model. The notebooks' one line: ``run_answers(lm, lambda m: generate_answers(m, items, ...), submit=...)``."""
    mode = batch_mode(model, submit=submit, file_out=file_out, file_in=file_in, wait_s=wait_s, **options)
    return fn(model) if mode is None else BatchChatModel(model, mode).run(fn)
