"""Log-likelihood engine behind ``LocalModel.loglikelihood``: lm-evaluation-harness's HFLM semantics (Thai-H6
spec, "Tokenization of a (context, continuation) pair"), with shared prefixes run once and the output layer
applied only where a continuation token is scored ("Where the reference implementation wastes compute").

Design (hand-written: no maintained library scores lm-eval requests with prefix/KV reuse):

1. every request is encoded exactly as lm-eval 0.4.13 encodes it (joint encoding, trailing whitespace moved to
   the continuation, optional BOS, left truncation); each distinct string is tokenized once;
2. the fed token sequences go into a radix tree (:mod:`thai_eval_utils._prefix`); every edge is run once
   through the decoder body with a KV cache; an edge's sibling leaves (typically the answer choices of one
   document) run together as one batch over the parent's cache repeated per row, longest first, within a
   token budget; inner edges run one after another, the cache being cropped back after each subtree;
3. only the hidden states of scored positions are projected by the output layer (plus final logit
   soft-capping), a few rows at a time, and normalised with a float32 ``log_softmax``.

Sliding-window layers (Gemma 2/3) stay exact because the cache keeps every key and the model's own mask
builder applies the window over absolute positions. A one-off self-check per model compares the engine with a
full forward on a short sequence and falls back to the reference path (with a warning) if they disagree.
"""

from __future__ import annotations

import inspect
import time
import warnings
import weakref
from collections.abc import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import DynamicCache

from ._prefix import Node, build_tree
from .errors import ThaiEvalError

__all__ = ["loglikelihood"]

_HEAD_BYTES = 1 << 27  # at most 128 MiB of float32 logits per output-layer call (a fixed bound, whatever the length)
_KV_BYTES = 1 << 30  # default token budget: about 1 GiB of key/value cache per forward
_SELF_CHECK_TOL = {torch.float32: 1e-3, torch.float64: 1e-6}  # other dtypes: 0.1 (structural errors are > 1 nat)
_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {(dtype, device): passed}


# --- encoding (lm-eval 0.4.13 TemplateLM.loglikelihood / _encode_pair / HFLM.tok_encode) ----------------------
def _prefix_token_id(tokenizer) -> int:
    """lm-eval's ``prefix_token_id``: BOS, else EOS; the context of an empty-context request."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def _encode(tokenizer, requests: Sequence[tuple[str, str]], add_bos_token: bool) -> list[tuple[list[int], list[int]]]:
    """(context tokens, continuation tokens) per request, as lm-eval computes them; each string encoded once."""
    prefix_id = _prefix_token_id(tokenizer)
    bos_text = tokenizer.decode([prefix_id]) if add_bos_token else None
    pairs, wanted = [], {True: set(), False: set()}

    def special(s: str) -> bool:  # lm-eval skips add_special_tokens when the string already starts with BOS
        return bool(add_bos_token and not s.startswith(bos_text))

    for ctx, cont in requests:
        if ctx == "":
            pairs.append(("", cont))
            wanted[False].add(cont)
            continue
        n_space = len(ctx) - len(ctx.rstrip())
        if n_space:
            ctx, cont = ctx[:-n_space], ctx[-n_space:] + cont
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
            out.append((cont_ids[:1], cont_ids[1:]) if cont_ids and cont_ids[0] == prefix_id
                       else ([prefix_id], cont_ids))
            continue
        whole, ctx_ids = ids[special(ctx + cont)][ctx + cont], ids[special(ctx)][ctx]
        if not ctx_ids:
            raise ThaiEvalError(f"request {i}: context {requests[i][0]!r} encodes to no tokens")
        out.append((list(ctx_ids), list(whole[len(ctx_ids):])))
    return out


def _fed(encoded, max_length: int) -> tuple[list[tuple[int, ...] | None], list[list[int]]]:
    """The token sequence fed per request, ``(ctx + cont)[-(max_length + 1):][:-1]`` (None: empty continuation),
    and the continuation tokens it is scored on; warns once about left truncation."""
    seqs, targets, cut = [], [], []
    for i, (ctx, cont) in enumerate(encoded):
        if len(cont) > max_length:
            raise ThaiEvalError(f"request {i}: continuation of {len(cont)} tokens exceeds max_length {max_length}")
        full = ctx + cont
        if len(full) > max_length + 1:
            cut.append(len(full))
        seqs.append(tuple(full[-(max_length + 1):][:-1]) if cont else None)
        targets.append(cont)
    if cut:
        warnings.warn(f"{len(cut)} of {len(encoded)} requests exceed max_length {max_length} (+1) and were "
                      f"left-truncated (longest: {max(cut)} tokens); continuations are kept whole", stacklevel=3)
    n_empty = sum(1 for c in targets if not c)
    if n_empty:
        warnings.warn(f"{n_empty} continuation(s) encode to no tokens; scored (0.0, True): the log-probability "
                      "of an empty string (lm-eval 0.4.13 fails an assertion instead)", stacklevel=3)
    return seqs, targets


# --- model pieces -----------------------------------------------------------------------------------------------
class _Head:
    """The output layer applied to selected hidden states: lm_head, final logit soft-capping, float32 log_softmax."""

    def __init__(self, model):
        self.proj = model.get_output_embeddings()
        cfg = model.config.get_text_config()
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        self.rows = max(1, _HEAD_BYTES // (4 * self.proj.weight.shape[0]))

    def __call__(self, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor):
        """Log-probability of ``targets[k]`` and whether it is the argmax, at hidden state ``hidden[rows[k]]``;
        each row of ``hidden`` goes through the output layer once."""
        lp = torch.empty(len(rows), dtype=torch.float32)
        greedy = torch.empty(len(rows), dtype=torch.bool)
        for s in range(0, len(hidden), self.rows):
            logits = self.proj(hidden[s:s + self.rows].to(self.proj.weight.device))
            if self.softcap:
                logits = torch.tanh(logits / self.softcap) * self.softcap
            logp = torch.log_softmax(logits.float(), dim=-1)
            sel = ((rows >= s) & (rows < s + self.rows)).nonzero()[:, 0]
            r, t = (rows[sel] - s).to(logp.device), targets[sel].to(logp.device)
            lp[sel] = logp[r, t].cpu()
            greedy[sel] = (logp.argmax(dim=-1)[r] == t).cpu()
        return lp, greedy


class _Body:
    """The decoder body (final norm included) called on token ids with an optional KV cache."""

    def __init__(self, model):
        self.net = model.base_model
        params = inspect.signature(self.net.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self.device = model.device

    def __call__(self, ids: list[list[int]], cache: DynamicCache | None) -> torch.Tensor:
        x = torch.tensor(ids, dtype=torch.long, device=self.device)
        kwargs = {self.cache_kw: cache, "use_cache": True} if cache is not None else {"use_cache": False}
        return self.net(input_ids=x, **kwargs).last_hidden_state


def _repeat_cache(cache: DynamicCache, rows: int) -> DynamicCache:
    """A new cache holding ``cache``'s keys and values repeated over ``rows`` batch rows (``cache`` unchanged)."""
    out = DynamicCache()
    for i, layer in enumerate(cache.layers):
        k, v = layer.keys, layer.values
        out.update(k.expand(rows, *k.shape[1:]), v.expand(rows, *v.shape[1:]), i)
    return out


def _auto_budget(model) -> int:
    """Tokens per forward (rows x (cached + new)) keeping the repeated KV cache near 1 GiB."""
    cfg = model.config.get_text_config()
    heads = getattr(cfg, "num_attention_heads", 1)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    per_token = 2 * cfg.num_hidden_layers * kv_heads * head_dim * model.dtype.itemsize
    return int(min(1 << 16, max(2048, _KV_BYTES // per_token)))


# --- the engine ---------------------------------------------------------------------------------------------------
class _Engine:
    """Runs a radix tree of fed sequences and writes each scored token's log-prob and greedy flag to slots."""

    def __init__(self, model, budget: int, n_slots: int, pbar):
        self.body, self.head, self.budget, self.pbar = _Body(model), _Head(model), budget, pbar
        self.lp = torch.zeros(n_slots, dtype=torch.float32)
        self.greedy = torch.zeros(n_slots, dtype=torch.bool)
        self.queue: list = []
        self.queued = 0
        self.tokens, self.t0 = 0, time.perf_counter()

    def _score(self, hidden: torch.Tensor, entries: list[tuple[int, int, int]], rows: list[int]) -> None:
        """Queue ``entries`` (position, target, slot) whose hidden states are ``hidden[rows[k]]``; the output
        layer runs when enough rows are queued (its weights are read once per ``head.rows`` rows)."""
        if not entries:
            return
        uniq, inv = np.unique(rows, return_inverse=True)  # one output-layer row per distinct position
        self.queue.append((hidden[torch.from_numpy(uniq)].clone(), inv.reshape(-1), entries))
        self.queued += len(uniq)
        if self.queued >= self.head.rows:
            self.flush()

    def flush(self) -> None:
        """Run the output layer on every queued row and store the log-probabilities and greedy flags."""
        if not self.queue:
            return
        base, inv, targets, slots = 0, [], [], []
        for h, i, entries in self.queue:
            inv.append(torch.from_numpy(i + base))
            targets += [t for _, t, _ in entries]
            slots += [s for _, _, s in entries]
            base += len(h)
        lp, greedy = self.head(torch.cat([h for h, _, _ in self.queue]), torch.cat(inv), torch.tensor(targets))
        slots = torch.tensor(slots)
        self.lp[slots], self.greedy[slots] = lp, greedy
        self.queue, self.queued = [], 0

    def _progress(self, nodes: list[Node], n_tokens: int) -> None:
        self.tokens += n_tokens
        if self.pbar is not None:
            self.pbar.set_postfix_str(f"{self.tokens / max(time.perf_counter() - self.t0, 1e-9):,.0f} tok/s",
                                      refresh=False)
            self.pbar.update(sum(n.finishing for n in nodes))

    def _run_edge(self, node: Node, cache: DynamicCache) -> None:
        """Extend ``cache`` (holding ``node.start`` tokens) by the node's tokens, in chunks, scoring its entries."""
        toks = node.tokens
        for s in range(0, len(toks), self.budget):
            piece = toks[s:s + self.budget]
            hidden = self.body([list(piece)], cache)[0]
            lo = node.start + s
            entries = [e for e in node.entries if lo <= e[0] < lo + len(piece)]
            self._score(hidden, entries, [p - lo for p, _, _ in entries])
        self._progress([node], len(toks))

    def _run_leaves(self, leaves: list[Node], cache: DynamicCache | None, cached: int) -> None:
        """Run sibling leaves as right-padded batches over the parent's cache (padding never reaches a real
        token: attention is causal)."""
        width = max(len(n.tokens) for n in leaves)
        rows = [list(n.tokens) + [0] * (width - len(n.tokens)) for n in leaves]
        hidden = self.body(rows, _repeat_cache(cache, len(rows)) if cache is not None else None)
        hidden = hidden.reshape(len(rows) * width, -1)
        entries, where = [], []
        for r, n in enumerate(leaves):
            entries += n.entries
            where += [r * width + p - cached for p, _, _ in n.entries]
        self._score(hidden, entries, where)
        self._progress(leaves, sum(len(n.tokens) for n in leaves))

    def _children(self, node: Node, cache: DynamicCache | None) -> list[Node]:
        """Batch the node's short leaves; return the children to run one by one (inner nodes, long leaves)."""
        leaves = sorted((c for c in node.children if not c.children and node.end + len(c.tokens) <= self.budget),
                        key=lambda c: -len(c.tokens))
        batch: list[Node] = []
        for leaf in leaves + [None]:
            if batch and (leaf is None or (len(batch) + 1) * (node.end + len(batch[0].tokens)) > self.budget):
                self._run_leaves(batch, cache, node.end)
                batch = []
            if leaf is not None:
                batch.append(leaf)
        return [c for c in node.children if c.children or node.end + len(c.tokens) > self.budget]

    def run(self, root: Node) -> None:
        """Depth-first over the tree with one growing cache, cropped back when a subtree is done."""
        cache = DynamicCache()
        stack = [(root, iter(self._children(root, None)))]
        while stack:
            node, todo = stack[-1]
            child = next(todo, None)
            if child is None:
                stack.pop()
                if stack and node.end > stack[-1][0].end:
                    cache.crop(-(node.end - stack[-1][0].end))
                continue
            self._run_edge(child, cache)
            stack.append((child, iter(self._children(child, cache))))


def _score_tokens(model, seqs, targets, budget: int, progress: bool, desc: str) -> list[tuple[float, bool]]:
    """Score continuation tokens ``targets[i]`` after the fed sequence ``seqs[i]`` (None: empty continuation)."""
    live = [i for i, s in enumerate(seqs) if s is not None]
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t) for t in targets])
    root, terminal = build_tree([seqs[i] for i in live])
    for i, node in zip(live, terminal):
        node.finishing += 1
        n, c = len(seqs[i]), len(targets[i])
        for j in range(c - 1, -1, -1):  # scored positions n-c .. n-1, found on the path back to the root
            p = n - c + j
            while p < node.start:
                node = node.parent
            node.entries.append((p, targets[i][j], int(offsets[i]) + j))
    pbar = tqdm(total=len(seqs), desc=desc, unit="req", disable=not progress)
    pbar.update(len(seqs) - len(live))
    engine = _Engine(model, budget, int(offsets[-1]), pbar)
    with torch.inference_mode():
        engine.run(root)
        engine.flush()
    pbar.close()
    out = []
    for i in range(len(seqs)):  # float32 sum over the continuation, like lm-eval's logits.sum()
        a, b = int(offsets[i]), int(offsets[i + 1])
        out.append((float(engine.lp[a:b].sum()), bool(engine.greedy[a:b].all())) if b > a else (0.0, True))
    return out


def _self_check(model, budget: int) -> bool:
    """Once per model/dtype/device: the engine equals a full forward on a short branching sequence."""
    key = (model.dtype, str(model.device))
    seen = _checked.setdefault(model, {})
    if key not in seen:
        try:
            vocab = model.get_output_embeddings().weight.shape[0]
            base = [(7 + 31 * i) % vocab for i in range(12)]
            seqs = [tuple(base), tuple(base[:8] + [(b + 5) % vocab for b in base[8:]]), tuple(base[:5])]
            targets = [[base[3], base[5]], [base[1], base[2], base[0]], [base[6]]]
            fast = _score_tokens(model, seqs, targets, budget, False, "")
            slow = _reference_tokens(model, seqs, targets)
            tol = _SELF_CHECK_TOL.get(model.dtype, 0.1)
            seen[key], why = all(abs(f[0] - s[0]) <= tol for f, s in zip(fast, slow)), "results differ"
        except Exception as exc:  # an unsupported architecture: fall back rather than fail an evaluation
            seen[key], why = False, f"{type(exc).__name__}: {exc}"
        if not seen[key]:
            warnings.warn(f"log-likelihood engine self-check failed for {type(model).__name__} ({why}); "
                          "using the full-forward reference path", stacklevel=3)
    return seen[key]


def loglikelihood(model, tokenizer, requests: list[tuple[str, str]], *, add_bos_token: bool = False,
                  max_length: int, batch_tokens: int | None = None,
                  progress: bool = True) -> list[tuple[float, bool]]:
    """Summed log-probability of each continuation after its context, and whether it is the greedy output.

    Same numbers as lm-evaluation-harness 0.4.13 ``HFLM.loglikelihood`` (|delta| <= 1e-4 in float32): trailing
    whitespace of the context moves to the continuation; ``whole = encode(ctx + cont)``, ``ctx_ids =
    encode(ctx)``, continuation tokens ``whole[len(ctx_ids):]``, fed ``(ctx_ids + cont_ids)[-(max_length+1):][:-1]``
    (left truncation, with a warning; the continuation is kept whole); an empty context becomes the BOS token
    (EOS if there is none); ``add_bos_token`` encodes with the tokenizer's special tokens (BOS for Gemma/Llama)
    unless the string already starts with the BOS text; score = float32 sum of float32 ``log_softmax`` at the
    continuation positions; greedy = every continuation token is the argmax.

    A continuation that encodes to no tokens (e.g. Winogrande's ``" "`` absorbed by the context) returns
    ``(0.0, True)``, the log-probability of the empty string, with a warning (lm-eval fails an assertion).

    Args:
        model: a transformers causal LM in eval mode (any device and dtype).
        tokenizer: its tokenizer.
        requests: ``(context, continuation)`` pairs.
        add_bos_token: add the tokenizer's BOS (lm-eval ``add_bos_token``; default off, as the leaderboard ran).
        max_length: the model's context length used for truncation.
        batch_tokens: tokens per forward call, counted as rows x (cached + new tokens); bounds memory. Default:
            enough for about 1 GiB of repeated key/value cache (2,048 to 65,536).
        progress: show a tqdm bar with requests and tokens per second.

    Returns:
        ``(log_likelihood, is_greedy)`` per request, in order.

    Raises:
        ThaiEvalError: a non-empty context that encodes to no tokens, or a continuation longer than max_length.
    """
    requests = [(str(c), str(x)) for c, x in requests]
    if not requests:
        return []
    seqs, targets = _fed(_encode(tokenizer, requests, add_bos_token), max_length)
    budget = batch_tokens or _auto_budget(model)
    if not _self_check(model, budget):
        return _reference_tokens(model, seqs, targets, progress=progress)
    return _score_tokens(model, seqs, targets, budget, progress, "loglikelihood")


# --- reference: one full forward per request, like lm-eval (used by the tests and as the fallback) ---------------
def _reference_tokens(model, seqs, targets, *, progress: bool = False) -> list[tuple[float, bool]]:
    """Full forward over each fed sequence, float32 log_softmax of every position, then the continuation slice."""
    out = []
    with torch.inference_mode():
        for seq, tgt in tqdm(list(zip(seqs, targets)), desc="loglikelihood (reference)", disable=not progress):
            if not tgt:
                out.append((0.0, True))
                continue
            logits = model(torch.tensor([list(seq)], device=model.device)).logits[0, -len(tgt):]
            logp = torch.log_softmax(logits.float(), dim=-1)
            t = torch.tensor(tgt, device=logp.device)
            out.append((float(logp.gather(1, t[:, None]).sum()), bool((logp.argmax(-1) == t).all())))
    return out


def _reference_loglikelihood(model, tokenizer, requests, *, add_bos_token: bool = False,
                             max_length: int) -> list[tuple[float, bool]]:
    """The straightforward lm-eval procedure, request by request (independent encoding; tests compare to it)."""
    prefix_id = _prefix_token_id(tokenizer)
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
            cont_ids = whole[len(ctx_ids):]
        seqs.append(tuple((ctx_ids + cont_ids)[-(max_length + 1):][:-1]))
        targets.append(cont_ids)
    return _reference_tokens(model, seqs, targets)
