"""The prefix-sharing runner behind :mod:`thai_eval_utils.core.loglikelihood` (Thai-H6 spec, "Where the reference
implementation wastes compute"): a radix tree over the fed token sequences, each edge run once through the
decoder body with a KV cache, the output layer applied only to scored positions.

Hand-written: no maintained library scores lm-eval requests with prefix and KV reuse.

Two ways of running the tree:

* ``"tree"``: whole subtrees (typically one document's context and answer choices; many documents at once) go
  into ONE forward call as one packed row of at most ``budget`` tokens, after the tail of their parent's edge;
  each token gets the position id it has in its own sequence and an attention mask that lets it see the cached
  common ancestors, its own segment and its ancestors' segments only (causal, and windowed for sliding-window
  layers). No padding, no copy of the cache. A subtree larger than the budget has its edge run in chunks of at
  most ``budget`` tokens (and ``MASK_ELEMENTS`` mask entries) and its children packed in turn. Needs
  per-layer-type masks (``config.layer_types``) and the ``sdpa`` or ``eager`` attention;
* ``"batch"``: the edge runs first; its leaves then run as right-padded rows over the cache repeated per row.

Both keep every key in the cache (``DynamicCache()`` without a config), so sliding-window layers stay exact:
the window is applied by the mask over absolute positions. While the runner works, an sdpa model computes
masked attention in blocks of query rows, each against the keys its rows can see (:func:`_block_sdpa`).

Devices and dtypes: inputs and masks go to the input embeddings' device; the output layer runs on its own
device in the model's dtype, at most ``HEAD_BYTES`` of float32 logits at a time, and its float32
``log_softmax`` results are gathered on the CPU. Peak memory beyond the weights: the KV cache of one root-to-leaf
path (at most ``max_length`` tokens) and of one packed call, the activations of ``budget`` tokens, one mask of
``budget`` x (cached + ``budget``) entries per layer type (at most ``MASK_ELEMENTS``) and ``HEAD_BYTES``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from transformers import AttentionInterface, DynamicCache
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

__all__ = ["Forward", "Node", "Plan", "ancestor_matrix", "build_tree", "Runner", "tree_supported"]

#: One forward call the runner asks its driver to make: ``(module, keyword arguments)``; the driver sends back
#: the module's output (see :func:`thai_eval_utils.core.loglikelihood.drive`).
Forward = tuple[Callable[..., Any], dict[str, Any]]
#: A runner plan: a generator that yields forward calls, receives their outputs and returns its result.
Plan = Generator[Forward, Any, Any]

HEAD_BYTES = 1 << 27  # at most 128 MiB of float32 logits per output-layer call (a bound independent of length)
EDGE_TOKENS = 8192  # at most this many tokens of a long context per plain forward call (bounds HF's own masks)
MASK_ELEMENTS = 1 << 25  # at most this many (query, key) mask entries per layer type and call (32 MiB as bool)
BLOCK_ROWS = 256  # query rows per attention call when an sdpa model gets an explicit mask on the CPU
CUDA_BLOCK_ROWS = 1024  # the same on a GPU (fewer, larger kernels; see _block_sdpa)
_BLOCK_IMPL = "thai_eval_block_sdpa"


def _mask_fit(past: int) -> int:
    """The most tokens T one call can take over ``past`` cached ones: T x (past + T) <= MASK_ELEMENTS."""
    return max(1, int((-past + (past * past + 4 * MASK_ELEMENTS) ** 0.5) / 2))


@dataclass(eq=False)
class Node:
    """One edge of the tree: the tokens ``seq[start:end]`` (absolute positions ``start..end-1``).

    ``seq`` is any sequence passing through the node; ``entries`` are the scored positions that fall in this
    node as ``(position, target token, output slot)``; ``finishing`` counts the requests whose last scored
    position is here (for the progress bar).
    """

    seq: tuple[int, ...]
    start: int
    end: int
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    entries: list[tuple[int, int, int]] = field(default_factory=list)
    finishing: int = 0
    size: int = 0  # tokens of the whole subtree (this edge and every descendant), set by the runner


    @property
    def tokens(self) -> tuple[int, ...]:
        return self.seq[self.start:self.end]


def _common_prefix_len(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    m = min(len(a), len(b))
    if m == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:m]) != np.asarray(b[:m]))
    return int(diff[0]) if diff.size else m


def build_tree(seqs: list[tuple[int, ...]]) -> tuple[Node, list[Node]]:
    """Build the compressed prefix tree of ``seqs`` (duplicates allowed, none empty).

    Returns:
        ``(root, terminal)``: the root (an empty node at position 0) and, for each input sequence, the node
        where it ends (every sequence ends exactly at a node boundary).

    Sequences are sorted, so each one shares its longest common prefix with its sorted predecessor; a stack
    holds the path to the previous sequence and an edge is split where the new sequence leaves that path.
    """
    root = Node(seq=(), start=0, end=0)
    terminal: list[Node | None] = [None] * len(seqs)
    stack = [root]
    prev: tuple[int, ...] | None = None
    for i in sorted(range(len(seqs)), key=lambda i: seqs[i]):
        s = seqs[i]
        if not s:
            raise ValueError("build_tree: empty sequence")
        if s == prev:
            terminal[i] = stack[-1]
            continue
        lcp = _common_prefix_len(prev, s) if prev is not None else 0
        popped = None
        while stack[-1].end > lcp:
            popped = stack.pop()
        top = stack[-1]
        if top.end < lcp:  # the new sequence leaves the previous path inside `popped`'s edge: split it
            mid = Node(seq=popped.seq, start=top.end, end=lcp, parent=top, children=[popped])
            top.children[-1] = mid  # `popped` was the most recently added child of `top`
            popped.parent, popped.start = mid, lcp
            stack.append(mid)
            top = mid
        # sorted distinct sequences: `s` is never a proper prefix of `prev`, so it always adds an edge
        leaf = Node(seq=s, start=lcp, end=len(s), parent=top)
        top.children.append(leaf)
        stack.append(leaf)
        terminal[i] = leaf
        prev = s
    return root, terminal  # type: ignore[return-value]


# --- model pieces -----------------------------------------------------------------------------------------------
class Head:
    """The output layer on selected hidden states: lm_head, final logit soft-capping, float32 log_softmax.

    One output-layer matmul and one ``log_softmax`` per ``self.rows`` scored rows, written into two buffers
    allocated once per engine call: on the CPU a fresh 128 MiB tensor per chunk costs as much as the
    ``log_softmax`` itself (its pages are mapped and zeroed anew; measured: docs/benchmarks.md, issue 24).
    """

    def __init__(self, model):
        self.proj = model.get_output_embeddings()
        self.softcap = getattr(model.config.get_text_config(), "final_logit_softcapping", None)
        self.rows = max(1, HEAD_BYTES // (4 * self.proj.weight.shape[0]))
        # a plain bias-free Linear without accelerate hooks can write its logits into a reused buffer
        self.plain = (type(self.proj) is torch.nn.Linear and self.proj.bias is None
                      and not hasattr(self.proj, "_hf_hook"))
        self.buffers: dict[str, torch.Tensor] = {}

    def _buffer(self, name: str, rows: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        """A [rows, vocab] view of a buffer kept for the next chunks (grown when a call needs more rows)."""
        buf = self.buffers.get(name)
        if buf is None or buf.shape[0] < rows or buf.dtype != dtype or buf.device != device:
            buf = self.buffers[name] = torch.empty(rows, self.proj.weight.shape[0], dtype=dtype, device=device)
        return buf[:rows]

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Soft-capped logits [rows, vocab] of ``hidden`` [rows, hidden] in the model's dtype (a buffer view)."""
        w = self.proj.weight
        hooked = self.proj._forward_hooks or self.proj._forward_pre_hooks  # e.g. tests counting its rows
        if self.plain and not hooked:
            logits = torch.mm(hidden.to(w.device), w.t(), out=self._buffer("logits", len(hidden), w.dtype, w.device))
        else:
            logits = self.proj(hidden.to(w.device))
        if self.softcap:  # in place: the same operations as tanh(logits / cap) * cap
            logits.div_(self.softcap).tanh_().mul_(self.softcap)
        return logits

    def __call__(self, hidden: torch.Tensor, rows: torch.Tensor, targets: torch.Tensor):
        """Log-probability of ``targets[k]`` and whether it is the argmax, at ``hidden[rows[k]]``; each row of
        ``hidden`` goes through the output layer once, ``self.rows`` at a time."""
        lp = torch.empty(len(rows), dtype=torch.float32)
        greedy = torch.empty(len(rows), dtype=torch.bool)
        for s in range(0, len(hidden), self.rows):
            logits = self._logits(hidden[s:s + self.rows])
            out = self._buffer("logp", len(logits), torch.float32, logits.device)
            logp = torch.log_softmax(logits.float(), dim=-1, out=out)
            sel = ((rows >= s) & (rows < s + self.rows)).nonzero()[:, 0]
            r, t = (rows[sel] - s).to(logp.device), targets[sel].to(logp.device)
            lp[sel] = logp[r, t].cpu()
            greedy[sel] = (logp.argmax(dim=-1)[r] == t).cpu()
        return lp, greedy


def tree_supported(model) -> bool:
    """Whether packed (tree) forwards can be expressed for this model: sdpa/eager attention and layer types
    that are all full or sliding-window attention (or no sliding window at all)."""
    cfg = model.config.get_text_config()
    types = set(getattr(cfg, "layer_types", None) or [])
    if getattr(model.config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return False
    if types:
        return types <= {"full_attention", "sliding_attention"}
    return getattr(cfg, "sliding_window", None) is None


class Body:
    """The decoder body (final norm included): the inputs of its forward on token ids, with a KV cache and
    optional packed masks (``self.net(**body.inputs(...)).last_hidden_state`` is [rows, length, hidden]).

    Inputs go to the device of the input embeddings (with a ``device_map`` the model's hooks move activations
    between devices); masks are built there once per call and shared by every layer of a type.
    """

    def __init__(self, model):
        self.net = model.base_model
        params = inspect.signature(self.net.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5
        self.device = model.get_input_embeddings().weight.device
        self.dtype = model.dtype
        cfg = model.config.get_text_config()
        self.types = sorted(set(getattr(cfg, "layer_types", None) or []))
        self.window = getattr(cfg, "sliding_window", None)
        self.eager = getattr(model.config, "_attn_implementation", None) == "eager"

    def forward(self, ids: list[list[int]], cache: DynamicCache | None, positions=None, segment=None,
                ancestors=None) -> Forward:
        """The forward call on ``ids`` [rows, length]. With ``positions``/``segment``/``ancestors`` (one packed
        row of tree segments): query i sees key j iff pos[j] <= pos[i] and j's segment is i's or one of its
        ancestors (``ancestors[a, b]``: segment b is an ancestor of a, or a itself), within the window on
        sliding-window layers; every query sees the cache, which holds the common ancestors ``0..past-1``."""
        dev = self.device
        _SPANS.clear()  # masks of earlier calls are gone (their memory may be reused)
        x = torch.tensor(ids, dtype=torch.long, device=dev)  # [rows, length]
        if positions is None:
            kwargs = {self.cache_kw: cache, "use_cache": True} if cache is not None else {"use_cache": False}
            return self.net, {"input_ids": x, **kwargs}
        past = cache.get_seq_length()
        pos = torch.tensor(positions, dtype=torch.long, device=dev)  # [tokens] query positions
        seg = torch.tensor(segment, dtype=torch.long, device=dev)  # [tokens] segment of each token
        anc = torch.tensor(ancestors, dtype=torch.bool, device=dev)  # [segments, segments]
        kpos = torch.cat([torch.arange(past, device=dev), pos])  # [keys] = [past + tokens]
        packed = anc[seg][:, seg] & (pos[None, :] <= pos[:, None])  # [tokens, tokens]
        allowed = torch.cat([torch.ones(len(pos), past, dtype=torch.bool, device=dev), packed], 1)  # [tokens, keys]
        masks = {}
        for kind in self.types or ["full_attention"]:
            m = allowed if kind == "full_attention" else allowed & (pos[:, None] - kpos[None, :] < self.window)
            if self.eager:  # eager attention adds the mask to the scores
                m = torch.zeros(m.shape, dtype=self.dtype, device=dev).masked_fill(~m, torch.finfo(self.dtype).min)
            masks[kind] = m[None, None]  # [1, 1, tokens, keys]
        mask = masks if len(masks) > 1 else next(iter(masks.values()))  # a dict only for mixed layer types
        return self.net, {"input_ids": x, "attention_mask": mask, "position_ids": pos[None], "use_cache": True,
                          self.cache_kw: cache}


#: Per mask (data pointer, shape): the keys each block of query rows can see, ``(q0, keys)``; computed on the
#: first layer of a call (one device sync per mask) and reused by the others; cleared before each call.
_SPANS: dict[tuple, list[tuple[int, slice | torch.Tensor]]] = {}
GATHER_FILL = 0.75  # a block's keys are gathered when fewer than this share of its key span is visible


def _spans(mask: torch.Tensor, rows: int) -> list[tuple[int, slice | torch.Tensor]]:
    """``(q0, keys)`` per block of ``rows`` query rows of ``mask`` [..., queries, keys]: the keys some row of the
    block can see, as a slice when they (nearly) fill their span, else as an index tensor. A packed call's rows
    all see the common ancestors at its start, and each document's rows its own keys: a span from the first to
    the last visible key would also hold every document in between."""
    key = (mask.data_ptr(), tuple(mask.shape), rows)
    if key not in _SPANS:
        q = mask.shape[-2]
        seen = mask.reshape(-1, q, mask.shape[-1]).any(0)  # [queries, keys]
        blocks = torch.nn.functional.pad(seen, (0, 0, 0, (-q) % rows)).reshape(-1, rows, seen.shape[-1]).any(1)
        out = []
        for b, visible in enumerate(blocks.cpu().numpy()):  # [keys] per block
            idx = np.flatnonzero(visible)
            k0, k1 = (int(idx[0]), int(idx[-1]) + 1) if idx.size else (0, 0)
            if idx.size >= GATHER_FILL * (k1 - k0):
                out.append((b * rows, slice(k0, k1)))
            else:
                out.append((b * rows, torch.from_numpy(idx).to(mask.device)))
        _SPANS[key] = out
    return _SPANS[key]


def _block_sdpa(module, query, key, value, attention_mask, **kwargs):
    """transformers' sdpa attention over blocks of query rows (``BLOCK_ROWS`` on the CPU, ``CUDA_BLOCK_ROWS`` on
    a GPU), each block against only the keys that its mask rows can see (see :func:`_spans`). Same result as one
    call (up to float32 summation order: masked keys add exactly zero), without the scores of keys every row of
    the block masks: the far past on sliding-window layers, the future of causal ones, the other documents and
    answer choices of a packed call. Hand-written: torch's CPU sdpa scores every key, and a packed call holds
    many documents."""
    rows = query.shape[2]
    block = CUDA_BLOCK_ROWS if query.device.type == "cuda" else BLOCK_ROWS
    if attention_mask is None or attention_mask.dtype != torch.bool or rows < 2 * block:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    mask = attention_mask[..., :key.shape[2]]  # [batch or 1, 1, queries, keys]
    out = []
    for q0, keys in _spans(mask, block):
        m = mask[..., q0:q0 + block, :]
        if isinstance(keys, slice):
            k, v, m = key[:, :, keys], value[:, :, keys], m[..., keys]
        else:  # gathered keys: [batch, kv heads, visible keys, head_dim]
            k, v, m = key.index_select(2, keys), value.index_select(2, keys), m.index_select(-1, keys)
        o, _ = sdpa_attention_forward(module, query[:, :, q0:q0 + block], k, v, m, **kwargs)
        out.append(o)  # [batch, rows, heads, head_dim]
    return torch.cat(out, dim=1), None


@contextmanager
def _block_attention(model):
    """While the engine runs, an sdpa model uses :func:`_block_sdpa` (registered with transformers)."""
    before = model.config._attn_implementation
    if before != "sdpa":
        yield
        return
    AttentionInterface.register(_BLOCK_IMPL, _block_sdpa)
    AttentionMaskInterface.register(_BLOCK_IMPL, sdpa_mask)
    model.config._attn_implementation = _BLOCK_IMPL
    try:
        yield
    finally:
        model.config._attn_implementation = before


def _repeat_cache(cache: DynamicCache, rows: int) -> DynamicCache:
    """A new cache holding ``cache``'s keys and values repeated over ``rows`` batch rows (``cache`` unchanged)."""
    out = DynamicCache()
    for i, layer in enumerate(cache.layers):
        k, v = layer.keys, layer.values
        out.update(k.expand(rows, *k.shape[1:]), v.expand(rows, *v.shape[1:]), i)
    return out


def ancestor_matrix(parent: list[int]) -> np.ndarray:
    """``[segments, segments]`` bool: ``[a, b]`` when segment b is a or one of its ancestors, from each segment's
    parent (-1: none; segments in preorder, so a parent's row is complete before its children's)."""
    ancestors = np.zeros((len(parent), len(parent)), dtype=bool)
    for k, par in enumerate(parent):
        if par >= 0:
            ancestors[k] = ancestors[par]
        ancestors[k, k] = True
    return ancestors


# --- the runner -------------------------------------------------------------------------------------------------
class Runner:
    """Runs a radix tree of fed sequences and writes each scored token's log-prob and greedy flag to slots.

    The runner plans and never calls the decoder itself: :meth:`run` is a generator that yields each forward
    call (:data:`Forward`) and receives its output, so the one driver loop that makes the calls is the only
    frame between the caller and the model (:func:`thai_eval_utils.core.loglikelihood.drive`).
    """

    def __init__(self, model, budget: int, n_slots: int, mode: str, pbar=None):
        self.model = model
        self.body, self.head, self.budget, self.mode, self.pbar = Body(model), Head(model), budget, mode, pbar
        self.tree_cap = budget  # tokens per packed (tree) call
        self.chunk = min(budget, EDGE_TOKENS)
        self.lp = torch.zeros(n_slots, dtype=torch.float32)
        self.greedy = torch.zeros(n_slots, dtype=torch.bool)
        self.queue: list = []
        self.queued = 0
        self.tokens, self.t0 = 0, time.perf_counter()

    # scoring -----------------------------------------------------------------------------------------------
    def _score(self, hidden: torch.Tensor, entries: list[tuple[int, int, int]], rows: list[int]) -> None:
        """Queue ``entries`` (position, target, slot) whose hidden states are ``hidden[rows[k]]``; the output
        layer runs when enough rows are queued (its weights are read once per ``head.rows`` rows)."""
        if not entries:
            return
        uniq, inv = np.unique(rows, return_inverse=True)  # one output-layer row per distinct position
        self.queue.append((hidden[torch.from_numpy(uniq).to(hidden.device)].clone(), inv.reshape(-1), entries))
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

    # forwards ----------------------------------------------------------------------------------------------
    def _run_edge(self, node: Node, cache: DynamicCache, upto: int | None = None) -> Plan:
        """Extend ``cache`` (holding ``node.start`` tokens) by the node's tokens before absolute position
        ``upto`` (default: all), in chunks, scoring the entries there."""
        end = node.end if upto is None else upto
        lo = node.start
        while lo < end:  # chunks of at most `chunk` tokens and MASK_ELEMENTS mask entries over the cache
            hi = min(lo + min(self.chunk, _mask_fit(lo)), end)
            hidden = (yield self.body.forward([list(node.seq[lo:hi])], cache)).last_hidden_state[0]  # [length, hidden]
            entries = [e for e in node.entries if lo <= e[0] < hi]
            self._score(hidden, entries, [p - lo for p, _, _ in entries])
            lo = hi
        self._progress([node] if end == node.end else [], end - node.start)

    def _run_packed(self, trunk: Node | None, lo: int, subtrees: list[Node], cache: DynamicCache) -> Plan:
        """One forward over ``trunk.seq[lo:trunk.end]`` followed by every node of each subtree in ``subtrees``
        (children of ``trunk``, or of the cached path), each token seeing the cache, its own segment and its
        ancestors' (see :class:`Body`); the subtrees' keys are dropped from the cache afterwards. Subtrees of
        many documents share one call: this is what fills the device."""
        # one packed row [tokens]: the trunk's tail, then each subtree in preorder; a segment per node
        ids, pos, segment, entries, rows, done = [], [], [], [], [], []
        index, parent = {}, []  # node -> segment id; parent segment id per segment (-1: the cache only)

        def add(node: Node, a: int, parent_seg: int) -> None:
            off, k = len(ids), len(parent)
            index[id(node)] = k
            parent.append(parent_seg)
            ids.extend(node.seq[a:node.end])
            pos.extend(range(a, node.end))
            segment.extend([k] * (node.end - a))
            own = [e for e in node.entries if e[0] >= a]
            entries.extend(own)
            rows.extend(off + p - a for p, _, _ in own)
            done.append(node)

        top = -1
        if trunk is not None and lo < trunk.end:
            add(trunk, lo, -1)
            top = 0
        n_trunk = len(ids)
        for sub in subtrees:
            stack = [(sub, top)]
            while stack:
                node, par = stack.pop()
                add(node, node.start, par)
                stack += [(c, index[id(node)]) for c in reversed(node.children)]
        out = yield self.body.forward([ids], cache, positions=pos, segment=segment, ancestors=ancestor_matrix(parent))
        hidden = out.last_hidden_state[0]  # [tokens, hidden]
        if len(ids) > n_trunk:
            cache.crop(-(len(ids) - n_trunk))
        self._score(hidden, entries, rows)
        self._progress(done, len(ids))

    def _run_batch(self, leaves: list[Node], cache: DynamicCache | None, cached: int) -> Plan:
        """Sibling leaves as right-padded rows over the parent's cache repeated per row (padding never reaches
        a real token: attention is causal)."""
        width = max(len(n.tokens) for n in leaves)
        rows = [list(n.tokens) + [0] * (width - len(n.tokens)) for n in leaves]  # [leaves, width]
        hidden = (yield self.body.forward(rows, _repeat_cache(cache, len(rows)) if cached else None)).last_hidden_state
        hidden = hidden.reshape(len(rows) * width, -1)  # [leaves * width, hidden]
        entries, where = [], []
        for r, n in enumerate(leaves):
            entries += n.entries
            where += [r * width + p - n.start for p, _, _ in n.entries]
        self._score(hidden, entries, where)
        self._progress(leaves, sum(len(n.tokens) for n in leaves))

    # traversal ---------------------------------------------------------------------------------------------
    def _groups(self, nodes: list[Node], cached: int, cap: int = 0) -> list[list[Node]]:
        """Pack nodes, largest first, into groups for one forward call each: at most ``cap`` subtree tokens
        (tree mode), or rows x (cached + widest) within the budget (batch mode: leaves)."""
        groups: list[list[Node]] = []
        for node in sorted(nodes, key=lambda n: -n.size):
            cur = groups[-1] if groups else None
            if cur is not None and self.mode == "tree":
                fits = sum(n.size for n in cur) + node.size <= cap
            elif cur is not None:
                fits = (len(cur) + 1) * (cached + len(cur[0].tokens)) <= self.budget
            if cur is None or not fits:
                groups.append([node])
            else:
                cur.append(node)
        return groups

    def _expand(self, node: Node, cache: DynamicCache) -> Plan:
        """Run ``node`` (whose parent's tokens are cached) and those of its children's subtrees that fit in a
        packed call; return the children still to expand one by one. Afterwards the cache holds exactly
        ``node.end`` tokens."""
        if self.mode == "batch":
            leaves = [c for c in node.children if not c.children and node.end + len(c.tokens) <= self.budget]
            if node.end > node.start:
                yield from self._run_edge(node, cache)
            for group in self._groups(leaves, node.end):
                yield from self._run_batch(group, cache, node.end)
            return [c for c in node.children if c not in leaves]
        cap = min(self.tree_cap, _mask_fit(node.end))  # subtree tokens per packed call over this node's cache
        small = [c for c in node.children if c.size <= cap]
        rest = [c for c in node.children if c.size > cap]
        if not small:
            if node.end > node.start:
                yield from self._run_edge(node, cache)
            return rest
        groups = self._groups(small, node.end, cap)
        first = sum(n.size for n in groups[0])
        # the end of the node's own tokens goes into the first packed call, as far as the call's size allows
        tail = max(0, min(node.end - node.start, self.tree_cap - first, MASK_ELEMENTS // (node.end + first) - first))
        lo = node.end - tail
        if lo > node.start:
            yield from self._run_edge(node, cache, upto=lo)
        yield from self._run_packed(node if tail else None, lo, groups[0], cache)
        for group in groups[1:]:
            yield from self._run_packed(None, node.end, group, cache)
        return rest

    def run(self, root: Node) -> Plan:
        """Depth-first over the tree with one growing cache, cropped back when a subtree is done (a plan: the
        forward calls are yielded; block attention is on while they are made)."""
        order, stack = [], [root]  # subtree sizes, children before parents
        while stack:
            order.append(stack.pop())
            stack += order[-1].children
        for node in reversed(order):
            node.size = node.end - node.start + sum(c.size for c in node.children)
        with _block_attention(self.model):
            cache = DynamicCache()
            stack = [(root, iter((yield from self._expand(root, cache))))]
            while stack:
                node, todo = stack[-1]
                child = next(todo, None)
                if child is None:
                    stack.pop()
                    if stack and node.end > stack[-1][0].end:
                        cache.crop(-(node.end - stack[-1][0].end))
                    continue
                stack.append((child, iter((yield from self._expand(child, cache)))))
        self.flush()
