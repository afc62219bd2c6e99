"""Log-likelihoods from an OpenAI-compatible ``/v1/completions`` endpoint (Thai-H6 spec, "Tokenization of a
(context, continuation) pair"; lm-evaluation-harness 0.4.13 ``lm_eval/models/openai_completions.py`` and
``gguf.py``): the prompt is echoed with ``echo=true, logprobs=1, max_tokens=1, temperature=0`` and the
continuation's log-likelihood is the sum of the echoed log-probabilities of its tokens.

Two prompt forms:

* **token ids** (vLLM, SGLang): the pair is encoded locally exactly as the local engine does
  (:func:`thai_eval_utils.backend.encoding.encode_pairs` and ``fed_tokens``: joint encoding, trailing whitespace
  moved to the continuation, optional BOS, left truncation to ``max_length``); the ids fed are lm-eval HFLM's
  plus the last continuation token, so every scored position sees the same tokens as in HFLM;
* **text** (llama-cpp-python): ``context + continuation`` is sent as text (trailing whitespace moved as above, by
  the same ``move_trailing_space``);
  the server tokenizes it jointly and the boundary is found from ``text_offset``. A token that straddles the
  boundary (starts in the context, ends in the continuation) is scored with the continuation
  (:data:`TEXT_BOUNDARY_RULE`). lm-eval 0.4.13's ``gguf`` backend does the opposite: ``get_result`` starts the
  continuation at the first token whose offset is >= len(context), so a straddling token is left out.

``is_greedy``: every continuation token's log-probability is at least the top log-probability at its position
(lm-eval's ``openai_completions.parse_logprobs`` compares the values too).

Nothing of a reply is used before the whole echo is checked (:func:`check_logprobs`, :func:`text_split`,
:func:`check_model`): every prompt token echoed, every log-probability (``top_logprobs`` included) a finite
number <= 0, text offsets covering the prompt. A reply that fails is a :class:`MalformedReply`: retried, then a
named error; never a score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from thai_eval_utils.backend.encoding import encode_pairs, fed_tokens, move_trailing_space
from thai_eval_utils.backend.served.replicas import MalformedReply
from thai_eval_utils.core.errors import ThaiEvalError

#: Recorded in the model identity: how the text path splits context and continuation.
TEXT_BOUNDARY_RULE = "text_offset; a token straddling the boundary is scored with the continuation"
#: Sent with every scoring request (never max_tokens=0: llama-cpp-python reads 0 as "no limit").
SCORING_PARAMS: dict[str, Any] = {"echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0.0}
#: Largest log-probability accepted: a tiny positive value is rounding (a float16 softmax); more is a bad reply.
LOGPROB_TOLERANCE = 1e-3


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


def token_prompts(
    tokenizer: Any, requests: Sequence[tuple[str, str]], *, add_bos_token: bool, max_length: int
) -> list[Prompt | None]:
    """The id prompt of each request (None: empty continuation, scored ``(0.0, True)`` like the local engine)."""
    seqs, targets = fed_tokens(encode_pairs(tokenizer, requests, add_bos_token), max_length)
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
            raise ThaiEvalError(
                f"request {i}: an empty context cannot be scored through a text-only completions "
                "server (the server, not lm-eval's rule, would choose the first token's context)"
            )
        ctx, cont = move_trailing_space(ctx, cont)
        out.append(Prompt(text=ctx + cont, boundary=len(ctx)) if cont else None)
    return out


def group_prompts(requests: Sequence[tuple[str, str]], prompts: Sequence[Prompt | None], size: int) -> list[list[int]]:
    """Request indices per scoring job: at most ``size`` prompts each; a document's choices (consecutive requests
    with one context) share a job when they fit, documents are packed whole into jobs; ``size`` 0: one job per
    document. Requests without a prompt (None: an empty continuation) are in no job."""
    docs: list[list[int]] = []
    for i, pr in enumerate(prompts):
        if pr is None:
            continue
        if docs and requests[docs[-1][-1]][0] == requests[i][0]:
            docs[-1].append(i)
        else:
            docs.append([i])
    if size == 0:
        return docs
    groups: list[list[int]] = []
    for doc in docs:
        for part in (doc[k : k + size] for k in range(0, len(doc), size)):
            if groups and len(groups[-1]) + len(part) <= size:
                groups[-1].extend(part)
            else:
                groups.append(list(part))
    return groups


def _logprobs(choice: Any) -> dict[str, Any]:
    """The choice's ``logprobs`` as a dict with the OpenAI list fields; MalformedReply if absent."""
    lp = getattr(choice, "logprobs", None) if not isinstance(choice, dict) else choice.get("logprobs")
    if lp is None:
        raise MalformedReply("the reply has no logprobs")
    if not isinstance(lp, dict):
        lp = lp.model_dump() if hasattr(lp, "model_dump") else dict(lp)
    for key in ("token_logprobs", "top_logprobs"):
        if not isinstance(lp.get(key), list):
            raise MalformedReply(f"logprobs.{key} is missing")
    return lp


def _logprob(value: Any, what: str) -> float:
    """``value`` as a log-probability: a finite number <= :data:`LOGPROB_TOLERANCE`; MalformedReply otherwise."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value > LOGPROB_TOLERANCE
    ):
        raise MalformedReply(f"{what} is {value!r}, not a finite log-probability <= 0")
    return float(value)


def check_logprobs(values: list[Any], tops: list[Any], n: int) -> None:
    """Every echoed position ``1 .. n-1`` has a log-probability and a non-empty ``top_logprobs`` mapping whose
    values are log-probabilities (:func:`_logprob`); position 0 may be null (nothing predicts it)."""
    if len(values) < n or len(tops) < n:
        raise MalformedReply(f"{min(len(values), len(tops))} echoed log-probabilities for a prompt of {n} tokens")
    for j in range(n):
        if j == 0 and values[0] is None:  # nothing predicts the first token (its top_logprobs null or not)
            continue
        _logprob(values[j], f"token_logprobs[{j}]")
        top = tops[j]
        if not isinstance(top, dict) or not top:
            raise MalformedReply(f"top_logprobs[{j}] is {top!r}, not a non-empty mapping")
        for piece, x in top.items():
            _logprob(x, f"top_logprobs[{j}][{piece!r}]")


def check_model(resp: Any, model_id: str) -> None:
    """The reply names the model asked for (a server behind a router may answer with another); MalformedReply."""
    got = getattr(resp, "model", None) if not isinstance(resp, dict) else resp.get("model")
    if got != model_id:
        raise MalformedReply(f"the reply is from model {got!r}, not {model_id!r}")


def _score(values: list[Any], tops: list[Any]) -> tuple[float, bool]:
    """(sum, is_greedy) of already checked (:func:`check_logprobs`) continuation positions."""
    ll, greedy = 0.0, True
    for v, top in zip(values, tops):
        ll += float(v)
        greedy = greedy and float(v) >= max(float(x) for x in top.values())
    return ll, greedy


def parse_token_choice(choice: Any, prompt: Prompt) -> tuple[float, bool]:
    """(ll, is_greedy) of an id prompt from its echoed choice: positions ``n_ctx .. len(ids)-1``."""
    lp = _logprobs(choice)
    values, tops, n = lp["token_logprobs"], lp["top_logprobs"], len(prompt.ids or ())
    tokens = lp.get("tokens")
    if isinstance(tokens, list) and len(tokens) < n:
        raise MalformedReply(f"{len(tokens)} echoed tokens for a prompt of {n} tokens")
    check_logprobs(values, tops, n)
    return _score(values[prompt.n_ctx : n], tops[prompt.n_ctx : n])


def text_split(offsets: list[Any], tokens: list[Any], text: str, boundary: int) -> tuple[int, int, bool]:
    """(first continuation token, number of prompt tokens, whether the first straddles the boundary).

    Prompt tokens are those starting before ``len(text)`` (a generated token starts at ``len(text)``); a token
    belongs to the continuation when it starts at or after ``boundary`` or ends after it. The echo must cover
    the text (MalformedReply otherwise): offsets are character offsets, non-decreasing, the first 0, strictly
    increasing after a token with text; each token's text sits at its offset and reaches the next token's
    offset (the last prompt token's, the end of the text). The tolerance of 2 characters is llama-cpp-python's:
    it decodes each token alone, dropping the bytes of a character split over two tokens.
    """
    text_len = len(text)
    for j, o in enumerate(offsets):
        if isinstance(o, bool) or not isinstance(o, int) or o < 0:
            raise MalformedReply(f"text_offset[{j}] is {o!r}, not a character offset")
        if not isinstance(tokens[j], str):
            raise MalformedReply(f"tokens[{j}] is {tokens[j]!r}, not text")
    if any(b < a for a, b in zip(offsets, offsets[1:])):
        raise MalformedReply("text_offset is not increasing")
    n_prompt = sum(1 for o in offsets if o < text_len)
    if n_prompt == 0 or offsets[0] != 0:
        raise MalformedReply("the echo does not start at the prompt's first character")
    for j in range(n_prompt):
        piece, o = tokens[j], offsets[j]
        nxt = offsets[j + 1] if j + 1 < n_prompt else text_len
        special = j == 0 and piece and not text.startswith(piece)  # a visible BOS: no text of its own
        if special:
            continue
        if piece and nxt <= o:
            raise MalformedReply(
                f"text_offset repeats after token {j} ({piece!r} at {o}): the echo does not cover the text"
            )
        if nxt > o + len(piece) + 2 or (
            piece and "\ufffd" not in piece and text.find(piece, o, o + len(piece) + 2) < 0
        ):
            raise MalformedReply(
                f"echoed token {j} ({piece!r} at text_offset {o}) does not match the prompt text "
                f"(next offset {nxt} of {text_len}): the echo does not cover the text"
            )
    for i in range(n_prompt):
        end = offsets[i + 1] if i + 1 < n_prompt else text_len
        if offsets[i] >= boundary or end > boundary:
            return i, n_prompt, offsets[i] < boundary
    raise MalformedReply(f"no echoed token covers the continuation (boundary at character {boundary} of {text_len})")


def parse_text_choice(choice: Any, prompt: Prompt) -> tuple[float, bool, bool]:
    """(ll, is_greedy, straddled) of a text prompt from its echoed choice (boundary from ``text_offset``)."""
    lp = _logprobs(choice)
    offsets, tokens = lp.get("text_offset"), lp.get("tokens")
    n = len(lp["token_logprobs"])
    if (
        not isinstance(offsets, list)
        or not offsets
        or len(offsets) != n
        or not isinstance(tokens, list)
        or len(tokens) != n
        or len(lp["top_logprobs"]) != n
    ):
        raise MalformedReply(
            "logprobs.text_offset, tokens, token_logprobs and top_logprobs are not lists of one length"
        )
    start, n_prompt, straddled = text_split(offsets, tokens, prompt.text or "", prompt.boundary)
    check_logprobs(lp["token_logprobs"], lp["top_logprobs"], n_prompt)
    ll, greedy = _score(lp["token_logprobs"][start:n_prompt], lp["top_logprobs"][start:n_prompt])
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
