"""Log-likelihood classification as the runner scores it, through thai-eval's log-likelihood engine (spec
thai_llm_leaderboard.md 2.4; ``HFModel.predict_classification`` / ``_get_logprobs``, ``evaluation/model_utils.py:
373-405``).

The runner's number per (item, label): tokenize ``prompt.replace("[LABEL_CHOICE]", label)`` with the tokenizer's
default special tokens (BOS for Gemma/Llama), right-truncate at ``model_max_length - 512`` tokens, and sum the
log-probability of every token but the first. Here each such sequence is one ``model.loglikelihood`` request:

- ``("", text)`` when the tokenizer adds a BOS: lm-eval's encoding (:mod:`thai_eval_utils.backend.encoding`) makes
  an empty context the BOS token and scores every token of the text after it: the runner's sum exactly;
- ``(first-token text, rest)`` when it adds none (Qwen-style): the first token is the context, never scored.

Before any model call, each request's encoding (the engine's own ``encode_pairs``) is checked to be the runner's
token sequence with its first token as the only context token. A sequence no string request reproduces (no BOS and
a prompt starting with whitespace, which lm-eval's encoding moves out of the context; a truncated text that does
not re-encode to the kept tokens) is scored from its token ids by the same engine (``loglikelihood_tokens``, local
models); a model without that is an error naming the item and the label, never a silently different number. The
labels of an item share the whole prompt, so the engine's prefix tree runs the prompt once per item where the
runner runs it once per label.

The argmax is ``np.argmax`` over the label totals (ties: the first label), after the protocol's precision
(:meth:`~.protocol.NLUProtocol.round_sums`).

That is ``sums="whole"``. The default, ``sums="labels"``, makes the same decision with less work: the terms of the
tokens an item's labels share (its prompt) add the same amount to every label, so each label is scored from its
runner token ids after that shared prefix (:func:`label_sums`: the prefix is fed as context, and the output layer,
two thirds of Gemma 3 270M's weights, runs only at the label positions). Its ``lls`` are the label parts; the
runner's totals are those plus one number per item that the runner never writes out (it writes ``Pred`` and
``Gold``), so predictions and every metric are the runner's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from thai_eval_utils.backend.encoding import encode_pairs, prefix_token_id
from thai_eval_utils.core.errors import ThaiEvalError
from thai_eval_utils.thai_llm_leaderboard.prompts import with_label
from thai_eval_utils.thai_llm_leaderboard.protocol import NLUProtocol, truncation_length

Request = tuple[str, str]


def runner_ids(tokenizer: Any, texts: Sequence[str], limit: int | None) -> tuple[list[list[int]], list[bool]]:
    """The runner's token ids of each sequence: default special tokens, right-truncated to ``limit`` tokens
    (``tokenizer(..., truncation=True, max_length=limit)``; ``truncation_side`` right, the transformers default),
    and whether each was cut."""
    full = [list(tokenizer(t)["input_ids"]) for t in texts]
    return [f[:limit] for f in full], [len(f[:limit]) < len(f) for f in full]


def _candidate(tokenizer: Any, ids: list[int], text: str) -> Request:
    """The request whose engine encoding is ``ids``: ``("", text)`` after a BOS; else the shortest text prefix that
    encodes to ``ids[:1]`` as the context (the first token, unscored), the rest as the continuation."""
    if ids and ids[0] == prefix_token_id(tokenizer):
        return "", text
    first = tokenizer.decode(ids[:1])
    ends = ([len(first)] if first and text.startswith(first) else []) + list(range(1, min(len(text), 64)))
    for end in ends:  # the decoded first token's length first; a few short prefixes if that does not re-encode
        if list(tokenizer(text[:end], add_special_tokens=False)["input_ids"]) == ids[:1]:
            return text[:end], text[end:]
    return "", text


@dataclass(frozen=True)
class SequencePlan:
    """How each sequence is scored: ``requests[i]`` (a string request whose engine encoding is the runner's tokens,
    else None: scored from ``ids[i]`` by the model's ``loglikelihood_tokens``), ``ids`` (the runner's tokens after
    truncation; empty without a tokenizer), ``counts`` (scored tokens), ``cut`` (truncated by the runner)."""

    requests: list[Request | None]
    ids: list[list[int]]
    counts: list[int]
    cut: list[bool]


def sequence_requests(
    tokenizer: Any | None, texts: Sequence[str], limit: int | None, *, add_bos_token: bool = False
) -> SequencePlan:
    """One request per sequence, checked against the runner's tokens with the engine's own ``encode_pairs``: kept
    only when it encodes to exactly those tokens with the first as the only context token (else None).

    Without a tokenizer (a model that exposes none) the requests are ``("", text)`` unchecked, counts 0.
    """
    if tokenizer is None:
        return SequencePlan([("", t) for t in texts], [[] for _ in texts], [0] * len(texts), [False] * len(texts))
    wanted, cut = runner_ids(tokenizer, texts, limit)
    candidates = []
    for i, (text, ids) in enumerate(zip(texts, wanted)):
        if cut[i]:  # the runner scores the kept tokens: their text (checked below like every request)
            first = 1 if ids and ids[0] == prefix_token_id(tokenizer) else 0
            text = tokenizer.decode(ids[first:])
        candidates.append(_candidate(tokenizer, ids, text))
    encoded = encode_pairs(tokenizer, candidates, add_bos_token)
    requests: list[Request | None] = [
        req if len(ctx) == 1 and list(ctx) + list(cont) == ids else None
        for req, (ctx, cont), ids in zip(candidates, encoded, wanted)
    ]
    return SequencePlan(requests, wanted, [max(0, len(w) - 1) for w in wanted], cut)


def sequence_sums(model: Any, plan: SequencePlan, names: Sequence[str], progress: bool = False) -> list[float]:
    """Each sequence's summed log-probability: the string requests in one ``model.loglikelihood`` call, the others
    from their token ids in one ``model.loglikelihood_tokens`` call.

    Raises:
        ThaiEvalError: a sequence no string request reproduces, on a model without ``loglikelihood_tokens`` (a served
            model), named by ``names[i]``.
    """
    sums = [0.0] * len(plan.requests)
    text_idx = [i for i, r in enumerate(plan.requests) if r is not None]
    token_idx = [i for i, r in enumerate(plan.requests) if r is None]
    if text_idx:
        results = model.loglikelihood([plan.requests[i] for i in text_idx], progress=progress)
        for i, r in zip(text_idx, results):
            sums[i] = float(r[0])
    if token_idx:
        by_tokens = getattr(model, "loglikelihood_tokens", None)
        if by_tokens is None:
            i = token_idx[0]
            raise ThaiEvalError(
                f"{names[i]}: no (context, continuation) request encodes to the runner's token "
                f"sequence ({len(plan.ids[i])} tokens, first {plan.ids[i][:3]}), and model "
                f"{getattr(model, 'name', model)!r} cannot score token ids (a local model can)"
            )
        for i, r in zip(token_idx, by_tokens([plan.ids[i] for i in token_idx], progress=progress)):
            sums[i] = float(r[0])
    return sums


def shared_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all ``sequences`` share (an item's labels: its prompt, up to where they differ)."""
    return len(os.path.commonprefix([list(s) for s in sequences]))


def label_sums(
    model: Any, ids: Sequence[Sequence[int]], groups: Sequence[int], progress: bool = False
) -> tuple[list[float], list[int], list[int]]:
    """``sums="labels"``: each sequence's terms after the tokens its item's labels share (``groups``: labels per item,
    in order), from its token ids in one ``model.loglikelihood_tokens(..., scored_from=)`` call; (sums, scored
    tokens per sequence, shared tokens per item). The shared terms are the same for every label of the item, so
    ``argmax(label sums) == argmax(whole sums)`` with the same ties, and the output layer runs only at the scored
    positions."""
    starts, shared, at = [], [], 0
    for k in groups:
        d = shared_prefix(ids[at : at + k])
        shared.append(d)
        starts += [max(1, d)] * k
        at += k
    results = model.loglikelihood_tokens(list(ids), scored_from=starts, progress=progress)
    return [float(r[0]) for r in results], [max(0, len(s) - k) for s, k in zip(ids, starts)], shared


def model_limit(model: Any, protocol: NLUProtocol) -> int | None:
    """The runner's truncation length for this model (``model_max_length - 512``, from the weights' config), or None
    (``truncation="none"``, or a model without a config at hand)."""
    config = getattr(getattr(model, "hf_model", None), "config", None)
    if protocol.truncation == "none" or config is None:
        return None
    return truncation_length(config)


def score_batch(
    model: Any, items: Sequence[dict[str, Any]], protocol: NLUProtocol, *, limit: int | None, progress: bool = False
) -> list[dict[str, Any]]:
    """One record per item (:func:`item_record`) from one engine call for the batch (:func:`label_results`).

    ``protocol``: resolved for ``model`` here (:meth:`~.protocol.NLUProtocol.for_model`; a run records the same).
    ``limit``: the runner's truncation length (:func:`model_limit`).
    """
    protocol = protocol.for_model(model)
    results, at, out = label_results(model, items, protocol, limit=limit, progress=progress), 0, []
    for it in items:
        out.append(item_record(it, results[at : at + len(it["labels"])], protocol))
        at += len(it["labels"])
    return out


#: One label's result: its sum, its scored tokens, whether the runner truncated it, its item's shared prefix
#: (``sums="labels"``; None with ``"whole"``).
LabelResult = tuple[float, int, bool, int | None]


def label_results(
    model: Any, items: Sequence[dict[str, Any]], protocol: NLUProtocol, *, limit: int | None, progress: bool = False
) -> list[LabelResult]:
    """Every label of every item, in order, scored in one engine call (``protocol`` already resolved for
    ``model``): the label parts after the item's shared prefix (``sums="labels"``, a tokenizer at hand), else the
    runner's whole sums."""
    pairs = [(it, label) for it in items for label in it["labels"]]
    texts = [with_label(it["prompt"], label) for it, label in pairs]
    tokenizer = getattr(model, "tokenizer", None)
    shared: list[int | None]
    if protocol.sums == "labels" and tokenizer is not None:
        ids, cut = runner_ids(tokenizer, texts, limit)
        results, counts, per_item = label_sums(model, ids, [len(it["labels"]) for it in items], progress)
        shared = [d for it, d in zip(items, per_item) for _ in it["labels"]]
    else:
        plan = sequence_requests(tokenizer, texts, limit, add_bos_token=bool(getattr(model, "add_bos_token", False)))
        names = [f"item {it['key']!r}, label {label!r}" for it, label in pairs]
        results, counts, cut = sequence_sums(model, plan, names, progress), plan.counts, plan.cut
        shared = [None] * len(texts)
    return list(zip(results, counts, cut, shared))


def item_record(item: dict[str, Any], results: Sequence[LabelResult], protocol: NLUProtocol) -> dict[str, Any]:
    """An item's record from its labels' results: ``lls`` (per label, in label order: the runner's float32 totals
    with ``sums="whole"``, the label parts with ``"labels"``), ``sums`` (which), ``pred`` (argmax after the
    protocol's precision; ties -> first), ``correct``, ``tokens`` (scored tokens per label), ``shared_tokens``
    (``"labels"``: the item's shared prefix), ``truncated``."""
    sums = [float(r[0]) for r in results]
    shared = results[0][3] if results else None
    pred = int(np.argmax(protocol.round_sums(np.array(sums))))
    rec = {
        **{k: item[k] for k in ("id", "row", "prompt", "labels", "gold")},
        "lls": sums,
        "sums": "labels" if shared is not None else "whole",
        "pred": pred,
        "correct": int(pred == item["gold"]),
        "tokens": [int(r[1]) for r in results],
        "truncated": any(bool(r[2]) for r in results),
    }
    if shared is not None:
        rec["shared_tokens"] = shared
    return rec


def check_engine(model: Any, protocol: NLUProtocol | None = None) -> int | None:
    """The truncation length this model gets (:func:`model_limit`), failing early when the model cannot score
    log-likelihood requests."""
    if not callable(getattr(model, "loglikelihood", None)):
        raise ThaiEvalError(
            f"model {getattr(model, 'name', model)!r} cannot score log-likelihoods (an API chat model?): "
            "the runner's API path (exact-prefix matching) is not implemented here"
        )
    return model_limit(model, protocol or NLUProtocol())
