"""Log-likelihood engine behind ``LocalModel.loglikelihood``: lm-evaluation-harness's HFLM semantics (Thai-H6
spec, "Tokenization of a (context, continuation) pair"), with shared prefixes run once and the output layer
applied only where a continuation token is scored ("Where the reference implementation wastes compute").

Design (hand-written: no maintained library scores lm-eval requests with prefix/KV reuse):

1. every request is encoded exactly as lm-eval 0.4.13 encodes it (:mod:`thai_eval_utils.backend.encoding`: joint
   encoding, trailing whitespace moved to the continuation, optional BOS, left truncation); each distinct string
   is tokenized once;
2. the fed token sequences go into a radix tree (:mod:`thai_eval_utils.backend.prefix_tree`), whose
   ``schedule`` lists the forward calls that run every edge once with a KV cache: whole subtrees (a
   document's context and answer choices, many documents per call) as ONE packed forward of at most
   ``batch_tokens`` tokens with per-token position ids and ancestor masks
   (:mod:`thai_eval_utils.backend.packed_attention`), or, where such masks cannot be expressed, the leaves as a
   padded batch over the repeated cache;
3. :func:`_score_tokens` makes those calls in one loop, each through ``Decoder.model_call`` (the decoder body,
   :mod:`thai_eval_utils.backend.decoder`); only the hidden states of scored positions go through the output
   layer (in the model's dtype, plus final logit soft-capping), at most 128 MiB of logits at a time,
   normalised with a float32 ``log_softmax``.

Any device and dtype (float32, bfloat16, float16), models spread with ``device_map`` included: inputs go to the
input embeddings' device, the scored rows to the output layer's, results come back to the CPU.

Sliding-window layers (Gemma 2/3) stay exact: the cache keeps every key and the masks apply the window over
absolute positions. A one-off self-check per model compares each runner mode with a full forward on short
branching sequences; the reference path (one full forward per request) is the fallback, with a warning.
Results equal lm-eval's up to float32 reassociation noise (the prefix and the choices are computed with other
matrix shapes than lm-eval's one forward per request): ~1e-5 per token on Gemma 3 270M.
"""

from __future__ import annotations

import time
import warnings
import weakref
from collections.abc import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import DynamicCache

from thai_eval_utils.backend.decoder import Decoder, Head, Scores, repeat_cache, tree_supported
from thai_eval_utils.backend.encoding import encode_pairs, fed_tokens, prefix_token_id
from thai_eval_utils.backend.packed_attention import block_attention
from thai_eval_utils.backend.prefix_tree import Node, build_tree, schedule

__all__ = ["loglikelihood_budget", "loglikelihood", "token_loglikelihood"]

_KV_BYTES = 1 << 30  # padded-batch fallback: about 1 GiB of repeated key/value cache per forward
CPU_TOKENS = 2048  # default tokens per forward call on the CPU (measured: docs/benchmarks.md)
CUDA_TOKENS = 4096  # default tokens per forward call on a GPU (not measured yet)
_SELF_CHECK_TOL = {torch.float32: 1e-3, torch.float64: 1e-6}  # other dtypes: 512 x eps (see _self_check_tol)
_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {(dtype, device): runner mode}


# --- running ------------------------------------------------------------------------------------------------
def loglikelihood_budget(model) -> int:
    """Tokens per forward call when ``batch_tokens`` is not given: ``CUDA_TOKENS`` when the input embeddings are
    on a GPU, else ``CPU_TOKENS`` (see docs/benchmarks.md for how they were chosen)."""
    return CUDA_TOKENS if model.get_input_embeddings().weight.device.type == "cuda" else CPU_TOKENS


def _kv_budget(model) -> int:
    """Padded-batch (fallback mode) tokens per call, rows x (cached + new), keeping the repeated KV cache near
    1 GiB."""
    cfg = model.config.get_text_config()
    heads = getattr(cfg, "num_attention_heads", 1)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    per_token = 2 * cfg.num_hidden_layers * kv_heads * head_dim * model.dtype.itemsize
    return int(min(1 << 16, max(2048, _KV_BYTES // per_token)))


def _scored_tree(seqs, targets, offsets: np.ndarray) -> Node:
    """The prefix tree of the fed sequences (None: skipped), each scored position ``(position, target token,
    slot)`` in the node that holds it, and each request counted in the node where it finishes."""
    live = [i for i, s in enumerate(seqs) if s is not None]
    root, terminal = build_tree([seqs[i] for i in live])
    for i, node in zip(live, terminal):
        node.finishing += 1
        n, c = len(seqs[i]), len(targets[i])
        for j in range(c - 1, -1, -1):  # scored positions n-c .. n-1, found on the path back to the root
            p = n - c + j
            while p < node.start:
                node = node.parent
            node.entries.append((p, targets[i][j], int(offsets[i]) + j))
    return root


def _score_tokens(
    model, seqs, targets, budget: int, mode: str, progress: bool = False, desc: str = "loglikelihood"
) -> list[tuple[float, bool]]:
    """``(log_likelihood, is_greedy)`` of continuation tokens ``targets[i]`` after the fed sequence ``seqs[i]``
    (None: an empty continuation): the prefix tree's calls (:func:`~thai_eval_utils.backend.prefix_tree.schedule`,
    runner ``mode`` "tree" or "batch", ``budget`` tokens per call) made one after the other over one cache."""
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)  # request i's tokens are slots offsets[i]..offsets[i+1]-1
    offsets[1:] = np.cumsum([len(t) for t in targets])
    root = _scored_tree(seqs, targets, offsets)
    pbar = tqdm(total=len(seqs), desc=desc, unit="req", disable=not progress)
    pbar.update(sum(1 for s in seqs if s is None))
    decoder, scores = Decoder(model), Scores(Head(model), int(offsets[-1]))
    cache, tokens, t0 = DynamicCache(), 0, time.perf_counter()  # the cache holds one path from the root
    with torch.inference_mode(), block_attention(model):
        for call in schedule(root, budget, mode):
            x = call.inputs()  # ids [rows, length]; scored entries and their rows of the flattened output
            extra = cache.get_seq_length() - call.past
            if extra:  # the keys of a finished subtree (or of the last packed call's subtrees)
                cache.crop(-extra)
            kv = cache
            if call.kind == "batch":  # leaves over the cache repeated per row (none at the root); cache unchanged
                kv = repeat_cache(cache, len(x.ids)) if call.past else None
            hidden = decoder.model_call(x.ids, kv, x.positions, x.segment, x.ancestors)  # [rows, length, hidden]
            scores.add(hidden.reshape(-1, hidden.shape[-1]), x.entries, x.rows)  # [rows * length, hidden]
            tokens += x.tokens
            pbar.set_postfix_str(f"{tokens / max(time.perf_counter() - t0, 1e-9):,.0f} tok/s", refresh=False)
            pbar.update(sum(n.finishing for n in x.done))
        scores.flush()
    pbar.close()
    out = []
    for i in range(len(seqs)):  # float32 sum over the continuation, like lm-eval's logits.sum()
        a, b = int(offsets[i]), int(offsets[i + 1])
        out.append((float(scores.lp[a:b].sum()), bool(scores.greedy[a:b].all())) if b > a else (0.0, True))
    return out


def _self_check_tol(dtype: torch.dtype) -> float:
    """How far the engine may be from the full forward on the self-check's requests (sums over 1-6 tokens) in
    ``dtype``. Reduced precision: 512 x eps (bfloat16 2.0 nat, float16 0.25). Measured on the embedded Gemma 3
    270M in bfloat16 on the CPU: the packed path differs from the full forward by up to 0.66 nat (a single token
    of log-probability -13.8; the full forward itself is 0.56 off float32), while attention masks that let the
    answer choices see each other move four of the five requests by 5.5-10 nat (tests/test_engine_devices.py)."""
    return _SELF_CHECK_TOL.get(dtype, 512 * torch.finfo(dtype).eps)


def _mode(model, budget: int) -> str | None:
    """Once per model/dtype/device: the first runner mode ("tree", then "batch") that equals a full forward on
    short branching sequences (packed leaves, shared trunks, nested prefixes); None: use the reference path."""
    key = (model.dtype, str(model.device))
    seen = _checked.setdefault(model, {})
    if key in seen:
        return seen[key]
    why = "results differ"
    try:
        vocab = model.get_output_embeddings().weight.shape[0]
        base = [(7 + 31 * i) % vocab for i in range(40)]
        seqs = [
            tuple(base[:12]),
            tuple(base[:8] + [(b + 5) % vocab for b in base[8:12]]),
            tuple(base[:5]),
            tuple(base),
            tuple(base[20:30]),
        ]
        targets = [[base[3], base[5]], [base[1], base[2], base[0]], [base[6]], [base[9]] * 6, [base[1], base[2]]]
        slow = _reference_tokens(model, seqs, targets)
        tol = _self_check_tol(model.dtype)
        for mode in (["tree"] if tree_supported(model) else []) + ["batch"]:
            try:
                fast = _score_tokens(model, seqs, targets, budget, mode)
            except Exception as exc:  # noqa: BLE001 - an unsupported model: try the next mode
                why = f"{type(exc).__name__}: {exc}"
                continue
            if all(abs(f[0] - s[0]) <= tol for f, s in zip(fast, slow)):
                seen[key] = mode
                return mode
    except Exception as exc:  # noqa: BLE001 - an unsupported architecture: fall back rather than fail
        why = f"{type(exc).__name__}: {exc}"
    warnings.warn(
        f"log-likelihood engine self-check failed for {type(model).__name__} ({why}); "
        "using the full-forward reference path",
        stacklevel=3,
    )
    seen[key] = None
    return None


def loglikelihood(
    model,
    tokenizer,
    requests: list[tuple[str, str]],
    *,
    add_bos_token: bool = False,
    max_length: int,
    batch_tokens: int | None = None,
    progress: bool = True,
) -> list[tuple[float, bool]]:
    """Summed log-probability of each continuation after its context, and whether it is the greedy output.

    Same numbers as lm-evaluation-harness 0.4.13 ``HFLM.loglikelihood`` up to float32 summation-order noise
    (about 1e-5 per token on Gemma 3 270M; see docs/benchmarks.md), same greedy flags: trailing
    whitespace of the context moves to the continuation; ``whole = encode(ctx + cont)``, ``ctx_ids =
    encode(ctx)``, continuation tokens ``whole[len(ctx_ids):]``, fed ``(ctx_ids + cont_ids)[-(max_length+1):][:-1]``
    (left truncation, with a warning; the continuation is kept whole); an empty context becomes the BOS token
    (EOS if there is none); ``add_bos_token`` encodes with the tokenizer's special tokens (BOS for Gemma/Llama)
    unless the string already starts with the BOS text; score = float32 sum of float32 ``log_softmax`` at the
    continuation positions; greedy = every continuation token is the argmax.

    A continuation that encodes to no tokens (e.g. Winogrande's ``" "`` absorbed by the context) returns
    ``(0.0, True)``, the log-probability of the empty string, with a warning (lm-eval fails an assertion).

    Args:
        model: a transformers causal LM in eval mode (any device and dtype; a ``device_map`` too).
        tokenizer: its tokenizer.
        requests: ``(context, continuation)`` pairs.
        add_bos_token: add the tokenizer's BOS (lm-eval ``add_bos_token``; default off, as the leaderboard ran).
        max_length: the model's context length used for truncation.
        batch_tokens: the token budget of one forward call: packed calls hold at most this many tokens (the
            prefix trees of as many documents as fit), long contexts run in chunks of at most this many (and of
            at most 8,192), padded choice batches (the fallback mode) hold at most this many rows x (cached +
            new). Default :func:`loglikelihood_budget`: ``CPU_TOKENS`` on the CPU, ``CUDA_TOKENS`` on a GPU (the
            fallback mode at least about 1 GiB of repeated key/value cache). Peak memory is the weights plus
            what this budget, ``max_length`` and the 128 MiB logit bound allow (see
            :mod:`thai_eval_utils.backend.decoder`).
        progress: show a tqdm bar with requests and tokens per second.

    Returns:
        ``(log_likelihood, is_greedy)`` per request, in order.

    Raises:
        ThaiEvalError: a non-empty context that encodes to no tokens, or a continuation longer than max_length.
    """
    requests = [(str(c), str(x)) for c, x in requests]
    if not requests:
        return []
    if model.training:
        warnings.warn(
            "the model is in training mode (dropout is active); call model.eval() for lm-eval's numbers", stacklevel=2
        )
    seqs, targets = fed_tokens(encode_pairs(tokenizer, requests, add_bos_token), max_length)
    budget = batch_tokens or loglikelihood_budget(model)
    mode = _mode(model, budget)
    if mode is None:
        return _reference_tokens(model, seqs, targets, progress=progress)
    if mode == "batch" and not batch_tokens:
        budget = max(budget, _kv_budget(model))
    return _score_tokens(model, seqs, targets, budget, mode, progress)


def token_loglikelihood(
    model,
    sequences: Sequence[Sequence[int]],
    *,
    scored_from: Sequence[int] | None = None,
    batch_tokens: int | None = None,
    progress: bool = False,
) -> list[tuple[float, bool]]:
    """Summed log-probability of the tokens of each token sequence from index ``scored_from[i]`` on (default 1:
    every token after the first), each given the tokens before it, and whether all are greedy.

    With the default it is the Thai LLM Leaderboard runner's whole-sequence score (spec thai_llm_leaderboard.md 2.4)
    for sequences no ``(context, continuation)`` string pair encodes to (a tokenizer without BOS and a text starting
    with whitespace, which lm-eval's encoding moves out of the context). A later ``scored_from`` feeds the tokens
    before it as context only, so the output layer runs at the scored positions alone (the leaderboard suite's
    ``sums="labels"``: an item's labels share its prompt, whose terms add the same to every label). Same prefix
    tree, forward calls and float32 sums as :func:`loglikelihood`; a sequence with nothing to score gives (0.0, True).
    """
    starts = [1] * len(sequences) if scored_from is None else [max(1, int(k)) for k in scored_from]
    if len(starts) != len(sequences):
        raise ValueError(f"{len(starts)} scored_from values for {len(sequences)} sequences")
    seqs = [tuple(s[:-1]) if len(s) > k else None for s, k in zip(sequences, starts)]
    targets = [list(s[k:]) for s, k in zip(sequences, starts)]
    budget = batch_tokens or loglikelihood_budget(model)
    mode = _mode(model, budget)
    if mode is None:
        return _reference_tokens(model, seqs, targets, progress=progress)
    if mode == "batch" and not batch_tokens:
        budget = max(budget, _kv_budget(model))
    return _score_tokens(model, seqs, targets, budget, mode, progress)


# --- reference: one full forward per request, like lm-eval (used by the tests and as the fallback) ---------------
def _reference_tokens(model, seqs, targets, *, progress: bool = False) -> list[tuple[float, bool]]:
    """One full forward per fed sequence (the output layer at every position, as lm-eval), then a float32
    log_softmax of the continuation positions."""
    out = []
    for seq, tgt in tqdm(list(zip(seqs, targets)), desc="loglikelihood (reference)", disable=not progress):
        if not tgt:
            out.append((0.0, True))
            continue
        ids = torch.tensor([list(seq)], device=model.get_input_embeddings().weight.device)  # [1, length]
        with torch.inference_mode():
            logits = model(input_ids=ids).logits[0, -len(tgt) :]  # [continuation, vocab]
            logp = torch.log_softmax(logits.float(), dim=-1)
            t = torch.tensor(tgt, device=logp.device)
            out.append((float(logp.gather(1, t[:, None]).sum()), bool((logp.argmax(-1) == t).all())))
    return out


def _reference_loglikelihood(
    model, tokenizer, requests, *, add_bos_token: bool = False, max_length: int
) -> list[tuple[float, bool]]:
    """The straightforward lm-eval procedure, request by request (independent encoding; tests compare to it)."""
    prefix_id = prefix_token_id(tokenizer)
    seqs, targets = [], []
    for ctx, cont in requests:
        if ctx == "":
            cont_ids = tokenizer.encode(cont, add_special_tokens=False)
            ctx_ids = [prefix_id]
            if cont_ids and cont_ids[0] == prefix_id:
                ctx_ids, cont_ids = cont_ids[:1], cont_ids[1:]
        else:
            n = len(ctx) - len(ctx.rstrip())
            if n:
                ctx, cont = ctx[:-n], ctx[-n:] + cont
            bos = tokenizer.decode([prefix_id])
            whole = tokenizer.encode(ctx + cont, add_special_tokens=add_bos_token and not (ctx + cont).startswith(bos))
            ctx_ids = tokenizer.encode(ctx, add_special_tokens=add_bos_token and not ctx.startswith(bos))
            cont_ids = whole[len(ctx_ids) :]
        seqs.append(tuple((ctx_ids + cont_ids)[-(max_length + 1) :][:-1]))
        targets.append(cont_ids)
    return _reference_tokens(model, seqs, targets)
