"""Replies and failures of OpenAI-compatible endpoints: what a usable reply is, and how a failed request is
reported.

A 200 whose body is not a well-formed chat or completions object (not JSON, an HTML page, a list, no or empty
``choices``, a null message or content) is turned into a 502 before the openai client sees it
(:class:`ReplyCheckingClient`), so it is retried like any 5xx (the client's ``max_retries``, same backoff) and,
once the retries are spent, fails the call: it never reaches a parser as an empty reply. Errors after which no
request can succeed (:data:`FATAL_ERRORS`) stop a run; every message is secret-free (:func:`describe_error`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.core.provenance import redact

#: The request paths whose 200 replies :func:`reply_problem` checks, and the shape each must have.
CHECKED_PATHS = {"/chat/completions": "chat", "/completions": "completions"}
#: Status and header of the stand-in response for a malformed 200 (a 5xx, so the openai client retries it).
MALFORMED_STATUS = 502
MALFORMED_HEADER = "x-thai-eval-malformed-reply"

#: Errors after which no later request can succeed (bad key, no access, unknown model): stop the run.
FATAL_ERRORS: tuple[type[BaseException], ...] = (
    openai.AuthenticationError,
    openai.PermissionDeniedError,
    openai.NotFoundError,
)


class ApiError(ThaiEvalError, ConnectionError):
    """A request still failed after the client's own retries (or failed in a way no retry can fix).

    The message is secret-free; ``cause`` is the openai error (not chained as ``__cause__``, whose text a
    traceback would print: it may echo the key).
    """

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class Completion:
    """One chat completion: the reply text, what the server says it ran, and the tokens it counted."""

    text: str
    model: str | None
    system_fingerprint: str | None
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


class MalformedReplyError(ApiError):
    """A 200 reply that is not a well-formed chat or completions object (see :func:`reply_problem`)."""


def describe_error(exc: BaseException) -> str:
    """A one-line, secret-free description of an API error for records and messages (masked before cut)."""
    status = getattr(exc, "status_code", None)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"
    return redact(text.replace("\n", " "))[:500]


def reply_problem(kind: str, content_type: str, body: bytes) -> str | None:
    """Why a 200 reply to a ``kind`` request (``"chat"`` or ``"completions"``) is unusable, or None if it is fine.

    Well-formed: a JSON object (``application/json``) whose ``choices`` is a non-empty list whose first
    element holds ``message.content`` (chat) or ``text`` (completions) as a string. An empty string is a
    reply (the judge asks again); null is not, unless the message carries the thinking a server's reasoning parser
    split off (``reasoning_content`` / ``reasoning``: a reply whose thinking never closed).
    """
    if "json" not in content_type.lower():
        return f"content type {content_type or '(none)'!r}, not JSON"
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"body is not JSON ({type(exc).__name__}: {str(exc)[:80]})"
    if not isinstance(payload, Mapping):
        return f"body is a JSON {type(payload).__name__}, not an object"
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no choices" if choices is None else f"choices is {json.dumps(choices)[:40]}, not a non-empty list"
    first = choices[0]
    if not isinstance(first, Mapping):
        return f"choices[0] is a JSON {type(first).__name__}, not an object"
    if kind == "chat":
        message = first.get("message")
        if not isinstance(message, Mapping):
            return f"choices[0].message is {json.dumps(message)[:40]}, not an object"
        content = message.get("content")
        if content is None and any(
            isinstance(message.get(k), str) and message.get(k) for k in ("reasoning_content", "reasoning")
        ):
            return None  # a reasoning parser split every token off as thinking (it never closed)
        return (
            None if isinstance(content, str) else f"choices[0].message.content is {json.dumps(content)[:40]}, not text"
        )
    text = first.get("text")
    return None if isinstance(text, str) else f"choices[0].text is {json.dumps(text)[:40]}, not text"


class ReplyCheckingClient(openai.DefaultAsyncHttpxClient):
    """The openai client's HTTP client, with every 200 reply to a chat or completions request checked by
    :func:`reply_problem` before the openai client parses it; a malformed one is replaced by a
    :data:`MALFORMED_STATUS` response naming the problem, which the openai client retries like any 5xx
    (``max_retries``, same backoff) and finally raises as ``openai.InternalServerError``."""

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        response = await super().send(request, **kwargs)
        path = request.url.path.rstrip("/")
        kind = next((k for suffix, k in CHECKED_PATHS.items() if path.endswith(suffix)), None)
        if kind is None or response.status_code != 200 or b'"stream":true' in request.content.replace(b" ", b""):
            return response
        body = await response.aread()
        problem = reply_problem(kind, response.headers.get("content-type", ""), body)
        if problem is None:
            return response
        await response.aclose()
        error = {
            "error": {"message": f"malformed reply: {problem}", "type": "malformed_reply", "code": MALFORMED_STATUS}
        }
        return httpx2.Response(MALFORMED_STATUS, json=error, headers={MALFORMED_HEADER: "1"}, request=request)
