"""OpenAI-compatible chat client and ``ApiModel`` (closed models and judges, ThaiCLI spec "Client practice").

One ``AsyncOpenAI`` client per event loop, an ``asyncio.Semaphore`` bounding the requests in flight,
``temperature``/``top_p``/``max_tokens``/``seed`` sent explicitly, and transport errors (429 honouring
``retry-after-ms``, 5xx, timeouts, connection errors) retried with backoff by the openai client itself
(``max_retries``). A 200 whose body is not a well-formed chat or completions object (not JSON, an HTML page,
a list, no or empty ``choices``, a null message or content) is turned into a 502 before the openai client
sees it (:class:`ReplyCheckingClient`), so it is retried like any 5xx and, once the retries are spent, fails
the call: it never reaches a parser as an empty reply. Credentials go only where the server expects them:
the key as the Bearer token, never as userinfo in the URL; every secret in use is registered with
:func:`~thai_eval_utils.core.provenance.register_secret`, so no file or message the toolkit writes holds it.
Works against OpenAI and any OpenAI-compatible server (vLLM, ``transformers serve``,
llama.cpp) through ``base_url``. The synchronous methods also work inside a running event loop (Jupyter):
the coroutine then runs in a worker thread with its own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.resources
import json
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
import openai
from openai import AsyncOpenAI

from thai_eval_utils.core.errors import ModelLoadError, ThaiEvalError
from thai_eval_utils.core.provenance import public_url, redact, register_secret, split_endpoint
from thai_eval_utils.core.stops import cut_at_stop

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONCURRENCY = 16
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 6
#: Sent as the key to servers that need none (a local ``transformers serve``, vLLM without --api-key).
PLACEHOLDER_API_KEY = "not-needed"

#: ``load_model`` options that only mean something for local weights, with the value that means "unset".
#: Unset values are ignored; a set one is refused (it would silently do nothing for an API model).
LOCAL_ONLY_OPTIONS: dict[str, Any] = {
    "dtype": None,
    "device": None,
    "device_map": None,
    "max_length": None,
    "add_bos_token": False,
    "trust_remote_code": False,
}
#: Options accepted and ignored: ``batch_size`` has its API counterpart in ``concurrency``.
IGNORED_OPTIONS = ("batch_size",)

#: Identity keys filled in by the server's answers (they change after calls): leave them out of config ids.
OBSERVED_IDENTITY_KEYS = ("served_models", "system_fingerprints")
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

#: US dollars per 1M input and output tokens of a few judge models (estimates of a run's cost only).
PRICES_FILE = importlib.resources.files("thai_eval_utils") / "templates" / "prices.json"

T = TypeVar("T")


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


def reply_problem(kind: str, content_type: str, body: bytes) -> str | None:
    """Why a 200 reply to a ``kind`` request (``"chat"`` or ``"completions"``) is unusable, or None if it is fine.

    Well-formed: a JSON object (``application/json``) whose ``choices`` is a non-empty list whose first
    element holds ``message.content`` (chat) or ``text`` (completions) as a string. An empty string is a
    reply (the judge asks again); null is not.
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
        return None if isinstance(content, str) else f"choices[0].message.content is {json.dumps(content)[:40]}, not text"
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
        error = {"error": {"message": f"malformed reply: {problem}", "type": "malformed_reply", "code": MALFORMED_STATUS}}
        return httpx2.Response(MALFORMED_STATUS, json=error, headers={MALFORMED_HEADER: "1"}, request=request)


#: ``url`` without credentials, query or fragment (the one rule: :func:`~thai_eval_utils.core.provenance.public_url`).
public_base_url = public_url


def stable_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """``identity`` without the keys the server's answers fill in (for config ids that must not drift)."""
    return {k: v for k, v in identity.items() if k not in OBSERVED_IDENTITY_KEYS}


def run_sync(make_coro: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make_coro()`` to completion from synchronous code.

    With no event loop running this is ``asyncio.run``; inside a running loop (a Jupyter cell) the
    coroutine runs on a fresh loop in a worker thread, since a running loop cannot be re-entered; an
    interrupt of the caller (Jupyter's stop button) cancels that coroutine before it propagates.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())  # type: ignore[arg-type]
    box: dict[str, Any] = {}
    finished, abandoned = threading.Event(), threading.Event()

    async def main() -> T:
        box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
        if abandoned.is_set():  # interrupted before the loop existed: do none of the work
            raise asyncio.CancelledError
        return await make_coro()

    def worker() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
        finally:
            finished.set()

    # Waiting on an Event rather than Thread.join: an interrupted join (3.11) marks the thread finished. The
    # thread starts inside the try, so an interrupt arriving as soon as it runs is still handled here.
    thread = threading.Thread(target=worker, name="thai-eval-api", daemon=True)
    try:
        thread.start()
        finished.wait()
    except BaseException:  # an interrupt (Jupyter's stop button): cancel the work, wait for it to unwind
        abandoned.set()  # a worker that has no loop yet sees this and stops before the work
        if "loop" in box:  # a worker that has one: cancel its task
            with contextlib.suppress(RuntimeError):  # the loop already closed: nothing left to cancel
                box["loop"].call_soon_threadsafe(box["task"].cancel)
        if thread.is_alive():
            finished.wait()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def load_prices() -> dict[str, dict[str, float]]:
    """The price table: model id -> {"input": $/1M tokens, "output": $/1M tokens}."""
    return {k: v for k, v in json.loads(PRICES_FILE.read_text(encoding="utf-8")).items() if not k.startswith("_")}


def estimate_cost(model_ids: list[str | None], prompt_tokens: int, completion_tokens: int) -> float | None:
    """US dollars for the tokens at the first of ``model_ids`` in the price table; None if none is there."""
    prices = load_prices()
    for model_id in model_ids:
        if model_id and model_id in prices:
            p = prices[model_id]
            return (prompt_tokens * p["input"] + completion_tokens * p["output"]) / 1e6
    return None


def describe_error(exc: BaseException) -> str:
    """A one-line, secret-free description of an API error for records and messages (masked before cut)."""
    status = getattr(exc, "status_code", None)
    text = f"{type(exc).__name__}" + (f" (HTTP {status})" if status else "") + f": {exc}"
    return redact(text.replace("\n", " "))[:500]


#: ``owned_by`` of a server's ``/v1/models`` entries -> the server software.
SERVER_BY_OWNER = {"me": "llama-cpp-python", "vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp"}
#: Sampling defaults a server applies unless told otherwise, set back to plain decoding with every generation
#: request. llama-cpp-python's server defaults ``repeat_penalty`` to 1.1 (``llama_cpp/server/types.py``), so its
#: "temperature 0" is not greedy decoding; the leaderboard's GSM8K is greedy (HF ``generate``, no penalty).
NEUTRAL_SAMPLING: dict[str, dict[str, float]] = {"llama-cpp-python": {"repeat_penalty": 1.0}}


def server_from_owners(owners: set[str]) -> str | None:
    """The server software named by the ``owned_by`` fields of ``/v1/models`` entries, when they agree."""
    return SERVER_BY_OWNER.get(next(iter(owners))) if len(owners) == 1 else None


def endpoint_options(query: Mapping[str, str], key_header: str | None, key: str) -> dict[str, Any]:
    """``AsyncOpenAI`` keyword arguments for an endpoint's plain query (``default_query``) and the header its key
    is also sent in (``default_headers``; see :func:`~thai_eval_utils.core.provenance.split_endpoint`)."""
    out: dict[str, Any] = {}
    if query:
        out["default_query"] = dict(query)
    if key_header:
        out["default_headers"] = {key_header: key}
    return out


class ApiSession:
    """One event loop's connection to the endpoint: an ``AsyncOpenAI`` client and the request semaphore.

    Use as ``async with model.session() as s: c = await s.complete(messages, max_tokens=...)``.
    """

    def __init__(self, model: ApiModel) -> None:
        self.model = model
        self._client: AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None

    async def __aenter__(self) -> ApiSession:
        m = self.model
        self._client = AsyncOpenAI(base_url=m.base_url, api_key=m._api_key, max_retries=m.max_retries, timeout=m.timeout,
                                   http_client=ReplyCheckingClient(timeout=m.timeout),
                                   **endpoint_options(m._query, m._key_header, m._api_key))
        self._semaphore = asyncio.Semaphore(m.concurrency)
        if not m._server_probed:
            m.server, m._server_probed = await self._server_kind(), True
        return self

    async def _server_kind(self) -> str | None:
        """The server software, from the ``owned_by`` of the ``/v1/models`` entry serving this model id (else of
        every entry, when they agree); None when the endpoint does not say (OpenAI's API) or does not answer (the
        chat requests then report the endpoint's error themselves)."""
        assert self._client is not None
        try:
            quick = self._client.with_options(max_retries=0, timeout=min(self.model.timeout, 10.0))
            page = await quick.models.list()
        except (openai.APIError, ValueError):  # no /models, an error, or an unreadable reply: nothing to learn
            return None
        data = list(getattr(page, "data", None) or [])
        entries = [e for e in data if getattr(e, "id", None) == self.model.model_id] or data
        return server_from_owners({str(getattr(e, "owned_by", "") or "") for e in entries})

    async def __aexit__(self, *exc_info: object) -> None:
        if self._client is not None:
            await self._client.close()

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> Completion:
        """One chat completion; raises the openai error once the client's retries are spent."""
        assert self._client is not None and self._semaphore is not None, "use `async with model.session()`"
        extra: dict[str, Any] = {}
        if seed is not None:
            extra["seed"] = seed
        if stop:
            extra["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if self.model.sampling_overrides:
            extra["extra_body"] = self.model.sampling_overrides
        async with self._semaphore:
            resp = await self._client.chat.completions.create(
                model=self.model.model_id,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                **extra,
            )
        choices = getattr(resp, "choices", None)
        message = getattr(choices[0], "message", None) if choices else None
        if not isinstance(getattr(message, "content", None), str):  # ReplyCheckingClient lets none through
            raise MalformedReplyError(f"{self.model.model_id}: malformed reply ({type(resp).__name__} without text)")
        usage = resp.usage
        completion = Completion(
            text=message.content,
            model=resp.model,
            system_fingerprint=getattr(resp, "system_fingerprint", None),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=choices[0].finish_reason,
        )
        self.model._observe(completion)
        return completion


class ApiModel:
    """A chat model behind an OpenAI-compatible endpoint, with the same interface as ``LocalModel``.

    Args:
        model_id: the model name the endpoint knows (dated ids such as ``gpt-4o-2024-05-13`` pin a model).
        base_url: the endpoint (default ``$OPENAI_BASE_URL`` or OpenAI's). Userinfo is never sent as such
            (httpx would turn it into HTTP Basic auth): it is stripped, and its password is the key when no
            ``api_key`` is given. A credential query parameter (Azure style ``?api-key=...``) is taken out of the
            URL the same way (and also sent as the ``api-key`` header); other parameters (``api-version``) are
            sent with every request.
        api_key: the key, sent as the Bearer token. Default: the base URL's password, else ``$OPENAI_API_KEY``
            (a URL naming its own credential does not get the environment's key, which may be OpenAI's), else a
            placeholder for servers that need none. Registered as a secret: never recorded anywhere.
        concurrency: requests in flight at once.
        timeout: seconds per request before the client retries it.
        max_retries: the openai client's retries of transport errors (429, 5xx, timeouts, connection).
        **options: ``load_model`` options meant for local weights: ignored when unset, refused when set.
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        **options: Any,
    ) -> None:
        for key, value in options.items():
            if key in IGNORED_OPTIONS:
                continue
            if key not in LOCAL_ONLY_OPTIONS:
                raise TypeError(f"ApiModel got an unknown option {key!r}")
            if value != LOCAL_ONLY_OPTIONS[key]:
                raise ModelLoadError(f"option {key}={value!r} applies to local weights only, not to the API model {model_id!r}")
        if not model_id:
            raise ModelLoadError("ApiModel needs a model id, e.g. 'openai:gpt-4o-2024-05-13'")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.model_id = model_id
        self.name = model_id
        try:
            endpoint = split_endpoint(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        except ValueError as exc:
            raise ModelLoadError(str(exc)) from None
        self.base_url, self._query, self._key_header = endpoint.url, endpoint.query, endpoint.key_header
        key = api_key or endpoint.key or os.environ.get("OPENAI_API_KEY")
        register_secret(key)
        if not key and public_base_url(self.base_url) == public_base_url(DEFAULT_BASE_URL):
            raise ModelLoadError("OpenAI's API needs a key: set OPENAI_API_KEY in the environment")
        self._api_key = key or PLACEHOLDER_API_KEY
        self.concurrency = concurrency
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._served_models: set[str] = set()
        self._fingerprints: set[str] = set()
        #: the server software named by ``/v1/models`` (``SERVER_BY_OWNER``), found before the first request
        self.server: str | None = None
        self._server_probed = False

    def __repr__(self) -> str:
        return f"ApiModel({self.model_id!r}, base_url={public_base_url(self.base_url)!r}, concurrency={self.concurrency})"

    @property
    def identity(self) -> dict[str, Any]:
        """Model id and endpoint (no credentials), the server software when the endpoint names it (asked once,
        before the first request, so a run's config id never changes); after calls also the served model ids and
        fingerprints."""
        if not self._server_probed:
            run_sync(self._probe_server)
        return {
            "name": self.model_id,
            "source": "openai-compatible",
            "model_id": self.model_id,
            "base_url": public_base_url(self.base_url),
            "served_models": sorted(self._served_models),
            "system_fingerprints": sorted(self._fingerprints),
            **({"server": self.server} if self.server else {}),
            **({"sampling_overrides": self.sampling_overrides} if self.sampling_overrides else {}),
        }

    async def _probe_server(self) -> None:
        async with self.session():  # opening a session asks /v1/models once (ApiSession._server_kind)
            pass

    @property
    def sampling_overrides(self) -> dict[str, float]:
        """Sampling parameters sent with every request to undo the server's non-neutral defaults
        (:data:`NEUTRAL_SAMPLING`: llama-cpp-python's ``repeat_penalty`` 1.1); empty for other servers."""
        return dict(NEUTRAL_SAMPLING.get(self.server or "", {}))

    def _observe(self, completion: Completion) -> None:
        self.usage["requests"] += 1
        self.usage["prompt_tokens"] += completion.prompt_tokens
        self.usage["completion_tokens"] += completion.completion_tokens
        if completion.model:
            self._served_models.add(completion.model)
        if completion.system_fingerprint:
            self._fingerprints.add(completion.system_fingerprint)

    def session(self) -> ApiSession:
        """An async context manager holding a client and semaphore for the current event loop."""
        return ApiSession(self)

    def list_models(self) -> list[str]:
        """The model ids the endpoint serves (``GET /models``); raises :class:`ApiError` if unreachable."""

        async def go() -> list[str]:
            async with self.session() as s:
                assert s._client is not None
                page = await s._client.models.list()
                return [m.id for m in page.data]

        try:
            return run_sync(go)
        except openai.APIError as exc:  # "from None": the chained original would print the server's raw text
            raise ApiError(f"{public_base_url(self.base_url)}: {describe_error(exc)}", cause=exc) from None

    def chat(
        self,
        messages_list: list[list[dict[str, str]]],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> list[str]:
        """One reply per conversation, in order (requests run concurrently, ``concurrency`` at a time)."""

        async def go() -> list[Completion]:
            async with self.session() as s:
                return await asyncio.gather(
                    *(
                        s.complete(m, max_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed, stop=stop)
                        for m in messages_list
                    )
                )

        try:
            completions = run_sync(go)
        except openai.APIError as exc:  # "from None": the chained original would print the server's raw text
            raise ApiError(f"{self.model_id} at {public_base_url(self.base_url)}: {describe_error(exc)}", cause=exc) from None
        return [cut_at_stop(c.text, stop) for c in completions]

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
        """Each prompt sent as one user message (a chat endpoint has no raw completion)."""
        return self.chat(
            [[{"role": "user", "content": p}] for p in prompts],
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            stop=stop,
        )
