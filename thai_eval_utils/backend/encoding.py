"""lm-evaluation-harness 0.4.13's encoding of a log-likelihood request (Thai-H6 spec, "Tokenization of a
(context, continuation) pair"; ``lm_eval/api/model.py`` ``TemplateLM.loglikelihood`` and ``_encode_pair``,
``lm_eval/models/huggingface.py`` ``HFLM.tok_encode`` and ``_loglikelihood_tokens``), the one place that owns it:
the local engine (:mod:`.loglikelihood`) and served models (:mod:`.served.completions`) both call it.

The rules:

1. trailing whitespace of the context moves to the start of the continuation (:func:`move_trailing_space`);
2. ``context + continuation`` is encoded jointly and the context alone; the continuation's tokens are the joint
   tokens after the context's (so a token merged across the boundary is the continuation's);
3. with ``add_bos_token`` the tokenizer's special tokens are added, unless the string already starts with BOS;
4. an empty context becomes ``[prefix_token_id]`` (BOS, else EOS), unless the continuation's own first token
   is that token, which then serves as the context;
5. the model is fed ``(context + continuation)[-(max_length + 1):][:-1]`` (left truncation; the continuation
   kept whole) and scored on the continuation's tokens (:func:`fed_tokens`).

:func:`count_tokens` counts what a run of these requests would compute without loading a model (the dry run).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from thai_eval_utils.backend.prefix_tree import tree_positions
from thai_eval_utils.core.errors import ThaiEvalError

__all__ = ["encode_pair", "encode_pairs", "fed_tokens", "move_trailing_space", "prefix_token_id"]


def prefix_token_id(tokenizer: Any) -> int:
    """lm-eval's ``prefix_token_id``: BOS, else EOS; the context of an empty-context request."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def move_trailing_space(context: str, continuation: str) -> tuple[str, str]:
    """``_encode_pair``'s first step: the context's trailing whitespace moved to the start of the continuation."""
    n = len(context) - len(context.rstrip())
    return (context[:-n], context[-n:] + continuation) if n else (context, continuation)


def encode_pairs(
    tokenizer: Any, requests: Sequence[tuple[str, str]], add_bos_token: bool = False
) -> list[tuple[list[int], list[int]]]:
    """(context tokens, continuation tokens) of each ``(context, continuation)`` request, as lm-eval computes them
    (rules 1-4 of the module docstring); each distinct string is tokenized once, in one batch per setting.

    Raises:
        ThaiEvalError: a non-empty context that encodes to no tokens.
    """
    prefix_id = prefix_token_id(tokenizer)
    bos_text = tokenizer.decode([prefix_id]) if add_bos_token else None
    pairs, wanted = [], {True: set(), False: set()}

    def special(s: str) -> bool:  # lm-eval skips add_special_tokens when the string already starts with BOS
        return bool(add_bos_token and not s.startswith(bos_text))

    for ctx, cont in requests:
        if ctx == "":
            pairs.append(("", cont))
            wanted[False].add(cont)
            continue
        ctx, cont = move_trailing_space(ctx, cont)
        pairs.append((ctx, cont))
        wanted[special(ctx)].add(ctx)
        wanted[special(ctx + cont)].add(ctx + cont)
    ids = {}
    for flag, strings in wanted.items():
        strings = sorted(strings)
        if strings:
            ids[flag] = dict(zip(strings, tokenizer(strings, add_special_tokens=flag)["input_ids"]))
    out = []
    for i, (ctx, cont) in enumerate(pairs):
        if ctx == "":  # empty context: BOS/EOS as context unless the continuation already starts with it
            cont_ids = list(ids[False][cont])
            out.append(
                (cont_ids[:1], cont_ids[1:]) if cont_ids and cont_ids[0] == prefix_id else ([prefix_id], cont_ids)
            )
            continue
        whole, ctx_ids = ids[special(ctx + cont)][ctx + cont], ids[special(ctx)][ctx]
        if not ctx_ids:
            raise ThaiEvalError(f"request {i}: context {requests[i][0]!r} encodes to no tokens")
        out.append((list(ctx_ids), list(whole[len(ctx_ids) :])))
    return out


def encode_pair(
    tokenizer: Any, context: str, continuation: str, *, add_bos_token: bool = False
) -> tuple[list[int], list[int]]:
    """lm-eval's ``_encode_pair`` for one request: (context tokens, continuation tokens); see :func:`encode_pairs`."""
    return encode_pairs(tokenizer, [(context, continuation)], add_bos_token)[0]


def fed_tokens(
    encoded: Sequence[tuple[list[int], list[int]]], max_length: int
) -> tuple[list[tuple[int, ...] | None], list[list[int]]]:
    """The token sequence fed per encoded request, ``(ctx + cont)[-(max_length + 1):][:-1]`` (None: empty
    continuation), and the continuation tokens it is scored on; warns once about left truncation and about
    empty continuations.

    Raises:
        ThaiEvalError: a continuation longer than ``max_length``.
    """
    seqs, targets, cut = [], [], []
    for i, (ctx, cont) in enumerate(encoded):
        if len(cont) > max_length:
            raise ThaiEvalError(f"request {i}: continuation of {len(cont)} tokens exceeds max_length {max_length}")
        full = ctx + cont
        if len(full) > max_length + 1:
            cut.append(len(full))
        seqs.append(tuple(full[-(max_length + 1) :][:-1]) if cont else None)
        targets.append(cont)
    if cut:
        warnings.warn(
            f"{len(cut)} of {len(encoded)} requests exceed max_length {max_length} (+1) and were "
            f"left-truncated (longest: {max(cut)} tokens); continuations are kept whole",
            stacklevel=3,
        )
    n_empty = sum(1 for c in targets if not c)
    if n_empty:
        warnings.warn(
            f"{n_empty} continuation(s) encode to no tokens; scored (0.0, True): the log-probability "
            "of an empty string (lm-eval 0.4.13 fails an assertion instead)",
            stacklevel=3,
        )
    return seqs, targets


def count_tokens(
    tokenizer, requests: Sequence[tuple[str, str]], *, add_bos_token: bool = False, max_length: int = 1 << 30
) -> dict[str, int]:
    """What :func:`loglikelihood` would compute for ``requests``, without a model (``thai-eval run --dry-run``):
    ``requests``; ``fed`` tokens as lm-eval feeds them (one forward per request, the sum of every fed sequence's
    length); ``tree`` tokens this engine runs through the decoder body (the edges of the prefix tree over the
    distinct fed sequences, each run once); ``scored`` continuation tokens."""
    requests = [(str(c), str(x)) for c, x in requests]
    if not requests:
        return {"requests": 0, "fed": 0, "tree": 0, "scored": 0}
    with warnings.catch_warnings():  # truncation and empty continuations are the real run's to report
        warnings.simplefilter("ignore")
        seqs, targets = fed_tokens(encode_pairs(tokenizer, requests, add_bos_token), max_length)
    return {
        "requests": len(requests),
        "fed": sum(len(s) for s in seqs if s),
        "tree": tree_positions(seqs),
        "scored": sum(len(t) for t in targets),
    }
