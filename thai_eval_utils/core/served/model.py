"""``ServedModel``: a model behind one or more OpenAI-compatible servers (vLLM, SGLang, llama-cpp-python) with
the toolkit's model interface, including Thai-H6's ``loglikelihood`` through ``/v1/completions``
(see :mod:`.completions`) and raw ``generate`` through ``/v1/completions`` (GSM8K, as lm-eval's
``local-completions``); ``chat`` uses ``/v1/chat/completions``.

Before the first request the servers are probed once (:meth:`ServedModel.probe`): every replica must serve the
same model ids including ``model_id``; a scoring request on a short Thai text must echo a log-probability for
every prompt token (llama.cpp's C++ ``llama-server`` returns them only for generated tokens and is refused), and
the echoed tokens must agree with the local tokenizer. The probe also decides the prompt form (token ids where
the server takes them, else text) and, for text, whether the server prepends BOS.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openai

from thai_eval_utils.core.errors import ModelLoadError, ThaiEvalError
from thai_eval_utils.core.openai_client import (
    NEUTRAL_SAMPLING,
    IGNORED_OPTIONS,
    LOCAL_ONLY_OPTIONS,
    PLACEHOLDER_API_KEY,
    ApiError,
    describe_error,
    public_base_url,
    run_sync,
    server_from_owners,
)
from thai_eval_utils.core.provenance import register_secret, split_endpoint
from thai_eval_utils.core.served.completions import (
    SCORING_PARAMS,
    TEXT_BOUNDARY_RULE,
    Prompt,
    check_model,
    choices_in_order,
    parse_text_choice,
    parse_token_choice,
    text_prompts,
    token_prompts,
)
from thai_eval_utils.core.served.replicas import (
    MalformedReply,
    Pool,
    RequestDeadline,
    default_deadline,
    split_base_urls,
    within_deadline,
)
from thai_eval_utils.core.stops import cut_at_stop

SPEC_PREFIX = "completions:"
PROMPT_FORMS = ("auto", "tokens", "text")
#: Probe text: Thai with spaces, digits and a line break (what Thai-H6 prompts contain); written for this check.
#: Kept short: llama-cpp-python spends ~0.6 s per echoed token on Gemma 3's 262k vocabulary (2 CPU cores).
PROBE_TEXT = "ถาม: น้ำเดือด\nตอบ: 100 องศา"
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 600.0  # a long prompt's echo on a CPU server takes minutes
DEFAULT_MAX_RETRIES = 3


@dataclass
class ProbeResult:
    """What the probe found: the prompt form, the server's BOS on text prompts, served ids, completions."""

    prompt_form: str | None = None  # "token ids" / "text" / None (no usable echo: loglikelihood refused)
    text_bos: bool | None = None
    served_models: list[str] = field(default_factory=list)
    completions: bool = True
    refusal: str | None = None
    server: str | None = None  # the server software, when its /v1/models entries name it (SERVER_BY_OWNER)


def _pieces_agree(server: list[str], local: list[str]) -> bool:
    """Echoed token strings against local ones: same count, and equal (stripped) wherever both are whole text."""
    if len(server) != len(local):
        return False
    return all(s.strip() == t.strip() for s, t in zip(server, local) if s and t and "\ufffd" not in s + t)


class ServedModel:
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
        api_key: default ``$OPENAI_API_KEY`` or a placeholder; never recorded.
    """

    def __init__(self, model_id: str, *, base_url: str | Sequence[str] | None = None, api_key: str | None = None,
                 tokenizer: str | Path | None = None, prompt: str = "auto", max_length: int | None = None,
                 add_bos_token: bool | None = None, batch_size: int = 16, concurrency: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_retries: int = DEFAULT_MAX_RETRIES, name: str | None = None,
                 deadline: float | None = None, **options: Any) -> None:
        for key, value in options.items():
            if key in IGNORED_OPTIONS:
                continue
            if key not in LOCAL_ONLY_OPTIONS:
                raise TypeError(f"ServedModel got an unknown option {key!r}")
            if value != LOCAL_ONLY_OPTIONS[key]:
                raise ModelLoadError(f"option {key}={value!r} applies to local weights only, not to the served model {model_id!r}")
        if not model_id:
            raise ModelLoadError("a served model needs its id, e.g. 'completions:google/gemma-3-270m'")
        if prompt not in PROMPT_FORMS:
            raise ValueError(f"prompt must be one of {PROMPT_FORMS}, not {prompt!r}")
        if prompt == "tokens" and tokenizer is None:
            raise ModelLoadError("prompt='tokens' needs a tokenizer (tokenizer='embedded' or a local HF directory)")
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not url:
            raise ModelLoadError(f"served model {model_id!r} needs base_url (the server's URL, e.g. http://127.0.0.1:8000/v1)")
        if batch_size < 1 or (concurrency is not None and concurrency < 1):
            raise ValueError("batch_size and concurrency must be >= 1")
        self.model_id, self.name = model_id, name or model_id
        # credentials never stay in a URL: each replica's userinfo and credential query parameters (Azure style
        # ?api-key=) are removed and registered as secrets, and the URL's credential is the Bearer key when no
        # api_key is given (as ApiModel does); other query parameters are sent with every request
        try:
            endpoints = [split_endpoint(u) for u in split_base_urls(url)]
        except ValueError as exc:
            raise ModelLoadError(str(exc)) from None
        self.base_urls, self._queries = [e.url for e in endpoints], [e.query for e in endpoints]
        self._key_header = next((e.key_header for e in endpoints if e.key_header), None)
        key = api_key or next((e.key for e in endpoints if e.key), None) or os.environ.get("OPENAI_API_KEY")
        register_secret(key)
        self._api_key = key or PLACEHOLDER_API_KEY
        self.prompt, self.batch_size = prompt, int(batch_size)
        self._concurrency = concurrency
        self.timeout, self.max_retries = float(timeout), int(max_retries)
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
        #: Filled in by calls (not part of the identity): per-replica request counts, straddling tokens, usage.
        self.observed: dict[str, Any] = {"straddled": 0, "replicas": {}}

    # --- tokenizer ----------------------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        """The local tokenizer (loaded on first use), or None."""
        if self._tokenizer is None and self._tokenizer_spec is not None:
            from transformers import AutoTokenizer

            spec = str(self._tokenizer_spec)
            if spec == "embedded":
                from ..models import embedded_model_dir

                path = embedded_model_dir()
            else:
                path = Path(spec).expanduser()
                if not path.is_dir():
                    raise ModelLoadError(f"tokenizer directory not found: {path}")
            self._tokenizer = AutoTokenizer.from_pretrained(path)
            files = sorted(p for p in path.iterdir() if p.name.startswith("tokenizer") or p.name == "config.json")
            h = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files))
            self._tokenizer_id = {"tokenizer": spec if spec == "embedded" else str(path.resolve()),
                                  "tokenizer_sha256": h.hexdigest()[:16]}
            if self._max_length is None:
                from transformers import AutoConfig

                from ..local_model import default_max_length

                try:
                    cfg = AutoConfig.from_pretrained(path)
                except (OSError, ValueError):
                    cfg = None
                self._max_length = default_max_length(SimpleNamespace(config=cfg), self._tokenizer) if cfg else 2048
        return self._tokenizer

    @property
    def max_length(self) -> int | None:
        self.tokenizer  # noqa: B018 - sets the default from the tokenizer directory
        return self._max_length

    # --- BOS: settable on the token-id path, the server's choice on the text path ------------------------------
    @property
    def add_bos_token(self) -> bool:
        p = self.probe()
        return bool(p.text_bos) if p.prompt_form == "text" else self._bos

    @add_bos_token.setter
    def add_bos_token(self, value: bool) -> None:
        p = self.probe()
        if p.prompt_form == "text" and bool(value) != bool(p.text_bos):
            raise AttributeError(f"{self._where()} {'prepends' if p.text_bos else 'does not prepend'} BOS to text prompts")
        self._bos = bool(value)

    # --- identity -----------------------------------------------------------------------------------------
    def _where(self) -> str:
        return ", ".join(public_base_url(u) for u in self.base_urls)

    @property
    def identity(self) -> dict[str, Any]:
        """Model id, servers (no credentials), prompt form, tokenizer, BOS, truncation, endpoints: run cards."""
        p = self.probe()
        ident: dict[str, Any] = {
            "name": self.name, "source": "openai-compatible completions", "model_id": self.model_id,
            "base_urls": [public_base_url(u) for u in self.base_urls],
            "loglikelihood": f"/v1/completions echo, prompt as {p.prompt_form}" if p.prompt_form else f"refused: {p.refusal}",
            "generate_endpoint": "/v1/completions" if p.completions else "/v1/chat/completions",
            "chat_endpoint": "/v1/chat/completions",
            **self._tokenizer_id,
        }
        if p.server:
            ident["server"] = p.server
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
            tok = self.tokenizer
            self._probe = run_sync(lambda: self._probe_async(tok))
        return self._probe

    @property
    def concurrency(self) -> int:
        """Requests in flight per replica: as given, else 8 (token ids) or 1 (text prompts, see the class doc)."""
        if self._concurrency is not None:
            return int(self._concurrency)
        p = self._probe
        return 1 if p is not None and p.prompt_form == "text" else DEFAULT_CONCURRENCY

    def _pool(self) -> Pool:
        return Pool(self.base_urls, self._api_key, self.concurrency, self.timeout, self.max_retries, self.deadline,
                    self._queries, self._key_header)

    async def _probe_async(self, tok: Any) -> ProbeResult:
        result = ProbeResult()
        async with self._pool() as pool:
            result.served_models = await pool.check_model(self.model_id)
            owners = {o for r in pool.replicas for o in r.owned_by}
            result.server = server_from_owners(owners)
            for r in pool.replicas:
                got = await self._probe_calls(r.client, tok, r.public, pool.deadline)
                try:
                    self._probe_replica(result, r.public, got)
                except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # odd types in the echo
                    raise ModelLoadError(f"{r.public}: malformed probe reply ({type(exc).__name__}: {exc})"[:600]) from None
        if result.prompt_form == "text" and self._bos_wanted is not None and bool(self._bos_wanted) != result.text_bos:
            raise ModelLoadError(f"{self._where()} {'prepends' if result.text_bos else 'does not prepend'} BOS to text "
                                 f"prompts, so add_bos_token={self._bos_wanted} cannot be honoured; pass "
                                 f"add_bos_token=None to accept the server's choice, or serve with vLLM/SGLang (token ids)")
        return result

    async def _probe_calls(self, client: Any, tok: Any, where: str, deadline: float | None) -> dict[str, Any]:
        """Raw probe replies of one replica: ``ids`` (token-id prompt), ``text`` (text prompt), errors."""
        out: dict[str, Any] = {}

        async def call(payload: Any, retries: int | None = None) -> Any:
            c = client if retries is None else client.with_options(max_retries=retries)
            try:
                resp = await within_deadline(c.completions.create(model=self.model_id, prompt=payload, **SCORING_PARAMS),
                                             deadline)
                check_model(resp, self.model_id)
            except (RequestDeadline, MalformedReply) as exc:
                raise ModelLoadError(f"probe of {where} failed: {exc}") from None
            return resp

        try:
            out["text"] = await call(PROBE_TEXT)
        except openai.NotFoundError as exc:
            out["no_completions"] = describe_error(exc)
            return out
        except openai.APIError as exc:
            raise ModelLoadError(f"probe of {where} failed: {describe_error(exc)}") from exc
        if tok is not None:
            out["local"] = tok(PROBE_TEXT, add_special_tokens=False)["input_ids"]
        if tok is not None and self.prompt in ("auto", "tokens"):
            try:  # a server that takes only text answers 400/422 (llama-cpp-python: 500 with validation errors)
                out["ids"] = await call(list(out["local"]), retries=0)
            except openai.APIStatusError as exc:
                out["ids_refused"] = describe_error(exc)
            except openai.APIError as exc:
                raise ModelLoadError(f"probe of {where} failed: {describe_error(exc)}") from exc
        return out

    def _probe_replica(self, result: ProbeResult, where: str, got: dict[str, Any]) -> None:
        if "no_completions" in got:
            result.completions = False
            result.refusal = f"{where} has no /v1/completions endpoint ({got['no_completions']})"
            return
        form, bos = self._check_text_echo(where, got["text"], got.get("local"))
        if "ids" in got:
            self._check_id_echo(where, got["ids"], got["text"], len(got["local"]))
            form = "token ids"
        elif self.prompt == "tokens":
            raise ModelLoadError(f"{where} does not take token ids as the prompt ({got.get('ids_refused')}); use prompt='text'")
        if result.prompt_form not in (None, form) or (result.text_bos is not None and result.text_bos != bos):
            raise ModelLoadError(f"replicas behave differently ({where}: prompt as {form}, BOS {bos}); refusing to mix them")
        result.prompt_form, result.text_bos = form, bos

    def _echo_fields(self, where: str, resp: Any) -> dict[str, Any]:
        try:
            choice = choices_in_order(resp, 1)[0]
            lp = choice.logprobs
            lp = lp if isinstance(lp, dict) else (lp.model_dump() if lp is not None else {})
        except MalformedReply as exc:
            raise ModelLoadError(f"{where}: malformed probe reply ({exc})") from None
        missing = [k for k in ("tokens", "token_logprobs", "top_logprobs") if not isinstance(lp.get(k), list)]
        if missing:
            raise ModelLoadError(f"{where} returned no {', '.join('logprobs.' + m for m in missing)} for an echoed prompt "
                                 "(echo=true, logprobs=1): it cannot score answer choices. llama.cpp's llama-server gives "
                                 "log-probabilities only for generated tokens; serve the model with vLLM, SGLang or "
                                 "llama-cpp-python instead")
        return lp

    def _check_text_echo(self, where: str, resp: Any, local: list[int] | None) -> tuple[str, bool]:
        lp = self._echo_fields(where, resp)
        offsets, values = lp.get("text_offset") or [], lp["token_logprobs"]
        n_prompt = sum(1 for o in offsets if o < len(PROBE_TEXT)) if offsets else len(values) - 1
        scored = [v for v in values[1:n_prompt] if isinstance(v, (int, float))]
        if n_prompt < 2 or len(scored) < n_prompt - 1:
            raise ModelLoadError(f"{where} echoed log-probabilities for {len(scored)} of {n_prompt} prompt tokens "
                                 "(only generated tokens are scored): it cannot score answer choices. llama.cpp's "
                                 "llama-server does this; serve the model with vLLM, SGLang or llama-cpp-python instead")
        pieces = lp["tokens"][:n_prompt]
        visible_bos = bool(self.tokenizer is not None and pieces and self.tokenizer.bos_token
                           and pieces[0] == self.tokenizer.bos_token)
        if visible_bos:
            pieces = pieces[1:]
        usage = getattr(resp, "usage", None)
        hidden_bos = bool(usage is not None and getattr(usage, "prompt_tokens", 0) == n_prompt + 1)
        if local is not None:
            mine = [self.tokenizer.decode([t]) for t in local]
            if not _pieces_agree(pieces, mine):
                raise ModelLoadError(f"{where} tokenizes the probe text into {len(pieces)} tokens {pieces[:8]}..., the local "
                                     f"tokenizer ({self._tokenizer_spec}) into {len(mine)} {mine[:8]}...: wrong tokenizer "
                                     "for this server; refusing to score")
        if offsets:  # the echoed pieces must sit at their offsets (a byte-level piece may start 1-2 characters on)
            for piece, o in zip(lp["tokens"][:n_prompt], offsets):
                if piece and "\ufffd" not in piece and not (visible_bos and o == 0 and piece == self.tokenizer.bos_token) \
                        and PROBE_TEXT.find(piece, o, o + len(piece) + 2) == -1:
                    raise ModelLoadError(f"{where}: echoed token {piece!r} is not at text_offset {o} of the prompt")
        return "text", visible_bos or hidden_bos

    def _check_id_echo(self, where: str, resp: Any, text_resp: Any, n: int) -> None:
        lp, lp_text = self._echo_fields(where, resp), self._echo_fields(where, text_resp)
        values = lp["token_logprobs"]
        if len(values) < n or any(not isinstance(v, (int, float)) for v in values[1:n]):
            raise ModelLoadError(f"{where} echoed {len(values)} log-probabilities for a prompt of {n} token ids: "
                                 "it cannot score answer choices")
        ids_pieces, text_pieces = lp["tokens"][:n], lp_text["tokens"]
        if self.tokenizer.bos_token and text_pieces and text_pieces[0] == self.tokenizer.bos_token:
            text_pieces = text_pieces[1:]
        if ids_pieces != text_pieces[:n] or len(text_pieces) < n:
            raise ModelLoadError(f"{where}: the local tokenizer's ids of the probe text echo as {ids_pieces[:8]}..., the "
                                 f"server's own tokens are {text_pieces[:8]}...: wrong tokenizer for this server")

    # --- scoring ----------------------------------------------------------------------------------------
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        """lm-eval's contract: summed log-probability of each continuation and whether it is the greedy output."""
        requests = [(str(c), str(x)) for c, x in requests]
        if not requests:
            return []
        p = self.probe()
        if p.prompt_form is None:
            raise ThaiEvalError(f"served model {self.model_id!r} cannot score log-likelihoods: {p.refusal}")
        if p.prompt_form == "token ids":
            prompts = token_prompts(self.tokenizer, requests, add_bos_token=self._bos, max_length=self.max_length)
            size = self.batch_size
        else:
            prompts = text_prompts(requests)
            size = 0  # one document per job, its prompts sent one after the other (one text prompt per request)
        jobs, groups = self._jobs(requests, prompts, size)
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
            warnings.warn(f"{straddled} request(s) had a token straddling the context/continuation boundary; "
                          f"scored with the continuation ({TEXT_BOUNDARY_RULE})", stacklevel=2)
        return results

    def _jobs(self, requests: list[tuple[str, str]], prompts: list[Prompt | None], size: int):
        """Jobs of at most ``size`` prompts; a document's choices (consecutive requests with one context) share a
        job when they fit, documents are packed whole into jobs. ``size`` 0: one job per document."""
        docs: list[list[int]] = []
        for i, pr in enumerate(prompts):
            if pr is None:
                continue
            if docs and requests[docs[-1][-1]][0] == requests[i][0]:
                docs[-1].append(i)
            else:
                docs.append([i])
        if size == 0:
            return [self._job([prompts[i] for i in g]) for g in docs], docs  # type: ignore[misc]
        groups: list[list[int]] = []
        for doc in docs:
            for part in (doc[k:k + size] for k in range(0, len(doc), size)):
                if groups and len(groups[-1]) + len(part) <= size:
                    groups[-1].extend(part)
                else:
                    groups.append(list(part))
        jobs = [self._job([prompts[i] for i in g]) for g in groups]  # type: ignore[misc]
        return jobs, groups

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
        return self.deadline if self.deadline is not None else default_deadline(self.timeout, self.max_retries)

    async def _complete(self, client: Any, **kwargs: Any) -> Any:
        """One ``/v1/completions`` request within the deadline, its reply from the model asked for."""
        resp = await within_deadline(client.completions.create(model=self.model_id, **kwargs), self._pool_deadline)
        check_model(resp, self.model_id)
        return resp

    # --- generation -------------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 256, stop: Sequence[str] | str | None = None,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None) -> list[str]:
        """Raw completion of each prompt through ``/v1/completions`` (token ids with BOS per ``add_bos_token``
        where the server takes them, else text); a server without that endpoint gets one user message each."""
        p = self.probe()
        if not p.completions:
            return self.chat([[{"role": "user", "content": x}] for x in prompts], max_new_tokens=max_new_tokens,
                             temperature=temperature, top_p=top_p, seed=seed, stop=stop)
        payloads: list[Any] = list(prompts)
        if p.prompt_form == "token ids":
            room = max(1, self.max_length - max_new_tokens)
            payloads = [self.tokenizer(x, add_special_tokens=self._bos)["input_ids"][-room:] for x in prompts]
        extra = self._sampling_extra(seed, stop)

        def job_for(payload: Any):
            async def job(client: Any) -> str:
                resp = await self._complete(client, prompt=payload, max_tokens=max_new_tokens,
                                            temperature=temperature, top_p=top_p, **extra)
                text = getattr(choices_in_order(resp, 1)[0], "text", None)
                if not isinstance(text, str):
                    raise MalformedReply("the completion has no text")
                return text

            return job

        texts = self._run([job_for(x) for x in payloads], "generate")
        return [cut_at_stop(t, stop) for t in texts]

    def _sampling_extra(self, seed: int | None, stop: Sequence[str] | str | None) -> dict[str, Any]:
        """Keyword arguments of a generation request beyond the prompt: seed, stop strings, and the server's
        sampling defaults set back to plain decoding (``extra_body``, :data:`NEUTRAL_SAMPLING`)."""
        extra: dict[str, Any] = {"seed": seed} if seed is not None else {}
        if stop:
            extra["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if self.sampling_overrides:
            extra["extra_body"] = self.sampling_overrides
        return extra

    def chat(self, messages_list: Sequence[list[dict[str, str]]], *, max_new_tokens: int = 256,
             temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
             stop: Sequence[str] | str | None = None) -> list[str]:
        """One reply per conversation through ``/v1/chat/completions`` (the server's chat template)."""
        extra = self._sampling_extra(seed, stop)

        def job_for(messages: list[dict[str, str]]):
            async def job(client: Any) -> str:
                resp = await within_deadline(client.chat.completions.create(
                    model=self.model_id, messages=messages, max_tokens=max_new_tokens, temperature=temperature,
                    top_p=top_p, **extra), self._pool_deadline)
                choices = getattr(resp, "choices", None)
                if not choices or choices[0].message is None:
                    raise MalformedReply("the chat completion has no choices")
                return choices[0].message.content or ""

            return job

        texts = self._run([job_for(m) for m in messages_list], "chat")
        return [cut_at_stop(t, stop) for t in texts]

    def _run(self, jobs: list[Any], desc: str) -> list[Any]:
        pool = self._pool()

        async def go() -> list[Any]:
            async with pool:
                return await pool.run(jobs, desc=desc, progress=len(jobs) > 1)

        try:
            return run_sync(go)
        except openai.APIError as exc:  # pragma: no cover - the pool converts these
            raise ApiError(f"{self.model_id} at {self._where()}: {describe_error(exc)}") from exc
