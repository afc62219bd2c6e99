"""A scripted OpenAI Batch API for tests: :class:`FakeOpenAIServer` (chat completions, models) plus the
Files and Batches endpoints, on 127.0.0.1 only, bounded (a test's few batches, kept in memory).

- ``POST /v1/files`` (multipart, ``purpose=batch``), ``GET /v1/files/{id}/content``;
- ``POST /v1/batches``, ``GET /v1/batches`` (list), ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.

A batch is ``in_progress`` for ``polls_to_finish`` retrieves, then every input line is answered by the same
``responder`` as a live chat request (:class:`Reply` -> an output line with the chat completion, :class:`Fail` -> an
error-file line with its status, :class:`Raw` -> an output line whose body is the raw payload: malformed). Setting
``expire_next = k`` makes the next batch to finish expire after answering its first ``k`` lines; a cancelled batch
answers none. As the real API does, the requests an expired or cancelled batch never ran are lines of its error file
(``"response": null``, ``"error": {"code": "batch_expired" | "batch_cancelled", "message": ...}``). The server counts
batches created, keeps every custom_id it answered (``answered``) and the Authorization headers it saw.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any
from urllib.parse import urlparse

from fake_openai_server import Fail, FakeOpenAIServer, Raw, Reply, Slow, _Handler

#: The error of a request its batch never ran (the OpenAI Batch API's error-file line for it): by batch status.
NOT_RUN = {
    "expired": {
        "code": "batch_expired",
        "message": "This request could not be executed before the completion window expired.",
    },
    "cancelled": {"code": "batch_cancelled", "message": "The batch was cancelled before this request executed."},
}


class FakeBatchServer(FakeOpenAIServer):
    """``with FakeBatchServer(responder) as srv: ... srv.batches, srv.answered ...``."""

    def __init__(self, *args: Any, polls_to_finish: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._httpd.RequestHandlerClass = _BatchHandler
        self.polls_to_finish = polls_to_finish
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.polls: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.expire_next: int | None = None
        self.batch_lock = threading.Lock()

    def add_file(self, data: bytes) -> str:
        fid = f"file-{len(self.files) + 1}"
        self.files[fid] = data
        return fid

    def sent(self) -> Counter[str]:
        """How many batches each request was sent in: its ``custom_id`` without the try (``...#a1t0`` and
        ``...#a1t1`` are one request sent twice)."""
        with self.batch_lock:
            ids = [
                json.loads(x)["custom_id"]
                for b in self.batches.values()
                for x in self.files[b["input_file_id"]].decode().splitlines()
                if x.strip()
            ]
        return Counter(cid.rsplit("t", 1)[0] for cid in ids)

    def _line(self, req: dict[str, Any], auth: str | None) -> tuple[str, dict[str, Any]]:
        """One input line answered: ("output" | "error", the output line)."""
        self.answered[req["custom_id"]] += 1
        action = self._next(req["body"], auth)
        return self.answer_line(req, action, self.served_model, f"req-{sum(self.answered.values())}", auth)

    @staticmethod
    def answer_line(
        req: dict[str, Any], action: Any, served_model: str, rid: str, auth: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        """The output line of ``req`` answered by ``action`` (also a stand-in for ``vllm run-batch``)."""
        cid = req["custom_id"]
        if isinstance(action, Slow):
            action = action.then
        if isinstance(action, Fail):
            message = action.message.replace("{authorization}", auth or "")  # a careless server echoes the key
            body = {"error": {"message": message, "type": "server_error"}}
            return "error", {
                "id": rid,
                "custom_id": cid,
                "response": {"status_code": action.status, "body": body},
                "error": None,
            }
        if isinstance(action, Raw):
            try:
                body = json.loads(action.body)
            except ValueError:
                body = action.body.decode("utf-8", "replace")
            return "output", {
                "id": rid,
                "custom_id": cid,
                "response": {"status_code": action.status, "body": body},
                "error": None,
            }
        assert isinstance(action, Reply)
        body = {
            "id": f"chatcmpl-{rid}",
            "object": "chat.completion",
            "created": 0,
            "model": action.model or served_model,
            "system_fingerprint": action.fingerprint,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": action.text}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": action.prompt_tokens,
                "completion_tokens": action.completion_tokens,
                "total_tokens": action.prompt_tokens + action.completion_tokens,
            },
        }
        return "output", {"id": rid, "custom_id": cid, "response": {"status_code": 200, "body": body}, "error": None}

    def _process(self, batch: dict[str, Any], auth: str | None, status: str = "completed") -> None:
        """Answer the batch's input lines and end it with ``status``: ``completed``, ``expired`` (after the first
        ``expire_next`` lines) or ``cancelled`` (none); each line not run is an error-file line saying so."""
        lines = [json.loads(x) for x in self.files[batch["input_file_id"]].decode().splitlines() if x.strip()]
        limit = 0 if status == "cancelled" else self.expire_next
        if status != "cancelled":
            self.expire_next = None
        status = "expired" if status == "completed" and limit is not None else status
        out: dict[str, list[str]] = {"output": [], "error": []}
        for n, req in enumerate(lines):
            if limit is not None and n >= limit:
                line = {
                    "id": f"batch_req_{batch['id']}_{n}",
                    "custom_id": req["custom_id"],
                    "response": None,
                    "error": dict(NOT_RUN[status]),
                }
                out["error"].append(json.dumps(line, ensure_ascii=False))
                continue
            kind, line = self._line(req, auth)
            out[kind].append(json.dumps(line, ensure_ascii=False))
        batch["status"] = status
        for kind in ("output", "error"):
            if out[kind]:
                batch[f"{kind}_file_id"] = self.add_file(("\n".join(out[kind]) + "\n").encode())
        batch["request_counts"] = {"total": len(lines), "completed": len(out["output"]), "failed": len(out["error"])}

    def retrieve(self, bid: str, auth: str | None) -> dict[str, Any] | None:
        with self.batch_lock:
            batch = self.batches.get(bid)
            if batch is None:
                return None
            self.polls[bid] += 1
            if batch["status"] == "in_progress" and self.polls[bid] >= self.polls_to_finish:
                self._process(batch, auth)
            elif batch["status"] == "cancelling":
                self._process(batch, auth, "cancelled")
            return batch


class _BatchHandler(_Handler):
    def _auth(self) -> str | None:
        auth = self.headers.get("Authorization")
        if auth:
            with self.server.fake._lock:
                self.server.fake.auth_headers.add(auth)
        return auth

    def do_GET(self) -> None:
        fake: FakeBatchServer = self.server.fake
        path = urlparse(self.path).path.rstrip("/")
        auth = self._auth()
        parts = path.split("/")
        if path == "/v1/batches":
            with fake.batch_lock:
                data = list(fake.batches.values())[::-1]
            self._send(200, {"object": "list", "data": data, "has_more": False})
        elif len(parts) == 4 and parts[2] == "batches":
            batch = fake.retrieve(parts[3], auth)
            self._send(200, batch) if batch else self._send(404, {"error": {"message": "no such batch"}})
        elif len(parts) == 5 and parts[2] == "files" and parts[4] == "content":
            data = fake.files.get(parts[3])
            if data is None:
                self._send(404, {"error": {"message": "no such file"}})
            else:
                self._send_raw(200, data, "application/octet-stream")
        else:
            super().do_GET()

    def do_POST(self) -> None:
        fake: FakeBatchServer = self.server.fake
        path = urlparse(self.path).path.rstrip("/")
        if path == "/v1/chat/completions":
            return super().do_POST()
        self._auth()
        length = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(length)
        parts = path.split("/")
        if path == "/v1/files":
            content = _multipart_file(self.headers.get("Content-Type", ""), data)
            fid = fake.add_file(content)
            self._send(
                200,
                {
                    "id": fid,
                    "object": "file",
                    "bytes": len(content),
                    "created_at": 0,
                    "filename": "batch_input.jsonl",
                    "purpose": "batch",
                    "status": "processed",
                },
            )
        elif path == "/v1/batches":
            req = json.loads(data)
            with fake.batch_lock:
                bid = f"batch_{len(fake.batches) + 1}"
                fake.batches[bid] = {
                    "id": bid,
                    "object": "batch",
                    "endpoint": req["endpoint"],
                    "errors": None,
                    "input_file_id": req["input_file_id"],
                    "completion_window": req["completion_window"],
                    "status": "in_progress",
                    "output_file_id": None,
                    "error_file_id": None,
                    "created_at": 0,
                    "metadata": req.get("metadata"),
                    "request_counts": {"total": 0, "completed": 0, "failed": 0},
                }
                self._send(200, fake.batches[bid])
        elif len(parts) == 5 and parts[2] == "batches" and parts[4] == "cancel":
            with fake.batch_lock:
                batch = fake.batches[parts[3]]
                if batch["status"] == "in_progress":
                    batch["status"] = "cancelling"
                self._send(200, batch)
        else:
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})


def _multipart_file(content_type: str, data: bytes) -> bytes:
    """The ``file`` part of a multipart/form-data body."""
    boundary = content_type.split("boundary=", 1)[1].strip('"').encode()
    for part in data.split(b"--" + boundary):
        head, _, body = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            return body[:-2] if body.endswith(b"\r\n") else body
    raise ValueError("no file part")
