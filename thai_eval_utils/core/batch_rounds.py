"""Batch mode's rounds in one run folder (docs/batch_mode.md): submit a round's requests as one or more
OpenAI Batch API jobs (split at the API's per-batch limits), poll them with a progress bar, collect what came back,
read an offline output file, cancel. Shared by the judge (:mod:`thai_eval_utils.judging.batch`) and by API models'
answers (:mod:`thai_eval_utils.backend.batch_model`); each replays its own calls from the collected replies.

Every step's result is in ``batch.json`` (atomically) before the next step starts, so a run killed at any point and
run again finishes what the killed one began: a part with no file id is uploaded again from the same
``batch_input.jsonl``, a part with a file id but no batch id is looked up by its file (``transport.find``) and created
only when the API has none, a submitted part is polled, a finished part is collected again (a reply already in
``batch_replies.jsonl`` is not added twice). One batch per part and round in total. Imports ``core`` only; the
transport (the OpenAI client) is :mod:`thai_eval_utils.backend.batch_api`'s.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from thai_eval_utils.core.batch_files import (
    MAX_BYTES,
    MAX_REQUESTS,
    BatchFolder,
    not_run,
    part_bytes,
    read_output_lines,
    split_lines,
    unanswered,
    write_input_file,
)
from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import scrub

#: A batch status after which nothing more comes back.
TERMINAL = ("completed", "expired", "cancelled", "failed")
#: Batches a request not answered by an expired or cancelled batch is sent in, at most.
MAX_EXPIRED = 2


@dataclass
class FailedTries:
    """One request's tries whose reply could not be read, as both batch replays (the judge's and answers') count
    them: a try an expired or cancelled batch never ran (missing from its files, or a ``batch_expired`` /
    ``batch_cancelled`` line of its error file) is sent again, in at most :data:`MAX_EXPIRED` batches in all; any
    other failure up to ``max_failures`` tries."""

    max_failures: int
    failures: int = 0
    expired: int = 0

    def give_up(self, entry: Mapping[str, Any], exc: Exception) -> str | None:
        """Count the failed try ``entry``; why the request is given up, or None to try again."""
        if unanswered(entry):
            self.expired += 1
            return f"batch request not answered twice: {exc}" if self.expired >= MAX_EXPIRED else None
        self.failures += 1
        return f"batch request failed {self.failures} times: {exc}" if self.failures >= self.max_failures else None


class BatchTransport(Protocol):
    """What batch mode needs of an API (``backend.batch_api.OpenAIBatchTransport``; tests may fake it)."""

    def body(
        self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float, top_p: float, seed: int | None
    ) -> dict[str, Any]: ...

    def upload(self, data: bytes) -> str: ...

    def create(self, input_file_id: str, metadata: Mapping[str, str]) -> str: ...

    def find(self, input_file_id: str) -> str | None: ...

    def retrieve(self, batch_id: str) -> dict[str, Any]: ...

    def content(self, file_id: str) -> str: ...


@dataclass(frozen=True)
class BatchMode:
    """How a run uses batches.

    Args:
        transport: the API (None: offline files only).
        file_out: write the requests still needed to this JSONL file (the Batch API's input format) instead of
            submitting them.
        file_in: read replies from this batch OUTPUT file first (``vllm run-batch``'s, or one downloaded).
        wait_s: how long to poll a submitted batch before returning (0: look once; the next run collects).
        poll_s: seconds between polls.
        max_request_failures: tries of one call whose request failed (per-request error, malformed body).
        max_requests, max_bytes: one batch's limits (the API's: 50,000 requests, 200 MB); a round with more is
            split into several batches, submitted, polled and collected together.
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
    max_requests: int = MAX_REQUESTS
    max_bytes: int = MAX_BYTES
    progress: bool = True
    echo: Callable[[str], None] = print
    hooks: Mapping[str, Callable[[dict[str, Any]], None]] = field(default_factory=dict)


@dataclass
class BatchReport:
    """What batch mode did in this run: the batches (ids), the one(s) still running, the messages printed."""

    batch_ids: list[str] = field(default_factory=list)
    running: str | None = None
    written: int = 0
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_ids": self.batch_ids,
            "running": self.running,
            "requests_written": self.written,
            "messages": self.messages,
        }


def read_state(folder: BatchFolder) -> dict[str, Any]:
    """``batch.json``, in today's layout: a state written before batches were split into parts (one batch:
    ``input_file_id`` / ``batch_id`` at the top) becomes one part spanning the whole input."""
    state = folder.state()
    if "parts" not in state and state.get("state") in ("uploading", "uploaded", "submitted"):
        part = {
            "first": 0,
            "count": int(state.get("requests") or 0),
            "input_file_id": state.get("input_file_id"),
            "batch_id": state.get("batch_id"),
            "collected": False,
        }
        state = {**state, "state": "submitted" if part["batch_id"] else "uploading", "parts": [part]}
    return state


def running_ids(state: Mapping[str, Any]) -> list[str]:
    """The batch ids of a submitted round not collected yet."""
    return [p["batch_id"] for p in state.get("parts") or [] if p.get("batch_id") and not p.get("collected")]


class BatchRounds:
    """One run folder's batches: :meth:`sync` (finish a killed submission, poll, collect), :meth:`submit`,
    :meth:`read_file_in`, :meth:`cancel`. ``prefix``: the run's custom_id prefix (an offline file may hold other
    runs' lines: only lines with it are read)."""

    def __init__(self, root: Path, mode: BatchMode, report: BatchReport, deadline: float, prefix: str = "") -> None:
        self.folder = BatchFolder(root)
        self.mode, self.report, self.deadline, self.prefix = mode, report, deadline, prefix

    def say(self, text: str) -> None:
        """A message: printed, kept in the report, logged in the run folder (``batch_log.jsonl``)."""
        self.report.messages.append(text)
        self.folder.log(text)
        self.mode.echo(text)

    def hook(self, name: str, state: dict[str, Any]) -> None:
        fn = self.mode.hooks.get(name)
        if fn is not None:
            fn(state)

    @property
    def transport(self) -> BatchTransport:
        assert self.mode.transport is not None, "batch submission needs a transport"
        return self.mode.transport

    # -- offline files ----------------------------------------------------------------------------------------------
    def read_file_in(self) -> None:
        """Add the run's lines of ``mode.file_in`` (a batch output file) to the collected replies."""
        path = Path(self.mode.file_in)  # type: ignore[arg-type]
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ThaiEvalDataError(f"cannot read the batch output file: {exc.strerror}", path=str(path)) from None
        lines = [ln for ln in read_output_lines(text, str(path)) if ln["custom_id"].startswith(self.prefix)]
        have = self.folder.replies()
        new = [
            {"custom_id": ln["custom_id"], "batch_id": f"file:{path.name}", "line": ln}
            for ln in lines
            if ln["custom_id"] not in have
        ]
        self.folder.add_replies(new)  # a line of a request never run is sent once more (FailedTries)
        unrun = sum(1 for ln in lines if not_run(ln))
        extra = f"; {unrun} requests its batch never ran are sent once more" if unrun else ""
        self.say(f"batch file {path}: {len(lines) - unrun} replies read, {len(new)} new{extra}")

    # -- submit -----------------------------------------------------------------------------------------------------
    def submit(self, requests: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
        """Write the input and the state, then upload and create each part (each step's result in ``batch.json``
        before the next); with ``requests`` None, finish the submission a killed run began."""
        state = read_state(self.folder)
        if requests is not None:
            data = write_input_file(self.folder.input_path, requests)
            parts = [
                {"first": f, "count": c, "input_file_id": None, "batch_id": None, "collected": False}
                for f, c in split_lines(data, self.mode.max_requests, self.mode.max_bytes)
            ]
            state = {
                "state": "uploading",
                "requests": len(requests),
                "input_sha256": hashlib.sha256(data).hexdigest(),
                "parts": parts,
                "endpoint": getattr(self.mode.transport, "endpoint", None),
                "history": state.get("history", []),
            }
            self.folder.write_state(state)
        data = self.folder.input_path.read_bytes()
        parts = state["parts"]
        for k, part in enumerate(parts):
            of = f" (part {k + 1} of {len(parts)})" if len(parts) > 1 else ""
            if part.get("batch_id"):
                continue
            chunk = part_bytes(data, part["first"], part["count"])
            if not part.get("input_file_id"):
                part["input_file_id"] = self.transport.upload(chunk)
                self.folder.write_state(state)
                self.hook("after_upload", state)
            batch_id = self.transport.find(part["input_file_id"])
            if batch_id is None:
                meta = {"thai_eval_input_sha256": hashlib.sha256(chunk).hexdigest()}
                batch_id = self.transport.create(part["input_file_id"], meta)
                self.hook("created", {**state, "batch_id": batch_id})  # a kill here: the rerun finds it by its file
            part["batch_id"] = batch_id
            if all(p.get("batch_id") for p in parts):
                state["state"] = "submitted"
            self.folder.write_state(state)
            self.hook("after_create", state)
            self.report.batch_ids.append(batch_id)
            self.say(f"batch {batch_id}: {part['count']} requests submitted{of}")
        return state

    # -- poll and collect -------------------------------------------------------------------------------------------
    def sync(self) -> str | None:
        """Bring the folder's round up to date: finish a killed submission, poll the submitted batches (until the
        deadline), collect each as it ends. Returns the ids still running (``"batch_1, batch_2"``), else None."""
        state = read_state(self.folder)
        if state.get("state") in ("uploading", "uploaded"):
            state = self.submit(None)
        if state.get("state") != "submitted":
            return None
        for bid in running_ids(state):
            if bid not in self.report.batch_ids:
                self.report.batch_ids.append(bid)
        return self.poll(state)

    def poll(self, state: dict[str, Any]) -> str | None:
        """Poll every part not collected, collecting each as it ends; None when all are collected, else (at the
        deadline, having said so) the ids still running."""
        bar = None
        try:
            while True:
                infos = {
                    p["batch_id"]: self.transport.retrieve(p["batch_id"])
                    for p in state["parts"]
                    if not p.get("collected")
                }
                done = total = 0
                for part in state["parts"]:
                    info = infos.get(part["batch_id"])
                    counts = (info or {}).get("request_counts") or {}
                    total += int(counts.get("total") or part["count"]) if info else part["count"]
                    done += (
                        int(counts.get("completed") or 0) + int(counts.get("failed") or 0) if info else part["count"]
                    )
                if self.mode.progress:
                    if bar is None:
                        ids = [p["batch_id"] for p in state["parts"]]
                        label = f"batch {ids[0]}" if len(ids) == 1 else f"batches {ids[0]}..{ids[-1]}"
                        bar = tqdm(total=total, desc=label, unit="request")
                    bar.n = done
                    bar.refresh()
                self.hook("poll", {**state, "status": [i.get("status") for i in infos.values()]})
                for part in state["parts"]:
                    info = infos.get(part["batch_id"])
                    if info is not None and info.get("status") in TERMINAL:
                        self.collect(state, part, info)
                running = running_ids(state)
                if not running:
                    return None
                if time.monotonic() >= self.deadline:
                    ids = ", ".join(running)
                    self.report.running = ids
                    status = sorted({str(infos[b].get("status")) for b in running})
                    self.say(
                        f"batch {ids}: {done}/{total} done ({', '.join(status)}); run the same command again to collect"
                    )
                    return ids
                time.sleep(max(0.0, min(float(self.mode.poll_s), self.deadline - time.monotonic())))
        finally:
            if bar is not None:
                bar.close()

    def download(self, info: Mapping[str, Any], batch_id: str) -> list[dict[str, Any]]:
        """The lines of a finished batch's output and error files."""
        lines: list[dict[str, Any]] = []
        for key in ("output_file_id", "error_file_id"):
            if info.get(key):
                lines += read_output_lines(self.transport.content(info[key]), f"{key} {info[key]} of batch {batch_id}")
        return lines

    def collect(self, state: dict[str, Any], part: dict[str, Any], info: Mapping[str, Any]) -> None:
        """Store what a finished part returned (replies first, then ``batch.json``); requests it did not answer
        are marked (an expired or cancelled batch: sent once more; a failed batch: a failed try). A request its
        error file lists as never run (``batch_expired`` / ``batch_cancelled``) was not answered either: it is
        marked as one missing from the files is, and not counted among the requests that came back."""
        batch_id, status = part["batch_id"], str(info.get("status"))
        lines = self.download(info, batch_id)
        unrun = {ln["custom_id"]: str(not_run(ln)) for ln in lines if not_run(ln)}
        lines = [ln for ln in lines if not_run(ln) is None]
        raw = self.folder.input_path.read_bytes()
        sent = [
            json.loads(x)["custom_id"] for x in part_bytes(raw, part["first"], part["count"]).splitlines() if x.strip()
        ]
        have, sent_set = self.folder.replies(), set(sent)
        back = {ln["custom_id"] for ln in lines}
        entries = [
            {"custom_id": ln["custom_id"], "batch_id": batch_id, "line": ln}
            for ln in lines
            if ln["custom_id"] in sent_set and ln["custom_id"] not in have
        ]
        absent = [cid for cid in sent if cid not in back and cid not in have]
        # a failed batch's requests absent from its files failed; the others were not run: sent once more
        failed = {cid for cid in absent if status == "failed" and cid not in unrun}
        missing = [cid for cid in absent if cid not in failed]
        if failed:
            errs = info.get("errors") or {}
            why = scrub(str(errs)[:300]) if errs else "batch failed"
            entries += [
                {"custom_id": cid, "batch_id": batch_id, "line": {"custom_id": cid, "error": {"message": why}}}
                for cid in absent
                if cid in failed
            ]
        entries += [
            {"custom_id": cid, "batch_id": batch_id, "expired": True, "status": unrun.get(cid, status)}
            for cid in missing
        ]
        self.folder.add_replies(entries)
        self.hook("collected", state)  # a kill here: the next run downloads again and adds no line twice
        part["collected"] = True
        state["history"] = [
            *state.get("history", []),
            {
                "batch_id": batch_id,
                "status": status,
                "requests": len(sent),
                "returned": len(back),
                "input_file_id": part.get("input_file_id"),
            },
        ]
        if not running_ids(state):
            state["state"] = "collected"
        self.folder.write_state(state)
        if missing:
            self.say(
                f"batch {batch_id} {status}: {len(sent) - len(missing)} of {len(sent)} requests came back; the "
                f"other {len(missing)} are sent once more (a second time unanswered: never scored)"
            )
        else:
            self.say(f"batch {batch_id} {status}: {len(sent)} replies collected")

    # -- cancel -------------------------------------------------------------------------------------------------------
    def cancel(self) -> list[str]:
        """Cancel the folder's running batches (``transport.cancel``), then poll until the deadline, collecting what
        came back (the requests a cancelled batch did not answer are sent once more by the next batch run). The ids
        cancelled."""
        state = read_state(self.folder)
        if state.get("state") in ("uploading", "uploaded"):
            state = self.submit(None)  # a part half-submitted: its batch may exist; find it to cancel it
        ids = running_ids(state) if state.get("state") == "submitted" else []
        for bid in ids:
            self.transport.cancel(bid)  # type: ignore[attr-defined]
            self.say(f"batch {bid}: cancel requested")
        if ids:
            self.poll(state)
        return ids
