"""A local transformers causal LM behind the toolkit's model interface (generate, chat, loglikelihood).

Generation follows lm-evaluation-harness's ``generate_until`` (greedy by default, prompt encoded with BOS
only when ``add_bos_token``, text cut before the first stop string); log-likelihoods are computed by
:func:`thai_eval_utils.core.loglikelihood.loglikelihood`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import StoppingCriteria, StoppingCriteriaList

from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.core.loglikelihood import drive, plan
from thai_eval_utils.core.model_sources import check_dtype, resolve_spec
from thai_eval_utils.core.stops import cut_at_stop


def default_max_length(model: Any, tokenizer: Any) -> int:
    """The context length lm-eval's HF model would use: the model config's, else the tokenizer's, else 2048."""
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(model.config, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        return tok_max
    return 2048


def _on_cpu(device: Any, device_map: Any) -> bool:
    """Whether ``device`` / ``device_map`` put every weight on the CPU (then the default dtype is float32)."""
    if device_map is not None:
        places = device_map.values() if isinstance(device_map, dict) else [device_map]
        return all(str(p).startswith("cpu") for p in places)
    return device is not None and str(device).startswith("cpu")


class _StopOnStrings(StoppingCriteria):
    """Marks a row done once its generated text contains a stop string.

    Written here because transformers' StopStringCriteria preprocesses the whole vocabulary (262k tokens for
    Gemma 3) for every new set of stop strings; decoding each row's new tokens is cheaper at our batch sizes.
    """

    def __init__(self, tokenizer: Any, stop: Sequence[str], prompt_len: int) -> None:
        self.tokenizer, self.stop, self.prompt_len = tokenizer, [s for s in stop if s], prompt_len

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        texts = self.tokenizer.batch_decode(input_ids[:, self.prompt_len :], skip_special_tokens=True)
        done = [any(s in t for s in self.stop) for t in texts]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


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
    """

    def __init__(
        self,
        hf_model: Any,
        tokenizer: Any,
        *,
        name: str,
        identity: dict[str, Any] | None = None,
        max_length: int | None = None,
        add_bos_token: bool = False,
        batch_size: int = 8,
    ) -> None:
        self.hf_model = hf_model.eval()
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.name = name
        self.max_length = int(max_length or default_max_length(hf_model, tokenizer))
        self.add_bos_token = bool(add_bos_token)
        self.batch_size = int(batch_size)
        #: tokens per forward call of ``loglikelihood`` (None: the engine's default for the device)
        self.batch_tokens: int | None = None
        self.identity = {
            **(identity or {"name": name}),
            "class": type(hf_model).__name__,
            "dtype": str(next(hf_model.parameters()).dtype).replace("torch.", ""),
            "device": str(self.device),
            **_spread(hf_model),
            "add_bos_token": self.add_bos_token,
            "max_length": self.max_length,
        }

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
        batch_size: int = 8,
        name: str | None = None,
    ) -> LocalModel:
        """Load ``spec`` (see :func:`thai_eval_utils.core.models.load_model`) on CPU or GPU."""
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
            hf_model, tokenizer, name=name or (identity["name"] if spec != "embedded" else "gemma-3-270m-embedded"),
            identity={"spec": spec, **identity}, max_length=max_length, add_bos_token=add_bos_token,
            batch_size=batch_size,
        )

    @property
    def device(self) -> torch.device:
        return next(self.hf_model.parameters()).device

    # --- log-likelihood -------------------------------------------------------------------------
    def loglikelihood(self, requests: Sequence[tuple[str, str]], *, progress: bool = True) -> list[tuple[float, bool]]:
        """lm-eval's contract: summed log-probability of each continuation and whether it is greedy
        (:func:`thai_eval_utils.core.loglikelihood.loglikelihood`; ``drive`` makes the decoder's forward calls)."""
        return drive(plan(self.hf_model, self.tokenizer, requests, add_bos_token=self.add_bos_token,
                          max_length=self.max_length, batch_tokens=self.batch_tokens, progress=progress))

    # --- generation -----------------------------------------------------------------------------
    def _encode_prompts(self, prompts: Sequence[str], add_special_tokens: bool, room: int) -> list[list[int]]:
        encoded = []
        for p in prompts:
            ids = self.tokenizer(p, add_special_tokens=add_special_tokens).input_ids
            if len(ids) > room:
                warnings.warn(f"prompt of {len(ids)} tokens left-truncated to {room} (max_length {self.max_length})", stacklevel=3)
                ids = ids[-room:]
            encoded.append(ids)
        return encoded

    @torch.inference_mode()
    def _generate_batch(self, batch: list[list[int]], max_new_tokens: int, stop: Sequence[str] | None,
                        sample: dict[str, Any]) -> list[str]:
        width = max(len(ids) for ids in batch)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in batch], device=self.device)  # (B, T)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=self.device)
        criteria = StoppingCriteriaList([_StopOnStrings(self.tokenizer, stop, width)]) if stop else None
        out = self.hf_model.generate(
            input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens,
            stopping_criteria=criteria, pad_token_id=pad, **sample,
        )
        texts = self.tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
        return [cut_at_stop(t, stop) for t in texts]

    def _generate_ids(self, encoded: list[list[int]], *, max_new_tokens: int, stop: Sequence[str] | None,
                      temperature: float, top_p: float, seed: int | None, desc: str) -> list[str]:
        if temperature and temperature > 0:
            sample = {"do_sample": True, "temperature": float(temperature), "top_p": float(top_p)}
            # Sampled outputs would depend on which prompts share a batch; seeding each prompt alone keeps
            # every item reproducible and a resumed run identical to an uninterrupted one.
            batch_size = 1 if seed is not None else self.batch_size
        else:
            sample = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            batch_size = self.batch_size
        order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))  # similar lengths share a batch
        results: list[str] = [""] * len(encoded)
        bar = tqdm(total=len(encoded), desc=desc, unit="prompt", disable=len(encoded) < 2)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            if seed is not None:
                from transformers import set_seed

                set_seed(seed)
            for i, text in zip(idx, self._generate_batch([encoded[i] for i in idx], max_new_tokens, stop, sample)):
                results[i] = text
            bar.update(len(idx))
        bar.close()
        return results

    def generate(self, prompts: Sequence[str], *, max_new_tokens: int = 256, stop: Sequence[str] | None = None,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None) -> list[str]:
        """Complete each prompt (greedy unless ``temperature`` > 0); text is cut before the first stop string."""
        room = max(1, self.max_length - max_new_tokens)
        encoded = self._encode_prompts(prompts, self.add_bos_token, room)
        return self._generate_ids(encoded, max_new_tokens=max_new_tokens, stop=stop, temperature=temperature,
                                  top_p=top_p, seed=seed, desc="generate")

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """The prompt text of one conversation under the tokenizer's chat template (generation prompt added)."""
        if not self.tokenizer.chat_template:
            raise ThaiEvalError(f"model {self.name!r} has no chat template; set tokenizer.chat_template or use generate()")
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def chat(self, messages_list: Sequence[list[dict[str, str]]], *, max_new_tokens: int = 256,
             temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
             stop: Sequence[str] | None = None) -> list[str]:
        """One assistant reply per conversation, through the tokenizer's chat template."""
        room = max(1, self.max_length - max_new_tokens)
        # The rendered template already starts with BOS where the model wants one.
        encoded = self._encode_prompts([self.render_chat(m) for m in messages_list], False, room)
        return self._generate_ids(encoded, max_new_tokens=max_new_tokens, stop=stop, temperature=temperature,
                                  top_p=top_p, seed=seed, desc="chat")

    def __repr__(self) -> str:
        return (f"LocalModel({self.name!r}, dtype={self.identity['dtype']}, device={self.device}, "
                f"max_length={self.max_length}, add_bos_token={self.add_bos_token})")
