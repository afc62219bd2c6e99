"""OpenAI-compatible chat client and ``ApiModel`` (closed models and judges, ThaiCLI spec "Client practice").

One ``AsyncOpenAI`` client per event loop, an ``asyncio.Semaphore`` bounding the requests in flight,
``temperature``/``top_p``/``max_tokens``/``seed`` sent explicitly, and transport errors (429 honouring
``retry-after-ms``, 5xx, timeouts, connection errors) retried with backoff by the openai client itself
(``max_retries``). Works against OpenAI and any OpenAI-compatible server (vLLM, ``transformers serve``,
llama.cpp) through ``base_url``. The parts a reader may look for elsewhere:

- :mod:`.api_replies`: what a usable reply is (a malformed 200 becomes a retried 502), the errors and their
  secret-free messages;
- :mod:`.client_options`: the endpoint, the key (never in a URL, a ``repr`` or a file), timeout and retries,
  shared with ``ServedModel``;
- :mod:`thai_eval_utils.core.async_bridge`: the synchronous methods also work inside a running event loop (Jupyter).
"""

from __future__ import annotations

import asyncio
import importlib.resources
import json
from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from thai_eval_utils.backend.api_replies import (
    FATAL_ERRORS,
    ApiError,
    Completion,
    MalformedReplyError,
    ReplyCheckingClient,
    describe_error,
    reply_problem,
)
from thai_eval_utils.core.async_bridge import run_sync
from thai_eval_utils.backend.client_options import (
    THINK_STOP_METHOD,
    THINKING_BUDGET_METHOD,
    ClientOptions,
    HasClientOptions,
    base_url_or_env,
    check_local_only_options,
    rejoin_reasoning,
    thinking_body,
)
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.protocols import ChatModel, stop_strings
from thai_eval_utils.core.provenance import public_url
from thai_eval_utils.backend.stops import cut_at_stop, sent_stops

#: The public names; ``ApiError``, ``FATAL_ERRORS``, ``describe_error``, ``reply_problem`` (from :mod:`.api_replies`)
#: and ``run_sync`` (from :mod:`thai_eval_utils.core.async_bridge`) are re-exported, as ``thaicli`` and the tests import them from here.
__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "FATAL_ERRORS",
    "NEUTRAL_SAMPLING",
    "OBSERVED_IDENTITY_KEYS",
    "PRICES_FILE",
    "SERVER_BY_OWNER",
    "ApiError",
    "ApiModel",
    "ApiSession",
    "cut_at_stop",
    "describe_error",
    "estimate_cost",
    "load_prices",
    "public_base_url",
    "reply_problem",
    "run_sync",
    "server_from_owners",
    "stable_identity",
    "stable_model_identity",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONCURRENCY = 16
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 6
#: Identity keys filled in by the server's answers (they change after calls): leave them out of config ids.
OBSERVED_IDENTITY_KEYS = ("served_models", "system_fingerprints")
#: US dollars per 1M input and output tokens of a few judge models (estimates of a run's cost only).
PRICES_FILE = importlib.resources.files("thai_eval_utils") / "templates" / "prices.json"

#: ``url`` without credentials, query or fragment (the one rule: :func:`~thai_eval_utils.core.provenance.public_url`).
public_base_url = public_url


def stable_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """``identity`` without the keys the server's answers fill in (for config ids that must not drift)."""
    return {k: v for k, v in identity.items() if k not in OBSERVED_IDENTITY_KEYS}


def stable_model_identity(model: ChatModel) -> dict[str, Any]:
    """A model's identity for a config id: its ``identity`` (``{"name": model.name}`` for a model without one),
    without the keys the server's answers fill in (:func:`stable_identity`)."""
    return stable_identity(dict(getattr(model, "identity", None) or {"name": model.name}))


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


#: ``owned_by`` of a server's ``/v1/models`` entries -> the server software.
SERVER_BY_OWNER = {"me": "llama-cpp-python", "vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp"}
#: Sampling defaults a server applies unless told otherwise, set back to plain decoding with every generation
#: request. llama-cpp-python's server defaults ``repeat_penalty`` to 1.1 (``llama_cpp/server/types.py``), so its
#: "temperature 0" is not greedy decoding; the leaderboard's GSM8K is greedy (HF ``generate``, no penalty).
NEUTRAL_SAMPLING: dict[str, dict[str, float]] = {"llama-cpp-python": {"repeat_penalty": 1.0}}


def server_from_owners(owners: set[str]) -> str | None:
    """The server software named by the ``owned_by`` fields of ``/v1/models`` entries, when they agree."""
    return SERVER_BY_OWNER.get(next(iter(owners))) if len(owners) == 1 else None


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
        self._client = AsyncOpenAI(http_client=ReplyCheckingClient(timeout=m.timeout), **m.options.client_kwargs())
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
        if stops := sent_stops(stop, self.model.think_stop_tags):  # one string is one stop; none when it thinks
            extra["stop"] = list(stops)
        body = {**(self.model.sampling_overrides or {}), **thinking_body(self.model)}
        if body:
            extra["extra_body"] = body
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
        rejoined = rejoin_reasoning(message, self.model.reasoning_tags)  # the reply whole
        if rejoined is None and not isinstance(
            getattr(message, "content", None), str
        ):  # ReplyCheckingClient lets none through
            raise MalformedReplyError(f"{self.model.model_id}: malformed reply ({type(resp).__name__} without text)")
        usage = resp.usage
        completion = Completion(
            text=rejoined if rejoined is not None else message.content,
            model=resp.model,
            system_fingerprint=getattr(resp, "system_fingerprint", None),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=choices[0].finish_reason,
        )
        self.model._observe(completion)
        return completion


class ApiModel(HasClientOptions):
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
        check_local_only_options("ApiModel", model_id, options)
        if not model_id:
            raise ModelLoadError("ApiModel needs a model id, e.g. 'openai:gpt-4o-2024-05-13'")
        resolved = ClientOptions.resolve(
            [base_url_or_env(base_url, DEFAULT_BASE_URL)],
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
        )
        if not resolved.has_key and resolved.urls[0] == public_base_url(DEFAULT_BASE_URL):
            raise ModelLoadError("OpenAI's API needs a key: set OPENAI_API_KEY in the environment")
        self._start(model_id, resolved)

    @classmethod
    def from_options(cls, model_id: str, options: ClientOptions) -> ApiModel:
        """A model on the endpoint, key and limits ``options`` hold (e.g. another model's, with a shorter timeout)."""
        model = cls.__new__(cls)
        model._start(model_id, options)
        return model

    def _start(self, model_id: str, options: ClientOptions) -> None:
        """Set the options and empty counters (what ``__init__`` and :meth:`from_options` share)."""
        self.model_id = self.name = model_id
        self.options = options
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._served_models: set[str] = set()
        self._fingerprints: set[str] = set()
        #: the server software named by ``/v1/models`` (``SERVER_BY_OWNER``), found before the first request
        self.server: str | None = None
        self._server_probed = False
        #: set for a run by ``tasks.thinking.apply_to_model``, sent in ``extra_body`` (``thinking_body``)
        self.chat_template_kwargs: dict[str, Any] = {}
        self.thinking_budget: tuple[int, str] | None = None
        self.thinking_budget_method = THINKING_BUDGET_METHOD
        #: the think tags a server-split reply is rejoined with (``rejoin_reasoning``); set during generation runs
        self.reasoning_tags: tuple[str, str] | None = None
        #: the think tags stop strings wait for (a run's ``stop_after_thinking``): none are sent, the reply is cut
        #: here after the thinking block (``backend.stops``)
        self.think_stop_tags: tuple[str, str] | None = None
        self.think_stop_method = THINK_STOP_METHOD

    @property
    def base_url(self) -> str:
        """The endpoint's URL (no credentials, no query); setting it moves the model to another endpoint."""
        return self.options.urls[0]

    @base_url.setter
    def base_url(self, url: str) -> None:
        self.options = self.options.with_url(url)

    @property
    def concurrency(self) -> int:
        """Requests in flight at once."""
        return int(self.options.concurrency or DEFAULT_CONCURRENCY)

    def __repr__(self) -> str:
        return (
            f"ApiModel({self.model_id!r}, base_url={public_base_url(self.base_url)!r}, concurrency={self.concurrency})"
        )

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
        """Open and close one session: opening it asks ``/v1/models`` once (``ApiSession._server_kind``)."""
        async with self.session():
            pass

    @property
    def sampling_overrides(self) -> dict[str, float]:
        """Sampling parameters sent with every request to undo the server's non-neutral defaults
        (:data:`NEUTRAL_SAMPLING`: llama-cpp-python's ``repeat_penalty`` 1.1); empty for other servers."""
        return dict(NEUTRAL_SAMPLING.get(self.server or "", {}))

    def _observe(self, completion: Completion) -> None:
        """Count a completion's tokens and note the model id and fingerprint the server reported."""
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
        """One reply per conversation, in order (requests run concurrently, ``concurrency`` at a time); ``stop``: one
        stop string or a list of them (refused before any request when it is neither)."""
        stop = stop_strings(stop)

        async def go() -> list[Completion]:
            async with self.session() as s:
                return await asyncio.gather(
                    *(
                        s.complete(
                            m, max_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed, stop=stop
                        )
                        for m in messages_list
                    )
                )

        try:
            completions = run_sync(go)
        except openai.APIError as exc:  # "from None": the chained original would print the server's raw text
            raise ApiError(
                f"{self.model_id} at {public_base_url(self.base_url)}: {describe_error(exc)}", cause=exc
            ) from None
        return [cut_at_stop(c.text, stop, think_tags=self.think_stop_tags) for c in completions]

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
