"""Options and credentials of a client of OpenAI-compatible endpoints: one helper for ``ApiModel``
(:mod:`.openai_client`) and ``ServedModel`` (:mod:`.served.model`).

:class:`ClientOptions` holds where requests go (each URL without its credentials, and the plain query sent with
every request), the key, the per-request timeout, the openai client's retries and the requests in flight.
The key comes from the ``api_key`` argument, else the URL's own credential (its password, or an Azure style
``?api-key=`` parameter), else ``$OPENAI_API_KEY``, else a placeholder for servers that need none. It is
registered as a secret (:func:`~thai_eval_utils.core.provenance.register_secret`, so no file or message the
toolkit writes holds it) and kept in a :class:`Secret`, which never shows its value: ``repr``, ``str`` and
``dataclasses.asdict`` of the options show ``<redacted>``, ``json.dumps`` refuses it; only
:meth:`ClientOptions.client_kwargs` hands it to the openai client.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.provenance import public_url, register_secret, split_endpoint

#: Sent as the key to servers that need none (a local ``transformers serve``, vLLM without --api-key).
PLACEHOLDER_API_KEY = "not-needed"
#: The environment variable holding a judge's API key (``thai-eval run --judge-base-url``'s password lands there):
#: read by ``backend.models.load_judge``, never a parameter, so it never lands in a notebook or a config.
JUDGE_KEY_ENV = "THAI_EVAL_JUDGE_API_KEY"
#: The prefix of a local judge (``local:<load_model spec>``), as ``thai-eval run --judge`` takes it.
LOCAL_JUDGE = "local:"

#: ``load_model`` options that only mean something for local weights, with the value that means "unset".
#: Unset values are ignored; a set one is refused (it would silently do nothing for an endpoint model).
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


def check_local_only_options(kind: str, model_id: str, options: Mapping[str, Any]) -> None:
    """Refuse ``load_model`` options that mean nothing to the endpoint model ``kind`` (``"ApiModel"``...): an
    unknown option (TypeError) or a local-weights option that is set (ModelLoadError); unset ones pass."""
    for key, value in options.items():
        if key in IGNORED_OPTIONS:
            continue
        if key not in LOCAL_ONLY_OPTIONS:
            raise TypeError(f"{kind} got an unknown option {key!r}")
        if value != LOCAL_ONLY_OPTIONS[key]:
            raise ModelLoadError(
                f"option {key}={value!r} applies to local weights only, not to the {kind} {model_id!r}"
            )


def base_url_or_env(base_url: Any, default: str | None = None) -> Any:
    """``base_url`` if given, else ``$OPENAI_BASE_URL``, else ``default`` (None: the caller refuses)."""
    return base_url or os.environ.get("OPENAI_BASE_URL") or default


class Secret:
    """A credential that never shows itself: ``repr`` and ``str`` are ``<redacted>``; :meth:`reveal` gives it.

    Not a dataclass and not a ``str``, so neither ``dataclasses.asdict`` nor an f-string nor ``json.dumps``
    of something holding it can write the value.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def reveal(self) -> str:
        """The value: only for the request that must carry it."""
        return self._value


@dataclass(frozen=True)
class ClientOptions:
    """Where requests go and how (see the module doc); build with :meth:`resolve`."""

    urls: tuple[str, ...]  # one per server: scheme, host, port and path; no userinfo, no query
    queries: tuple[dict[str, str], ...]  # per server, the plain query parameters (``api-version``)
    api_key: Secret
    key_header: str | None = None  # a header the key also goes in (``api-key``, when an Azure URL carried it so)
    has_key: bool = False  # False: no key was found anywhere, the placeholder is sent
    timeout: float = 60.0  # seconds per request before the openai client retries it
    max_retries: int = 6  # the openai client's retries of transport errors (429, 5xx, timeouts, connection)
    concurrency: int | None = None  # requests in flight (None: the model decides, e.g. after probing)

    @classmethod
    def resolve(
        cls,
        urls: Sequence[str],
        api_key: str | None = None,
        *,
        timeout: float,
        max_retries: int,
        concurrency: int | None = None,
    ) -> ClientOptions:
        """Options for the servers at ``urls`` (credentials taken out of them and registered as secrets).

        Raises ModelLoadError for a URL holding two different credentials, ValueError for a timeout that is
        not positive, negative retries or a concurrency below 1.
        """
        try:
            endpoints = [split_endpoint(u) for u in urls]
        except ValueError as exc:
            raise ModelLoadError(str(exc)) from None
        if not float(timeout) > 0 or int(max_retries) < 0:
            raise ValueError(f"timeout must be > 0 and max_retries >= 0, got {timeout!r} and {max_retries!r}")
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        key = api_key or next((e.key for e in endpoints if e.key), None) or os.environ.get("OPENAI_API_KEY")
        register_secret(key)
        return cls(
            urls=tuple(e.url for e in endpoints),
            queries=tuple(e.query for e in endpoints),
            api_key=Secret(key or PLACEHOLDER_API_KEY),
            has_key=bool(key),
            key_header=next((e.key_header for e in endpoints if e.key_header), None),
            timeout=float(timeout),
            max_retries=int(max_retries),
            concurrency=concurrency,
        )

    @property
    def public_urls(self) -> list[str]:
        """The server URLs as records and messages show them (no credentials, no query)."""
        return [public_url(u) for u in self.urls]

    def with_url(self, url: str) -> ClientOptions:
        """The same options for one server at ``url``; the key stays (the URL's own credential, if any, is the key
        only when none was found before)."""
        moved = ClientOptions.resolve(
            [url], self.api_key.reveal() if self.has_key else None, timeout=self.timeout, max_retries=self.max_retries
        )
        return replace(self, urls=moved.urls, queries=moved.queries, key_header=moved.key_header or self.key_header)

    def client_kwargs(self, index: int = 0) -> dict[str, Any]:
        """``AsyncOpenAI`` keyword arguments for server ``index``: URL, key, timeout, retries, its plain query
        (``default_query``) and the header the key is also sent in (``default_headers``)."""
        key = self.api_key.reveal()
        out: dict[str, Any] = {
            "base_url": self.urls[index],
            "api_key": key,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
        }
        if self.queries[index]:
            out["default_query"] = dict(self.queries[index])
        if self.key_header:
            out["default_headers"] = {self.key_header: key}
        return out


class HasClientOptions:
    """What ``ApiModel`` and ``ServedModel`` share of their options: ``options`` and its read-only views."""

    options: ClientOptions

    @property
    def timeout(self) -> float:
        """Seconds per request attempt before the openai client retries it."""
        return self.options.timeout

    @property
    def max_retries(self) -> int:
        """The openai client's retries of transport errors (ServedModel: also the re-queues of a malformed reply)."""
        return self.options.max_retries


#: How an endpoint model honours a thinking budget (``tasks.thinking.apply_to_model`` records it).
THINKING_BUDGET_METHOD = "vLLM thinking_token_budget (extra_body; the server needs --reasoning-config)"
#: How an endpoint model honours ``think_stop_tags`` (a run's ``stop_after_thinking``): a server cuts at the first
#: stop string, thinking or not, so it is sent none and the reply is cut here after the thinking block.
THINK_STOP_METHOD = "stop strings not sent to the server; the reply cut here after the thinking block"


def thinking_body(model: Any) -> dict[str, Any]:
    """``extra_body`` fields of a model that thinks, set for a run by ``tasks.thinking.apply_to_model``:
    ``chat_template_kwargs`` (e.g. ``{"enable_thinking": False}``, as vLLM and SGLang pass them to the chat
    template) and vLLM's ``thinking_token_budget``; nothing when neither is set (requests as before)."""
    body: dict[str, Any] = {}
    kwargs = getattr(model, "chat_template_kwargs", None)
    if kwargs:
        body["chat_template_kwargs"] = dict(kwargs)
    budget = getattr(model, "thinking_budget", None)
    if budget is not None:
        body["thinking_token_budget"] = int(budget[0])
    return body


def rejoin_reasoning(message: Any, tags: tuple[str, str] | None) -> str | None:
    """A chat reply whose thinking the server split off (vLLM's and SGLang's reasoning parsers: ``reasoning_content``
    or ``reasoning``; SEA-HELM relies on them, spec ``seahelm_thai.md`` 3.4) rejoined as the raw reply the model
    wrote: ``OPEN + thinking + CLOSE + content``, or ``OPEN + thinking`` when the parser found no close (its content
    is None), so the run stores the reply whole and ``tasks.thinking`` cuts it by its own rule. None when
    ``tags`` is None (not a generation run: a judge's reply is taken as the server gives it) or nothing was split."""
    if tags is None:
        return None
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    if not isinstance(reasoning, str) or not reasoning:
        return None
    content = getattr(message, "content", None)
    return f"{tags[0]}{reasoning}" if content is None else f"{tags[0]}{reasoning}{tags[1]}{content}"
