"""A batch run's files (:mod:`thai_eval_utils.core.batch_rounds` submits, polls and collects them for the
judge and for API models' answers alike): the Batch API's input lines and ``custom_id`` of each call, the reply in an
output line (the same reply a live call gives, or a ValueError), the parts a round's input is split into (the API's
per-batch limits), and the run folder's ``batch.json``, ``batch_input.jsonl``, ``batch_replies.jsonl`` and
``batch_log.jsonl``. Imports ``core`` only."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalDataError
from thai_eval_utils.core.provenance import now_utc, scrub
from thai_eval_utils.core.run_files import (
    append_line,
    dumps_standard,
    read_json_file,
    write_json_atomic,
    write_text_atomic,
)
from thai_eval_utils.core.protocols import Reply, stop_strings

#: The Batch API's endpoint for chat requests (the ``url`` of each input line).
CHAT_URL = "/v1/chat/completions"
STATE_FILE = "batch.json"
INPUT_FILE = "batch_input.jsonl"
REPLIES_FILE = "batch_replies.jsonl"
LOG_FILE = "batch_log.jsonl"
#: The OpenAI Batch API's limits of one batch (https://platform.openai.com/docs/guides/batch, "Rate limits"): at most
#: 50,000 requests and an input file of at most 200 MB. A round with more is split into several batches.
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
#: The error codes of a request its batch never ran, as the Batch API writes it in the batch's error file
#: (``{"custom_id", "response": null, "error": {"code", "message"}}``; the API reference's
#: ``BatchRequestOutput.error.code``): the batch expired, or was cancelled, before the request was executed. Such a
#: line is an unanswered request (sent once more), not a reply; the value is the batch status it stands for.
NOT_RUN_CODES = {"batch_expired": "expired", "batch_cancelled": "cancelled"}


def custom_id(store_key: str, attempt: int, try_: int) -> str:
    """The ``custom_id`` of attempt ``attempt`` (1-based), try ``try_`` (0-based) of the judgement stored under
    ``store_key``."""
    return f"{store_key}#a{attempt}t{try_}"


def chat_body(
    model: str,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    stop: Sequence[str] | str | None = None,
) -> dict[str, Any]:
    """A chat request's body as the live client sends it (seed and stop only when set)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "top_p": top_p,
    }
    if seed is not None:
        body["seed"] = seed
    if stops := stop_strings(stop):  # one string is one stop string, never its characters
        body["stop"] = list(stops)
    return body


def input_line(cid: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One line of a Batch API input file."""
    return {"custom_id": cid, "method": "POST", "url": CHAT_URL, "body": dict(body)}


def not_run(line: Mapping[str, Any]) -> str | None:
    """``"expired"`` or ``"cancelled"`` when an output or error line says its request was never run
    (:data:`NOT_RUN_CODES`), else None."""
    error = line.get("error")
    code = error.get("code") if isinstance(error, Mapping) else None
    return NOT_RUN_CODES.get(code) if isinstance(code, str) else None


def unanswered(entry: Mapping[str, Any]) -> bool:
    """Whether a collected entry is a request its batch never ran: marked ``expired`` when collected, or a stored
    line saying so (an offline file's line, or one collected before such lines were recognised)."""
    line = entry.get("line")
    return bool(entry.get("expired")) or (isinstance(line, Mapping) and not_run(line) is not None)


def reply_of(entry: Mapping[str, Any]) -> Reply:
    """The reply of a Batch API output line (``{"custom_id", "response": {"status_code", "body"}, "error"}``);
    ValueError (secret-free) when the request failed, was never run, or the body is not a chat completion with
    text."""
    if unanswered(entry):
        line = entry.get("line") if isinstance(entry.get("line"), Mapping) else {}
        status = entry.get("status") or not_run(line) or "expired"
        raise ValueError(f"not answered: batch {entry.get('batch_id')} {status}")
    line = entry.get("line") if isinstance(entry.get("line"), Mapping) else entry
    error = line.get("error")
    response = line.get("response")
    if error:
        msg = error.get("message") if isinstance(error, Mapping) else error
        raise ValueError(scrub(f"request error: {msg}"))
    if not isinstance(response, Mapping):
        raise ValueError("malformed reply: no response")
    status, body = response.get("status_code"), response.get("body")
    if status != 200:
        msg = (
            body.get("error", {}).get("message")
            if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping)
            else ""
        )
        raise ValueError(scrub(f"request error: HTTP {status} {msg}".rstrip()))
    choices = body.get("choices") if isinstance(body, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else None
    message = first.get("message") if first else None
    text = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(text, str):
        raise ValueError("malformed reply: no text")
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    return Reply(
        text=text,
        model=body.get("model"),
        system_fingerprint=body.get("system_fingerprint"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=first.get("finish_reason"),
    )


class BatchFolder:
    """A run folder's batch files (state, input, replies)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.state_path, self.input_path, self.replies_path, self.log_path = (
            self.root / n for n in (STATE_FILE, INPUT_FILE, REPLIES_FILE, LOG_FILE)
        )

    def state(self) -> dict[str, Any]:
        if not self.state_path.exists():
            return {"state": "idle", "history": []}
        return read_json_file(self.state_path, "batch state", f"delete {self.state_path.name} to submit again")

    def write_state(self, state: Mapping[str, Any]) -> None:
        write_json_atomic(self.state_path, dict(state))

    def replies(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        if self.replies_path.exists():
            for n, raw in enumerate(self.replies_path.read_text(encoding="utf-8").splitlines()):
                if raw.strip():
                    try:
                        rec = json.loads(raw)
                    except json.JSONDecodeError:  # a torn last line (killed mid-append): collected again
                        continue
                    if isinstance(rec, dict) and isinstance(rec.get("custom_id"), str):
                        out[rec["custom_id"]] = rec
        return out

    def add_replies(self, entries: Sequence[Mapping[str, Any]]) -> None:
        if entries:
            append_line(self.replies_path, "".join(scrub(dumps_standard(dict(e))) + "\n" for e in entries))

    def log(self, message: str) -> None:
        """Append one message of the run's batch mode (``thai-eval run`` prints those written since it started)."""
        append_line(self.log_path, scrub(dumps_standard({"at": now_utc(), "message": message})) + "\n")

    def messages(self, since: str = "") -> list[str]:
        """The logged messages written at or after ``since`` (an ISO time; a damaged line is skipped)."""
        out = []
        if self.log_path.exists():
            for raw in self.log_path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and str(rec.get("at", "")) >= since and isinstance(rec.get("message"), str):
                    out.append(rec["message"])
        return out


def batch_folders(run_dir: Path) -> list[BatchFolder]:
    """A run folder's batch folders: its own (its answers', a judging run's) and those of its parts that hold batch
    files (``<run>/<part>/<name>/``: a judged metric's judge, :meth:`~thai_eval_utils.core.store.RunStore.part`)."""
    parts = sorted({p.parent for name in (STATE_FILE, LOG_FILE) for p in Path(run_dir).glob(f"*/*/{name}")})
    return [BatchFolder(run_dir), *(BatchFolder(p) for p in parts)]


def read_output_lines(text: str, where: str) -> list[dict[str, Any]]:
    """A batch output (or error) file's lines; ThaiEvalDataError naming the row when one is not a JSON object with a
    ``custom_id``."""
    out = []
    for row, raw in enumerate(text.splitlines()):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            raise ThaiEvalDataError("not a JSON line", path=where, row=row) from None
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            raise ThaiEvalDataError("a batch output line needs a custom_id", path=where, row=row, field="custom_id")
        out.append(line)
    return out


def split_lines(data: bytes, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES) -> list[tuple[int, int]]:
    """The parts of an input file's lines, ``(first line, line count)``, in order: each at most ``max_requests``
    lines and ``max_bytes`` bytes (a single line over ``max_bytes`` is a part of its own: the API refuses it and
    its request fails, as every request of a refused batch does)."""
    parts: list[tuple[int, int]] = []
    first, count, size = 0, 0, 0
    for n, line in enumerate(data.splitlines(keepends=True)):
        if count and (count >= max(1, int(max_requests)) or size + len(line) > max_bytes):
            parts.append((first, count))
            first, count, size = n, 0, 0
        count += 1
        size += len(line)
    if count:
        parts.append((first, count))
    return parts


def part_bytes(data: bytes, first: int, count: int) -> bytes:
    """Lines ``first`` to ``first + count`` of an input file (a part's upload)."""
    return b"".join(data.splitlines(keepends=True)[first : first + count])


def write_input_file(path: Path, requests: Mapping[str, Mapping[str, Any]]) -> bytes:
    """The requests as Batch API input JSONL at ``path`` (atomic, secret-free); the bytes written."""
    text = "".join(dumps_standard(input_line(cid, body)) + "\n" for cid, body in requests.items())
    text = scrub(text)
    write_text_atomic(Path(path), text)
    return text.encode("utf-8")
