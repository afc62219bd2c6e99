"""Log-likelihoods from an OpenAI-compatible ``/v1/completions`` endpoint (Thai-H6 spec, "Tokenization of a
(context, continuation) pair"; lm-evaluation-harness 0.4.13 ``lm_eval/models/openai_completions.py`` and
``gguf.py``): the prompt is echoed with ``echo=true, logprobs=1, max_tokens=1, temperature=0`` and the
continuation's log-likelihood is the sum of the echoed log-probabilities of its tokens.

Two prompt forms:

* **token ids** (vLLM, SGLang): the pair is encoded locally exactly as the local engine does
  (:func:`thai_eval_utils.scoring._encode` and ``_fed``: joint encoding, trailing whitespace moved to the
  continuation, optional BOS, left truncation to ``max_length``); the ids fed are lm-eval HFLM's plus the last
  continuation token, so every scored position sees the same tokens as in HFLM;
* **text** (llama-cpp-python): ``context + continuation`` is sent as text (trailing whitespace moved as above);
  the server tokenizes it jointly and the boundary is found from ``text_offset``. A token that straddles the
  boundary (starts in the context, ends in the continuation) is scored with the continuation
  (:data:`TEXT_BOUNDARY_RULE`). lm-eval 0.4.13's ``gguf`` backend does the opposite: ``get_result`` starts the
  continuation at the first token whose offset is >= len(context), so a straddling token is left out.

``is_greedy``: every continuation token's log-probability is at least the top log-probability at its position
(lm-eval's ``openai_completions.parse_logprobs`` compares the values too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.core.loglikelihood import _encode, _fed
from thai_eval_utils.core.served.replicas import MalformedReply

#: Recorded in the model identity: how the text path splits context and continuation.
TEXT_BOUNDARY_RULE = "text_offset; a token straddling the boundary is scored with the continuation"
#: Sent with every scoring request (never max_tokens=0: llama-cpp-python reads 0 as "no limit").
SCORING_PARAMS: dict[str, Any] = {"echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0.0}


@dataclass(frozen=True)
class Prompt:
    """One scoring prompt: token ids (``n_ctx`` of them context) or text (``boundary`` characters context)."""

    ids: tuple[int, ...] | None = None
    n_ctx: int = 0
    text: str | None = None
    boundary: int = 0

    @property
    def payload(self) -> list[int] | str:
        return list(self.ids) if self.ids is not None else self.text  # type: ignore[return-value]


def token_prompts(tokenizer: Any, requests: Sequence[tuple[str, str]], *, add_bos_token: bool,
                  max_length: int) -> list[Prompt | None]:
    """The id prompt of each request (None: empty continuation, scored ``(0.0, True)`` like the local engine)."""
    seqs, targets = _fed(_encode(tokenizer, requests, add_bos_token), max_length)
    out: list[Prompt | None] = []
    for seq, cont in zip(seqs, targets):
        if seq is None:
            out.append(None)
            continue
        ids = tuple(seq) + (cont[-1],)
        out.append(Prompt(ids=ids, n_ctx=len(ids) - len(cont)))
    return out


def text_prompts(requests: Sequence[tuple[str, str]]) -> list[Prompt | None]:
    """The text prompt of each request, trailing whitespace of the context moved to the continuation."""
    out: list[Prompt | None] = []
    for i, (ctx, cont) in enumerate(requests):
        if ctx == "":
            raise ThaiEvalError(f"request {i}: an empty context cannot be scored through a text-only completions "
                                "server (the server, not lm-eval's rule, would choose the first token's context)")
        n = len(ctx) - len(ctx.rstrip())
        if n:
            ctx, cont = ctx[:-n], ctx[-n:] + cont
        out.append(Prompt(text=ctx + cont, boundary=len(ctx)) if cont else None)
    return out


def _logprobs(choice: Any) -> dict[str, Any]:
    """The choice's ``logprobs`` as a dict with the four OpenAI fields; MalformedReply if absent."""
    lp = getattr(choice, "logprobs", None) if not isinstance(choice, dict) else choice.get("logprobs")
    if lp is None:
        raise MalformedReply("the reply has no logprobs")
    if not isinstance(lp, dict):
        lp = lp.model_dump() if hasattr(lp, "model_dump") else dict(lp)
    for key in ("token_logprobs", "top_logprobs"):
        if not isinstance(lp.get(key), list):
            raise MalformedReply(f"logprobs.{key} is missing")
    return lp


def _score(values: list[Any], tops: list[Any], where: str) -> tuple[float, bool]:
    ll, greedy = 0.0, True
    for v, top in zip(values, tops):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v) or v > 1e-3:
            raise MalformedReply(f"{where}: a continuation token has log-probability {v!r}")
        if not isinstance(top, dict) or not top:
            raise MalformedReply(f"{where}: a continuation token has no top_logprobs")
        ll += float(v)
        greedy = greedy and float(v) >= max(float(x) for x in top.values())
    return ll, greedy


def parse_token_choice(choice: Any, prompt: Prompt) -> tuple[float, bool]:
    """(ll, is_greedy) of an id prompt from its echoed choice: positions ``n_ctx .. len(ids)-1``."""
    lp = _logprobs(choice)
    values, tops, n = lp["token_logprobs"], lp["top_logprobs"], len(prompt.ids or ())
    if len(values) < n or len(tops) < n:
        raise MalformedReply(f"{len(values)} echoed log-probabilities for a prompt of {n} tokens")
    return _score(values[prompt.n_ctx:n], tops[prompt.n_ctx:n], "token prompt")


def text_split(offsets: list[int], text_len: int, boundary: int) -> tuple[int, int, bool]:
    """(first continuation token, number of prompt tokens, whether the first straddles the boundary).

    Prompt tokens are those starting before ``text_len`` (the generated token starts at ``text_len``); a token
    belongs to the continuation when it starts at or after ``boundary`` or ends after it.
    """
    n_prompt = sum(1 for o in offsets if o < text_len)
    if any(b < a for a, b in zip(offsets, offsets[1:])) or (offsets and offsets[0] < 0):
        raise MalformedReply("text_offset is not increasing")
    ends = offsets[1:n_prompt] + [text_len]
    for i in range(n_prompt):
        if offsets[i] >= boundary or ends[i] > boundary:
            return i, n_prompt, offsets[i] < boundary
    raise MalformedReply(f"no echoed token covers the continuation (boundary at character {boundary} of {text_len})")


def parse_text_choice(choice: Any, prompt: Prompt) -> tuple[float, bool, bool]:
    """(ll, is_greedy, straddled) of a text prompt from its echoed choice (boundary from ``text_offset``)."""
    lp = _logprobs(choice)
    offsets = lp.get("text_offset")
    if not isinstance(offsets, list) or len(offsets) != len(lp["token_logprobs"]) or not offsets:
        raise MalformedReply("logprobs.text_offset is missing or does not match token_logprobs")
    start, n_prompt, straddled = text_split([int(o) for o in offsets], len(prompt.text or ""), prompt.boundary)
    ll, greedy = _score(lp["token_logprobs"][start:n_prompt], lp["top_logprobs"][start:n_prompt], "text prompt")
    return ll, greedy, straddled


def choices_in_order(resp: Any, n: int) -> list[Any]:
    """The reply's ``n`` choices ordered by ``index``; MalformedReply if any is missing."""
    choices = getattr(resp, "choices", None) if not isinstance(resp, dict) else resp.get("choices")
    if not choices or len(choices) != n:
        raise MalformedReply(f"{len(choices or [])} choices for {n} prompts")
    idx = [getattr(c, "index", None) if not isinstance(c, dict) else c.get("index") for c in choices]
    if sorted(i for i in idx if isinstance(i, int)) != list(range(n)):
        if n == 1:
            return list(choices)
        raise MalformedReply(f"choice indices {idx} do not cover 0..{n - 1}")
    return [c for _, c in sorted(zip(idx, choices), key=lambda t: t[0])]
