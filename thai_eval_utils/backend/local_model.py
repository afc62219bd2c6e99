"""A local transformers causal LM behind the toolkit's model interface (generate, chat, loglikelihood).

Generation (:mod:`thai_eval_utils.backend.generation`, continuous batching) follows lm-evaluation-harness's
``generate_until`` (greedy by default, prompt encoded with BOS only when ``add_bos_token``, text cut before the
first stop string); log-likelihoods are computed by
:func:`thai_eval_utils.backend.loglikelihood.loglikelihood`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from thai_eval_utils.backend.generation import (
    LOOKUP_TOKENS,
    GenerationStats,
    generation_budget,
    encode_prompts,
    generate,
)
from thai_eval_utils.backend.loglikelihood import loglikelihood, token_loglikelihood
from thai_eval_utils.backend.model_sources import check_dtype, default_max_length, resolve_spec
from thai_eval_utils.backend.prefill_plan import MIN_SHARED_TOKENS
from thai_eval_utils.backend.stops import cut_at_stop  # noqa: F401  (re-exported: tests import it from here)
from thai_eval_utils.backend.stops import opens_thinking
from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.core.protocols import stop_strings


def _on_cpu(device: Any, device_map: Any) -> bool:
    """Whether ``device`` / ``device_map`` put every weight on the CPU (then the default dtype is float32)."""
    if device_map is not None:
        places = device_map.values() if isinstance(device_map, dict) else [device_map]
        return all(str(p).startswith("cpu") for p in places)
    return device is not None and str(device).startswith("cpu")


def _spread(hf_model: Any) -> dict[str, list[str]]:
    """``{"devices": [...]}`` when a ``device_map`` spread the weights over several devices, else nothing
    (a model on one device keeps the identity, and so the run config ids, it had before)."""
    placed = (getattr(hf_model, "hf_device_map", None) or {}).values()
    places = {f"cuda:{v}" if isinstance(v, int) else str(v) for v in placed}  # accelerate names GPUs by index
    return {"devices": sorted(places)} if len(places) > 1 else {}


class LocalModel:
    """A transformers causal LM with the toolkit's interface.

    Attributes:
        name: display name (used for the results folder slug).
        identity: name, source, revision / weights hash, dtype, device: recorded in run cards.
        hf_model, tokenizer: the transformers objects.
        max_length: context length used for left truncation.
        add_bos_token: prepend BOS when encoding prompts (default False, as the leaderboard ran lm-eval).
        budget_per_prompt: ``generate`` / ``chat`` take one ``max_new_tokens`` per prompt, so a suite can hand the
            engine several tasks' prompts in one call (``seahelm.pooling``).
    """

    budget_per_prompt: bool = True
    #: how this model honours ``think_stop_tags`` (recorded in a run's summary, ``thinking.support``)
    think_stop_method = "engine: no row stops inside an open thinking block; the cut falls after it"

    def __init__(
        self,
        hf_model: Any,
        tokenizer: Any,
        *,
        name: str,
        identity: dict[str, Any] | None = None,
        max_length: int | None = None,
        add_bos_token: bool = False,
    ) -> None:
        self.hf_model = hf_model.eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.name = name
        self.max_length = int(max_length or default_max_length(hf_model.config, tokenizer))
        self.add_bos_token = bool(add_bos_token)
        #: tokens per forward call of ``loglikelihood`` (None: the engine's default for the device)
        self.batch_tokens: int | None = None
        #: KV-cache bytes and rows of ``generate`` / ``chat`` (None: the engine's default for the device)
        self.kv_budget: int | None = None
        self.max_rows: int | None = None
        #: shared prompt prefixes of at least this many tokens are prefilled once per call (0: every prompt whole,
        #: exactly lm-eval's batch-1 prefill; see :mod:`thai_eval_utils.backend.prefill_plan`)
        self.min_shared = MIN_SHARED_TOKENS
        #: the work of the last ``generate`` / ``chat`` call (prompt and generated tokens, decode steps)
        self.last_generation: GenerationStats | None = None
        #: extra keyword arguments of ``apply_chat_template`` (e.g. ``{"enable_thinking": False}``; set for
        #: a run by ``tasks.thinking.apply_to_model``); not in ``identity``: the run's config records the option
        self.chat_template_kwargs: dict[str, Any] = {}
        #: the think tags stop strings wait for (a run's ``stop_after_thinking``, set by ``tasks.thinking.
        #: apply_to_model``): the engine never stops a row inside an open thinking block (``backend.stops``)
        self.think_stop_tags: tuple[str, str] | None = None
        self.identity = {
            **(identity or {"name": name}),
            "class": type(hf_model).__name__,
            "dtype": str(next(hf_model.parameters()).dtype).replace("torch.", ""),
            "device": str(self.device),
            **_spread(hf_model),
            "add_bos_token": self.add_bos_token,
            "max_length": self.max_length,
        }
        self.lookup_tokens = LOOKUP_TOKENS

    @property
    def lookup_tokens(self) -> int:
        """Prompt-lookup proposals per row in greedy generation (0: off; :mod:`thai_eval_utils.backend.generation`);
        recorded in ``identity`` (and so in run cards), outside the config id."""
        return int(self.identity["lookup_tokens"])

    @lookup_tokens.setter
    def lookup_tokens(self, value: int) -> None:
        self.identity["lookup_tokens"] = int(value)

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        dtype: str | torch.dtype | None = None,
        device: str | None = None,
        device_map: str | dict | None = None,
        max_length: int | None = None,
        add_bos_token: bool = False,
        trust_remote_code: bool = False,
        name: str | None = None,
    ) -> LocalModel:
        """Load ``spec`` (see :func:`thai_eval_utils.backend.models.load_model`) on CPU or GPU."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_dtype(dtype)
        if device is not None and device_map is not None:
            raise ValueError(f"give device ({device!r}) or device_map ({device_map!r}), not both")
        path, identity = resolve_spec(spec)
        cuda = torch.cuda.is_available() and not _on_cpu(device, device_map)
        if dtype is None:
            dtype = torch.bfloat16 if cuda else torch.float32
        elif isinstance(dtype, str) and dtype != "auto":
            dtype = getattr(torch, dtype)
        t0 = time.perf_counter()
        kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": trust_remote_code}
        if device_map is not None:
            kwargs["device_map"] = device_map
        hf_model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        if device_map is None:
            hf_model.to(device or ("cuda" if cuda else "cpu"))
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        identity["load_seconds"] = round(time.perf_counter() - t0, 2)
        return cls(
            hf_model,
            tokenizer,
            name=name or (identity["name"] if spec != "embedded" else "gemma-3-270m-embedded"),
            identity={"spec": spec, **identity},
            max_length=max_length,
            add_bos_token=add_bos_token,
        )

    @property
    def concurrency(self) -> int:
        """Prompts the run loops hand ``generate`` / ``chat`` per call: the rows the engine decodes together."""
        return self.max_rows or generation_budget(self.device)[1]

    @property
    def device(self) -> torch.device:
        return next(self.hf_model.parameters()).device

    # --- log-likelihood -------------------------------------------------------------------------
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        """lm-eval's contract: summed log-probability of each continuation and whether it is greedy
        (:func:`thai_eval_utils.backend.loglikelihood.loglikelihood`)."""
        return loglikelihood(
            self.hf_model,
            self.tokenizer,
            requests,
            add_bos_token=self.add_bos_token,
            max_length=self.max_length,
            batch_tokens=self.batch_tokens,
            progress=progress,
        )

    def loglikelihood_tokens(
        self, sequences: Sequence[Sequence[int]], *, scored_from: Sequence[int] | None = None, progress: bool = True
    ) -> list[tuple[float, bool]]:
        """Summed log-probability of each token sequence's tokens from ``scored_from[i]`` on (default: after its
        first) (:func:`thai_eval_utils.backend.loglikelihood.token_loglikelihood`; no truncation here)."""
        return token_loglikelihood(
            self.hf_model, sequences, scored_from=scored_from, batch_tokens=self.batch_tokens, progress=progress
        )

    # --- generation -----------------------------------------------------------------------------
    def _generate_ids(
        self,
        prompts: Sequence[str],
        add_special_tokens: bool,
        *,
        max_new_tokens: int | Sequence[int],
        stop: Sequence[str] | str | None,
        temperature: float,
        top_p: float,
        seed: int | None,
        desc: str,
    ) -> list[str]:
        """Encode (each prompt left-truncated to ``max_length`` minus its budget) and run the engine
        (:func:`thai_eval_utils.backend.generation.generate`); its work is kept in ``last_generation``.
        ``max_new_tokens``: one budget, or one per prompt (each row then gets the text a call of its own gives)."""
        stop = stop_strings(stop)  # one string is one stop string; anything else is refused before any work
        budgets = [int(max_new_tokens)] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
        if len(budgets) != len(prompts):
            raise ValueError(f"{len(budgets)} max_new_tokens for {len(prompts)} prompts")
        encoded = [
            ids
            for p, n in zip(prompts, budgets)
            for ids in encode_prompts(
                self.tokenizer,
                [p],
                add_special_tokens=add_special_tokens,
                room=max(1, self.max_length - n),
                max_length=self.max_length,
            )
        ]
        tags = self.think_stop_tags
        texts, self.last_generation = generate(
            self.hf_model,
            self.tokenizer,
            encoded,
            max_new_tokens=max_new_tokens,
            stop=stop,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            kv_budget=self.kv_budget,
            max_rows=self.max_rows,
            desc=desc,
            min_shared=self.min_shared,
            lookup=self.lookup_tokens,
            think_tags=tags,
            starts_open=[opens_thinking(p, tags) for p in prompts] if tags else None,
        )
        return texts

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int | Sequence[int] = 256,
        stop: Sequence[str] | str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[str]:
        """Complete each prompt (greedy unless ``temperature`` > 0); text is cut before the first stop string
        (``stop``: one string or a list of them). ``max_new_tokens``: one budget, or one per prompt."""
        return self._generate_ids(
            prompts,
            self.add_bos_token,
            max_new_tokens=max_new_tokens,
            stop=stop,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            desc="generate",
        )

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """The prompt text of one conversation under the tokenizer's chat template (generation prompt added)."""
        if not self.tokenizer.chat_template:
            raise ThaiEvalError(
                f"model {self.name!r} has no chat template; set tokenizer.chat_template or use generate()"
            )
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **(self.chat_template_kwargs or {})
        )

    def chat(
        self,
        messages_list: Sequence[list[dict[str, str]]],
        *,
        max_new_tokens: int | Sequence[int] = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        stop: Sequence[str] | str | None = None,
    ) -> list[str]:
        """One assistant reply per conversation, through the tokenizer's chat template; ``max_new_tokens``: one
        budget, or one per conversation (:class:`~thai_eval_utils.core.protocols.BudgetPerPromptModel`)."""
        # The rendered template already starts with BOS where the model wants one.
        return self._generate_ids(
            [self.render_chat(m) for m in messages_list],
            False,
            max_new_tokens=max_new_tokens,
            stop=stop,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            desc="chat",
        )

    def __repr__(self) -> str:
        return (
            f"LocalModel({self.name!r}, dtype={self.identity['dtype']}, device={self.device}, "
            f"max_length={self.max_length}, add_bos_token={self.add_bos_token})"
        )
