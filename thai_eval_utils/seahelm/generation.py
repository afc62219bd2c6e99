"""How SEA-HELM asks a model for its replies (spec ``seahelm_thai.md`` 3.1-3.2, 4.9): the sampling it sends, the
instruct path (the model's own chat template), the base models' two phases and the ``-logprobs`` path.

SEA-HELM sends only ``seed`` and ``max_tokens`` (and ``stop`` for base models); temperature and top-p are the model's
``generation_config.json`` values, else vLLM's defaults 1.0 / 1.0 (``vllm_serving.py:141-148,185-197``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thai_eval_utils.backend.stops import first_stop
from thai_eval_utils.core.protocols import Model, TokenizingModel
from thai_eval_utils.seahelm.config import BASE_STOP
from thai_eval_utils.seahelm.prompts import Messages, render_base

#: vLLM's SamplingParams defaults (used where the model ships no generation config).
VLLM_TEMPERATURE, VLLM_TOP_P = 1.0, 1.0


@dataclass(frozen=True)
class Sampling:
    """The sampling a run uses, recorded in its config (``asdict``): ``source`` says where it came from."""

    temperature: float
    top_p: float
    source: str

    def options(self, seed: int) -> dict[str, Any]:
        """What a model call is given: the temperature, the top-p and the run's seed."""
        return {"temperature": self.temperature, "top_p": self.top_p, "seed": seed}


def model_sampling(model: Model, *, greedy: bool = False) -> Sampling:
    """The model's own ``generation_config`` temperature / top_p (what vLLM copies in), else vLLM's defaults;
    ``greedy``: temperature 0 (not SEA-HELM's protocol: a quick, deterministic look; recorded)."""
    if greedy:
        return Sampling(0.0, 1.0, "greedy (thai-eval option, not SEA-HELM's)")
    cfg = getattr(getattr(model, "hf_model", None), "generation_config", None)
    if cfg is None:
        return Sampling(VLLM_TEMPERATURE, VLLM_TOP_P, "vLLM defaults (the model ships no generation config here)")
    # vLLM copies only the keys the model's generation_config.json sets (``to_diff_dict``), not transformers' defaults
    given = cfg.to_diff_dict() if hasattr(cfg, "to_diff_dict") else {}
    t, p = given.get("temperature"), given.get("top_p")
    unapplied = sorted(k for k in ("top_k", "min_p", "repetition_penalty") if given.get(k) is not None)
    source = (
        "the model's generation_config (vLLM copies it in)"
        if t is not None or p is not None
        else "vLLM defaults (the model's generation_config sets no temperature or top_p)"
    )
    if unapplied:
        source += f"; not applied by this engine: {', '.join(f'{k}={given[k]}' for k in unapplied)}"
    return Sampling(VLLM_TEMPERATURE if t is None else float(t), VLLM_TOP_P if p is None else float(p), source)


def chat_replies(
    model: Model, conversations: Sequence[Messages], *, max_tokens: int | Sequence[int], seed: int, sampling: Sampling
) -> list[str]:
    """Instruct models: one reply per conversation through the model's own chat template, no system prompt.
    ``max_tokens``: one budget, or one per conversation (a :class:`~thai_eval_utils.core.protocols.
    BudgetPerPromptModel` only: ``seahelm.pooling``)."""
    return model.chat(list(conversations), max_new_tokens=max_tokens, **sampling.options(seed))


def base_prompt(model: Model, messages: Messages) -> str:
    """SEA-HELM's plain template with the tokenizer's BOS (when it defines one)."""
    tok = getattr(model, "tokenizer", None)
    return render_base(messages, getattr(tok, "bos_token", None))


def base_replies(
    model: Model, conversations: Sequence[Messages], *, max_tokens: int, seed: int, sampling: Sampling, answer_tag: str
) -> list[str]:
    """Base models' two phases (``base_model_inference_strategy.py:106-204``): phase 1 up to the answer tag (kept
    in the text); a row that stopped (at the tag, or at EOS) continues with ``stop = "\\n\\n"`` and the tokens left;
    a row that ran out of tokens keeps its phase-1 text. Phase 1 is generated without a stop string and cut after
    the first tag here (the same text for the same seeded row); the continuation is from the text (SEA-HELM
    continues from token ids). The tag is phase 1's stop string: for a model that thinks (``think_stop_tags``, a run's
    ``stop_after_thinking``) only a tag after its thinking block counts, as for every stop string."""
    prompts = [base_prompt(model, m) for m in conversations]
    first = model.generate(prompts, max_new_tokens=max_tokens, **sampling.options(seed))
    phase1, todo = [], []
    tags = getattr(model, "think_stop_tags", None)
    for i, text in enumerate(first):
        at = first_stop(text, [answer_tag], tags) if answer_tag else None
        if at is not None:
            text = text[: at + len(answer_tag)]
        tokenized = model.tokenizer(text, add_special_tokens=False) if isinstance(model, TokenizingModel) else None
        used = None if tokenized is None else len(tokenized.input_ids)
        phase1.append(text)
        left = max_tokens - (used or 0)
        if (at is not None or (used is not None and used < max_tokens)) and left > 0:
            todo.append((i, left))
    out = list(phase1)
    for left in sorted({left for _, left in todo}):
        rows = [i for i, n in todo if n == left]
        more = model.generate(
            [prompts[i] + phase1[i] for i in rows], max_new_tokens=left, stop=list(BASE_STOP), **sampling.options(seed)
        )
        for i, text in zip(rows, more):
            out[i] = phase1[i] + text
    return out


def gold_logprob(
    model: Model, prompt: str, phase1: str, answer_tag: str, gold: str, separator: str = " "
) -> float | None:
    """The ``-logprobs`` path as its configuration describes it (``logprobs_inference_strategy.py:110-231``):
    log P(separator + gold | prompt + phase-1 text up to and including the tag); None (skipped) when phase 1 did not
    reach the tag. SEA-HELM v1.2.1 cannot complete this path (P1); this is what it describes."""
    at = phase1.find(answer_tag)
    if at < 0 or not hasattr(model, "loglikelihood"):
        return None
    ((ll, _),) = model.loglikelihood([(prompt + phase1[: at + len(answer_tag)], separator + gold)], progress=False)
    return float(ll)


def probability(logprob: float | None) -> float:
    """100 x exp(c_i), 0 for a skipped row (``logprob_metric.py:19-74``)."""
    return 0.0 if logprob is None else 100 * math.exp(logprob)
