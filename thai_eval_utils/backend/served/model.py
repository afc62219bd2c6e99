"""``ServedModel``: a model behind one or more OpenAI-compatible servers (vLLM, SGLang, llama-cpp-python) with
the toolkit's model interface, including Thai-H6's ``loglikelihood`` through ``/v1/completions``
(see :mod:`.completions`) and raw ``generate`` through ``/v1/completions`` (GSM8K, as lm-eval's
``local-completions``); ``chat`` uses ``/v1/chat/completions``.

Before the first request the servers are probed once (:meth:`ServedModel.probe`, checks in :mod:`.probe`), before
the first log-likelihood request for request-order dependence (:meth:`ServedModel.check_order`); the local
tokenizer is loaded by :mod:`.tokenizer`, the endpoint options and credentials are
:class:`~thai_eval_utils.backend.client_options.ClientOptions` (shared with ``ApiModel``), and the requests go
through a :class:`~.replicas.Pool` of one or more servers.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai

from thai_eval_utils.backend.api_replies import ApiError, describe_error
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
from thai_eval_utils.core.errors import ModelLoadError, ThaiEvalError
from thai_eval_utils.backend.openai_client import NEUTRAL_SAMPLING
from thai_eval_utils.backend.served.completions import (
    SCORING_PARAMS,
    TEXT_BOUNDARY_RULE,
    Prompt,
    check_model,
    choices_in_order,
    group_prompts,
    parse_text_choice,
    parse_token_choice,
    text_prompts,
    token_prompts,
)
from thai_eval_utils.backend.served.engines import launched_identity
from thai_eval_utils.backend.served.order_probe import (
    ORDER_PROBE_REQUESTS,
    REVERSED_REQUESTS,
    SKIPPED,
    OrderProbeResult,
)
from thai_eval_utils.backend.served.order_probe import check_tolerance, run_order_probe
from thai_eval_utils.backend.served.probe import Prober, ProbeResult
from thai_eval_utils.backend.served.replicas import (
    MalformedReply,
    Pool,
    default_deadline,
    split_base_urls,
    within_deadline,
)
from thai_eval_utils.backend.served.tokenizer import load_tokenizer
from thai_eval_utils.backend.stops import cut_at_stop, opens_thinking, sent_stops

SPEC_PREFIX = "completions:"
PROMPT_FORMS = ("auto", "tokens", "text")
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 600.0  # a long prompt's echo on a CPU server takes minutes
DEFAULT_MAX_RETRIES = 3


class ServedModel(HasClientOptions):
    """A model behind OpenAI-compatible completions servers (``load_model("completions:<model-id>", ...)``).

    Args:
        model_id: the id the servers serve (``GET /v1/models``).
        base_url: one server or several replicas (a list or comma-separated), e.g.
            ``"http://gpu1:8000/v1,http://gpu2:8000/v1"``; default ``$OPENAI_BASE_URL``.
        tokenizer: ``"embedded"`` (the embedded Gemma 3 270M's), a local HF tokenizer/model directory, or None
            (text prompts only, no tokenizer check). Token-id prompts need it.
        prompt: ``"auto"`` (token ids when the server takes them and a tokenizer is given, else text),
            ``"tokens"`` or ``"text"``.
        max_length: left-truncation length of token-id prompts (lm-eval's; default: the tokenizer directory's
            ``max_position_embeddings``, else 2048). Text prompts are sent whole.
        add_bos_token: token ids: prepend BOS (default False, as the leaderboard ran lm-eval). Text: the server
            decides; None accepts its choice, True/False refuses a server that does otherwise.
        batch_size: prompts per scoring request on the token-id path (a document's choices go together).
        concurrency: requests in flight per replica (default 8 for token-id servers; 1 for text-only servers:
            llama-cpp-python runs one request at a time, and sending a document's choices in order keeps its
            reuse of the previous prompt's KV cache, and so its numbers, independent of timing).
        timeout, max_retries: the openai client's, per request; malformed replies are retried ``max_retries`` times.
        deadline: overall seconds per request, retries included (default ``timeout * (max_retries + 1)`` plus the
            client's backoff); a replica that gives no complete reply in time is dropped like a failing one.
        api_key: default the URL's own credential, else ``$OPENAI_API_KEY``, else a placeholder; never recorded
            (see :mod:`~thai_eval_utils.backend.client_options`).
        order_probe: before the first log-likelihood request, score a few requests in two orders on every replica
            and refuse servers whose numbers change (:mod:`.order_probe`: prefix caching); False skips it (recorded).
        order_tolerance: the largest difference in nats the order probe accepts (default 0.01).
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        tokenizer: str | Path | None = None,
        prompt: str = "auto",
        max_length: int | None = None,
        add_bos_token: bool | None = None,
        batch_size: int = 16,
        concurrency: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        name: str | None = None,
        deadline: float | None = None,
        order_probe: bool = True,
        order_tolerance: float | None = None,
        **options: Any,
    ) -> None:
        check_local_only_options("ServedModel", model_id, options)
        if not model_id:
            raise ModelLoadError("a served model needs its id, e.g. 'completions:google/gemma-3-270m'")
        if prompt not in PROMPT_FORMS:
            raise ValueError(f"prompt must be one of {PROMPT_FORMS}, not {prompt!r}")
        if prompt == "tokens" and tokenizer is None:
            raise ModelLoadError("prompt='tokens' needs a tokenizer (tokenizer='embedded' or a local HF directory)")
        url = base_url_or_env(base_url)
        if not url:
            raise ModelLoadError(
                f"served model {model_id!r} needs base_url (the server's URL, e.g. http://127.0.0.1:8000/v1)"
            )
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model_id, self.name = model_id, name or model_id
        self.options = ClientOptions.resolve(
            split_base_urls(url), api_key, timeout=timeout, max_retries=max_retries, concurrency=concurrency
        )
        self.prompt, self.batch_size = prompt, int(batch_size)
        if deadline is not None and not deadline > 0:
            raise ValueError(f"deadline must be > 0 seconds, got {deadline!r}")
        self.deadline = None if deadline is None else float(deadline)
        self._tokenizer_spec = tokenizer
        self._tokenizer: Any = None
        self._tokenizer_id: dict[str, Any] = {}
        self._max_length = max_length
        self._bos_wanted = add_bos_token
        self._bos = bool(add_bos_token)
        self._probe: ProbeResult | None = None
        self.order_probe, self.order_tolerance = bool(order_probe), check_tolerance(order_tolerance)
        self._order: OrderProbeResult | None = None
        #: Filled in by calls (not part of the identity): per-replica request counts, straddling tokens, usage.
        self.observed: dict[str, Any] = {"straddled": 0, "replicas": {}}
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

    # --- tokenizer ----------------------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        """The local tokenizer (loaded on first use), or None."""
        if self._tokenizer is None and self._tokenizer_spec is not None:
            loaded = load_tokenizer(self._tokenizer_spec)
            self._tokenizer, self._tokenizer_id = loaded.tokenizer, loaded.identity
            if self._max_length is None:
                self._max_length = loaded.max_length
        return self._tokenizer

    @property
    def max_length(self) -> int | None:
        """Left-truncation length of token-id prompts (as given, else the tokenizer directory's; None: no tokenizer)."""
        self.tokenizer  # noqa: B018 - sets the default from the tokenizer directory
        return self._max_length

    # --- BOS: settable on the token-id path, the server's choice on the text path ------------------------------
    @property
    def add_bos_token(self) -> bool:
        """Whether prompts start with BOS: as set on the token-id path, the server's choice on the text path."""
        p = self.probe()
        return bool(p.text_bos) if p.prompt_form == "text" else self._bos

    @add_bos_token.setter
    def add_bos_token(self, value: bool) -> None:
        """Set BOS for token-id prompts; AttributeError when a text-prompt server does otherwise."""
        p = self.probe()
        if p.prompt_form == "text" and bool(value) != bool(p.text_bos):
            raise AttributeError(
                f"{self._where()} {'prepends' if p.text_bos else 'does not prepend'} BOS to text prompts"
            )
        self._bos = bool(value)

    # --- identity -----------------------------------------------------------------------------------------
    @property
    def base_urls(self) -> list[str]:
        """The servers' URLs (no credentials, no query)."""
        return list(self.options.urls)

    def _where(self) -> str:
        """The servers for messages: public URLs, comma-separated."""
        return ", ".join(self.options.public_urls)

    @property
    def identity(self) -> dict[str, Any]:
        """Model id, servers (no credentials), prompt form, tokenizer, BOS, truncation, endpoints: run cards; for
        servers thai-eval started itself, the engine, its version and flags (``engine``, keyed) and where they ran
        (``engine_launch``, not keyed; :func:`.engines.launched_identity`)."""
        p = self.probe()
        ident: dict[str, Any] = {
            "name": self.name,
            "source": "openai-compatible completions",
            "model_id": self.model_id,
            "base_urls": self.options.public_urls,
            "loglikelihood": f"/v1/completions echo, prompt as {p.prompt_form}"
            if p.prompt_form
            else f"refused: {p.refusal}",
            "generate_endpoint": "/v1/completions" if p.completions else "/v1/chat/completions",
            "chat_endpoint": "/v1/chat/completions",
            **self._tokenizer_id,
        }
        if p.server:
            ident["server"] = p.server
        ident.update(launched_identity(self.model_id, self.options.public_urls))
        if not self.order_probe or self._order is not None:
            ident["order_probe"] = self._order.identity if self._order is not None else dict(SKIPPED)
        if self.sampling_overrides:
            ident["sampling_overrides"] = self.sampling_overrides
        if p.prompt_form == "token ids":
            ident.update(add_bos_token=self._bos, max_length=self.max_length)
        elif p.prompt_form == "text":
            ident.update(add_bos_token=bool(p.text_bos), boundary=TEXT_BOUNDARY_RULE)
        return ident

    @property
    def sampling_overrides(self) -> dict[str, float]:
        """Extra fields sent with every generation request to undo the server's sampling defaults
        (:data:`NEUTRAL_SAMPLING`)."""
        return dict(NEUTRAL_SAMPLING.get(self.probe().server or "", {}))

    def __repr__(self) -> str:
        return f"ServedModel({self.model_id!r}, base_url={self._where()!r})"

    # --- probe ------------------------------------------------------------------------------------------
    def probe(self) -> ProbeResult:
        """Probe the servers once (model ids, echo log-probabilities, tokenizer agreement, prompt form)."""
        if self._probe is None:
            prober = Prober(self.model_id, self.tokenizer, self._tokenizer_spec, self.prompt, self._bos_wanted)
            pool = self._pool()

            async def go() -> ProbeResult:
                async with pool:
                    return await prober.run(pool)

            self._probe = run_sync(go)
        return self._probe

    def check_order(self) -> OrderProbeResult | None:
        """Run the request-order probe once (:mod:`.order_probe`): :class:`~.order_probe.OrderDependentError`
        when a log-likelihood changes with the order of the requests; None when skipped (``order_probe=False``)
        or the servers cannot score."""
        if not self.order_probe or self.probe().prompt_form is None:
            return None
        if self._order is None:
            try:  # the requests in order, then reversed
                forward, backward = (self._scoring_jobs(list(r)) for r in (ORDER_PROBE_REQUESTS, REVERSED_REQUESTS))
            except ThaiEvalError as exc:  # e.g. a max_length shorter than the probe's continuations
                raise ModelLoadError(f"order probe of {self._where()}: {exc}; order_probe=False skips it") from None
            self._order = run_order_probe(
                self._pool(),
                forward,
                backward,
                self.order_tolerance,
                model_id=self.model_id,
                server_kind=self.probe().server,
            )
        return self._order

    #: called before a log-likelihood run writes its card (:func:`thai_eval_utils.core.protocols.prepare_loglikelihood`)
    prepare_loglikelihood = check_order

    @property
    def concurrency(self) -> int:
        """Requests in flight per replica: as given, else 8 (token ids) or 1 (text prompts, see the class doc)."""
        if self.options.concurrency is not None:
            return int(self.options.concurrency)
        p = self._probe
        return 1 if p is not None and p.prompt_form == "text" else DEFAULT_CONCURRENCY

    def _pool(self) -> Pool:
        """A fresh pool of this model's servers (entered inside one event loop)."""
        return Pool(self.options, self.concurrency, self.deadline)

    # --- scoring ----------------------------------------------------------------------------------------
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        """lm-eval's contract: summed log-probability of each continuation and whether it is the greedy output."""
        requests = [(str(c), str(x)) for c, x in requests]
        if not requests:
            return []
        p = self.probe()
        if p.prompt_form is None:
            raise ThaiEvalError(f"served model {self.model_id!r} cannot score log-likelihoods: {p.refusal}")
        self.check_order()
        jobs, groups = self._scoring_jobs(requests)
        results: list[tuple[float, bool]] = [(0.0, True)] * len(requests)
        pool = self._pool()

        async def go() -> list[Any]:
            async with pool:
                return await pool.run(jobs, desc="loglikelihood", progress=progress, weights=[len(g) for g in groups])

        try:
            outputs = run_sync(go)
        finally:
            for r in pool.replicas:
                self.observed["replicas"][r.public] = self.observed["replicas"].get(r.public, 0) + r.served
        straddled = 0
        for group, out in zip(groups, outputs):
            for i, (ll, greedy, cut) in zip(group, out):
                results[i] = (ll, greedy)
                straddled += cut
        if straddled:
            self.observed["straddled"] += straddled
            warnings.warn(
                f"{straddled} request(s) had a token straddling the context/continuation boundary; "
                f"scored with the continuation ({TEXT_BOUNDARY_RULE})",
                stacklevel=2,
            )
        return results

    def _scoring_jobs(self, requests: list[tuple[str, str]]):
        """(jobs, groups) scoring ``requests`` as a run sends them (:func:`~.completions.group_prompts`): token
        ids ``batch_size`` prompts per request; text one document per job, one request per prompt, in turn."""
        if self.probe().prompt_form == "token ids":
            prompts = token_prompts(self.tokenizer, requests, add_bos_token=self._bos, max_length=self.max_length)
            groups = group_prompts(requests, prompts, self.batch_size)
        else:
            prompts = text_prompts(requests)
            groups = group_prompts(requests, prompts, 0)
        return [self._job([prompts[i] for i in g]) for g in groups], groups  # type: ignore[misc]

    def _job(self, batch: list[Prompt]):
        """Token ids: one request holding every prompt of ``batch``. Text: one request per prompt, in order."""
        if batch[0].ids is None:

            async def text_job(client: Any) -> list[tuple[float, bool, bool]]:
                out = []
                for p in batch:
                    resp = await self._complete(client, prompt=p.text, **SCORING_PARAMS)
                    out.append(parse_text_choice(choices_in_order(resp, 1)[0], p))
                return out

            return text_job
        payload = batch[0].payload if len(batch) == 1 else [p.payload for p in batch]

        async def job(client: Any) -> list[tuple[float, bool, bool]]:
            resp = await self._complete(client, prompt=payload, **SCORING_PARAMS)
            return [(*parse_token_choice(c, p), False) for c, p in zip(choices_in_order(resp, len(batch)), batch)]

        return job

    @property
    def _pool_deadline(self) -> float:
        """Overall seconds per request, retries included (as given, else from timeout and retries)."""
        return self.deadline if self.deadline is not None else default_deadline(self.timeout, self.max_retries)

    async def _complete(self, client: Any, **kwargs: Any) -> Any:
        """One ``/v1/completions`` request within the deadline, its reply from the model asked for."""
        resp = await within_deadline(client.completions.create(model=self.model_id, **kwargs), self._pool_deadline)
        check_model(resp, self.model_id)
        return resp

    # --- generation -------------------------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 256,
        stop: Sequence[str] | str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[str]:
        """Raw completion of each prompt through ``/v1/completions`` (token ids with BOS per ``add_bos_token``
        where the server takes them, else text); a server without that endpoint gets one user message each."""
        p = self.probe()
        if not p.completions:
            return self.chat(
                [[{"role": "user", "content": x}] for x in prompts],
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
                stop=stop,
            )
        payloads: list[Any] = list(prompts)
        if p.prompt_form == "token ids":
            room = max(1, self.max_length - max_new_tokens)
            payloads = [self.tokenizer(x, add_special_tokens=self._bos)["input_ids"][-room:] for x in prompts]
        extra = self._sampling_extra(seed, stop)

        def job_for(payload: Any):
            async def job(client: Any) -> str:
                resp = await self._complete(
                    client, prompt=payload, max_tokens=max_new_tokens, temperature=temperature, top_p=top_p, **extra
                )
                text = getattr(choices_in_order(resp, 1)[0], "text", None)
                if not isinstance(text, str):
                    raise MalformedReply("the completion has no text")
                return text

            return job

        texts = self._run([job_for(x) for x in payloads], "generate")
        tags = self.think_stop_tags
        return [
            cut_at_stop(t, stop, think_tags=tags, starts_open=bool(tags) and opens_thinking(x, tags))
            for t, x in zip(texts, prompts)
        ]

    def _sampling_extra(self, seed: int | None, stop: Sequence[str] | str | None) -> dict[str, Any]:
        """Keyword arguments of a generation request beyond the prompt: seed, stop strings, and the server's
        sampling defaults set back to plain decoding (``extra_body``, :data:`NEUTRAL_SAMPLING`)."""
        extra: dict[str, Any] = {"seed": seed} if seed is not None else {}
        if stops := sent_stops(stop, self.think_stop_tags):  # one string is one stop string; none when it thinks
            extra["stop"] = list(stops)
        body = {**(self.sampling_overrides or {}), **thinking_body(self)}
        if body:
            extra["extra_body"] = body
        return extra

    def chat(
        self,
        messages_list: Sequence[list[dict[str, str]]],
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> list[str]:
        """One reply per conversation through ``/v1/chat/completions`` (the server's chat template)."""
        extra = self._sampling_extra(seed, stop)

        def job_for(messages: list[dict[str, str]]):
            async def job(client: Any) -> str:
                resp = await within_deadline(
                    client.chat.completions.create(
                        model=self.model_id,
                        messages=messages,
                        max_tokens=max_new_tokens,
                        temperature=temperature,
                        top_p=top_p,
                        **extra,
                    ),
                    self._pool_deadline,
                )
                choices = getattr(resp, "choices", None)
                if not choices or choices[0].message is None:
                    raise MalformedReply("the chat completion has no choices")
                rejoined = rejoin_reasoning(choices[0].message, self.reasoning_tags)  # the reply whole
                return rejoined if rejoined is not None else (choices[0].message.content or "")

            return job

        texts = self._run([job_for(m) for m in messages_list], "chat")
        return [cut_at_stop(t, stop, think_tags=self.think_stop_tags) for t in texts]

    def _run(self, jobs: list[Any], desc: str) -> list[Any]:
        """Results of ``jobs`` over a fresh pool, in order (a progress bar when there is more than one)."""
        pool = self._pool()

        async def go() -> list[Any]:
            async with pool:
                return await pool.run(jobs, desc=desc, progress=len(jobs) > 1)

        try:
            return run_sync(go)
        except openai.APIError as exc:  # pragma: no cover - the pool converts these
            raise ApiError(f"{self.model_id} at {self._where()}: {describe_error(exc)}", cause=exc) from None
