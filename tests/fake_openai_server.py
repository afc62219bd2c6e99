"""A scripted OpenAI-compatible server for tests (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, port 0).

Speaks ``POST /v1/chat/completions`` and ``GET /v1/models``. Each chat request is answered by
``responder(body) -> action``; the actions are :class:`Reply`, :class:`Fail` (an HTTP error with headers,
e.g. 429 with ``retry-after-ms``; ``{authorization}`` in its message or in a Reply's text echoes the request's Authorization
header, as careless servers do), :class:`Raw` (any status, content type and body: malformed replies) and
:class:`Slow` (sleep, then act: a client timeout). The server counts every request it receives and keeps
the bodies and the ``Authorization`` headers it saw.

:class:`PerAnswerScript` scripts a judge per item: it finds the text inside ``<model_answer>`` in the last
message and plays that answer's list of actions in order (a judge asks about one item sequentially, so the
order is deterministic at any concurrency); when a list runs out, ``default`` answers.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Union

from local_http_server import LocalHTTPServer, ServerWithFake


@dataclass(frozen=True)
class Reply:
    """A 200 chat completion with ``text`` as the assistant message."""

    text: str
    prompt_tokens: int = 100
    completion_tokens: int = 20
    model: str | None = None  # default: the server's served_model
    fingerprint: str = "fp_fake123"


@dataclass(frozen=True)
class Fail:
    """An HTTP error response (e.g. ``Fail(429, {"retry-after-ms": "5"})``)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "scripted failure"


@dataclass(frozen=True)
class Raw:
    """Exactly this response: ``Raw(b"<html>busy</html>", content_type="text/html")`` or a JSON list."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Raw:
        return cls(json.dumps(payload).encode("utf-8"), status)


#: Malformed 200 replies a real server has been seen to send, by name (each is a failed call, never a reply).
MALFORMED_REPLIES: dict[str, Raw] = {
    "not_json": Raw(b"upstream busy, try again", content_type="application/json"),
    "html_page": Raw(b"<!doctype html><html><body>502 Bad Gateway</body></html>", content_type="text/html"),
    "json_list": Raw.json([{"message": {"content": "<score>7</score>"}}]),
    "message_null": Raw.json(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": None, "finish_reason": "stop"}],
        }
    ),
    "choices_empty": Raw.json({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}),
    "choices_missing": Raw.json({"id": "x", "object": "chat.completion", "created": 0, "model": "m"}),
    "content_null": Raw.json(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}],
        }
    ),
}


@dataclass(frozen=True)
class Slow:
    """Sleep ``seconds`` before acting (the client may time out and retry meanwhile)."""

    seconds: float
    then: Reply | Fail | Raw = Reply("<score>5</score>")


Action = Union[Reply, Fail, Raw, Slow]
_ANSWER = re.compile(r"<model_answer>\s*(.*?)\s*</model_answer>", re.S)


class PerAnswerScript:
    """Per-item scripted actions keyed by the model answer inside the judge prompt."""

    def __init__(
        self, scripts: dict[str, list[Action]] | None = None, default: Action = Reply("<score>7</score>")
    ) -> None:
        self.scripts = {k: list(v) for k, v in (scripts or {}).items()}
        self.default = default
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Action:
        m = _ANSWER.search(body["messages"][-1]["content"])
        answer = m.group(1) if m else ""
        with self._lock:
            self.calls[answer] += 1
            queue = self.scripts.get(answer)
            return queue.pop(0) if queue else self.default


class FakeOpenAIServer(LocalHTTPServer):
    """``with FakeOpenAIServer(responder) as srv: ... srv.base_url ... srv.n_chat_calls``."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], Action] | None = None,
        served_model: str = "fake-judge-2024-01-01",
        owned_by: str = "fake",
    ) -> None:
        self.responder = responder or PerAnswerScript()
        self.served_model = served_model
        self.owned_by = owned_by  # ``owned_by`` of its /v1/models entry ("me" is llama-cpp-python's)
        self.n_model_lists = 0
        self.n_chat_calls = 0
        self.bodies: list[dict[str, Any]] = []
        self.auth_headers: set[str] = set()
        self._lock = threading.Lock()
        super().__init__(_Handler)

    def _next(self, body: dict[str, Any], auth: str | None) -> Action:
        with self._lock:
            self.n_chat_calls += 1
            self.bodies.append(body)
            if auth:
                self.auth_headers.add(auth)
        return self.responder(body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    server: ServerWithFake

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self.server.fake.n_model_lists += 1
            model = {
                "id": self.server.fake.served_model,
                "object": "model",
                "created": 0,
                "owned_by": self.server.fake.owned_by,
            }
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(length)
        if len(data) < length:  # the client gave up mid-request (cancelled): not a request
            self.close_connection = True
            return
        body = json.loads(data or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        action = self.server.fake._next(body, self.headers.get("Authorization"))
        if isinstance(action, Slow):
            time.sleep(action.seconds)
            action = action.then
        if isinstance(action, Fail):
            message = action.message.replace("{authorization}", self.headers.get("Authorization") or "")
            err = {"error": {"message": message, "type": "server_error", "code": str(action.status)}}
            self._send(action.status, err, action.headers)
            return
        if isinstance(action, Raw):
            self._send_raw(action.status, action.body, action.content_type)
            return
        text = action.text.replace("{authorization}", self.headers.get("Authorization") or "")
        self._send(
            200,
            {
                "id": f"chatcmpl-{self.server.fake.n_chat_calls}",
                "object": "chat.completion",
                "created": 0,
                "model": action.model or self.server.fake.served_model,
                "system_fingerprint": action.fingerprint,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": action.prompt_tokens,
                    "completion_tokens": action.completion_tokens,
                    "total_tokens": action.prompt_tokens + action.completion_tokens,
                },
            },
        )
