"""The radix tree over fed token sequences and the forward calls that run it once (Thai-H6 spec, "Where the
reference implementation wastes compute"): :func:`build_tree` shares every common prefix; :func:`schedule`
lists the decoder calls that run each edge once with one growing KV cache, in order; each :class:`Call` builds
its own inputs when it runs (:meth:`Call.inputs`). No model here: the loop that makes the calls is
:func:`thai_eval_utils.backend.loglikelihood._score_tokens`, the call itself
:meth:`thai_eval_utils.backend.decoder.Decoder.model_call`.

Hand-written: no maintained library scores lm-eval requests with prefix and KV reuse.

Two kinds of schedule:

* ``"tree"``: whole subtrees (typically one document's context and answer choices; many documents at once) go
  into ONE forward call as one packed row of at most ``budget`` tokens, after the tail of their parent's edge;
  each token gets the position id it has in its own sequence and a segment (its tree node) whose ancestors it
  may see (:mod:`thai_eval_utils.backend.packed_attention`). No padding, no copy of the cache. A subtree larger
  than the budget has its edge run in chunks of at most ``budget`` tokens (and ``MASK_ELEMENTS`` mask entries)
  and its children packed in turn;
* ``"batch"``: the edge runs first; its leaves then run as right-padded rows over the cache repeated per row.

The cache always holds a path from the root: each call names the cached tokens it runs after (``past``), and
the runner drops the keys of finished subtrees (and of a packed call's subtrees) before the next call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Call", "Inputs", "Node", "ancestor_matrix", "build_tree", "schedule", "tree_positions"]

EDGE_TOKENS = 8192  # at most this many tokens of a long context per plain forward call (bounds HF's own masks)
MASK_ELEMENTS = 1 << 25  # at most this many (query, key) mask entries per layer type and call (32 MiB as bool)


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
    size: int = 0  # tokens of the whole subtree (this edge and every descendant), set by schedule()

    @property
    def tokens(self) -> tuple[int, ...]:
        """The edge's own tokens."""
        return self.seq[self.start : self.end]


def _common_prefix_len(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Length of the longest common prefix of ``a`` and ``b``."""
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


def tree_positions(seqs: list[tuple[int, ...]]) -> int:
    """Token positions of the prefix tree over ``seqs`` (each distinct prefix once): what an engine that shares
    every common prefix computes; 0 for no sequences (empty ones are ignored)."""
    distinct = sorted({s for s in seqs if s})
    if not distinct:
        return 0
    root, _ = build_tree(distinct)
    total, stack = 0, [root]
    while stack:
        node = stack.pop()
        total += node.end - node.start
        stack.extend(node.children)
    return total


def ancestor_matrix(parent: list[int]) -> np.ndarray:
    """``[segments, segments]`` bool: ``[a, b]`` when segment b is a or one of its ancestors, from each segment's
    parent (-1: none; segments in preorder, so a parent's row is complete before its children's)."""
    ancestors = np.zeros((len(parent), len(parent)), dtype=bool)
    for k, par in enumerate(parent):
        if par >= 0:
            ancestors[k] = ancestors[par]
        ancestors[k, k] = True
    return ancestors


# --- the forward calls ------------------------------------------------------------------------------------------
@dataclass
class Inputs:
    """What one call feeds the decoder and what it scores.

    ``ids`` [rows, length]; a packed call's ``positions`` and ``segment`` [tokens] and ``ancestors``
    [segments, segments] (None for the other kinds); the scored ``entries`` ``(position, target, slot)`` and,
    per entry, its row of the flattened hidden states [rows * length]; ``done``: the nodes whose last token
    runs in this call; ``tokens``: the real (unpadded) tokens fed.
    """

    ids: list[list[int]]
    entries: list[tuple[int, int, int]]
    rows: list[int]
    done: list[Node]
    tokens: int
    positions: list[int] | None = None
    segment: list[int] | None = None
    ancestors: np.ndarray | None = None


@dataclass(eq=False)
class Call:
    """One forward call of the decoder body after the first ``past`` tokens of the cache, one of three kinds:

    * ``"edge"``: ``nodes[0].seq[lo:hi]`` as one row; its keys extend the cache;
    * ``"packed"``: one row holding the tail ``trunk.seq[lo:trunk.end]`` (none when ``trunk`` is None), then
      every node of each subtree in ``nodes`` in preorder, each token seeing the cache, its own segment and its
      ancestors'; the trunk's keys stay in the cache, the subtrees' are dropped;
    * ``"batch"``: the leaves ``nodes`` as right-padded rows over the cache repeated per row (padding never
      reaches a real token: attention is causal); the cache is not extended.
    """

    kind: str
    past: int
    nodes: list[Node]
    lo: int = 0
    hi: int = 0
    trunk: Node | None = None

    def inputs(self) -> Inputs:
        """The call's token ids, masks' ingredients and scored entries (built when it runs, not planned)."""
        if self.kind == "edge":
            node = self.nodes[0]
            entries = [e for e in node.entries if self.lo <= e[0] < self.hi]
            return Inputs(
                [list(node.seq[self.lo : self.hi])],
                entries,
                [p - self.lo for p, _, _ in entries],
                [node] if self.hi == node.end else [],
                self.hi - self.lo,
            )
        if self.kind == "batch":
            width = max(len(n.tokens) for n in self.nodes)
            ids = [list(n.tokens) + [0] * (width - len(n.tokens)) for n in self.nodes]  # [leaves, width]
            entries, rows = [], []
            for r, n in enumerate(self.nodes):
                entries += n.entries
                rows += [r * width + p - n.start for p, _, _ in n.entries]
            return Inputs(ids, entries, rows, self.nodes, sum(len(n.tokens) for n in self.nodes))
        return _packed_inputs(self.trunk, self.lo, self.nodes)


def _packed_inputs(trunk: Node | None, lo: int, subtrees: list[Node]) -> Inputs:
    """One packed row [tokens]: ``trunk``'s tail from ``lo``, then each subtree in preorder; a segment per node
    whose parent segment is its tree parent (-1 for the trunk, or for the subtrees without one: the cache)."""
    ids, pos, segment, entries, rows, done = [], [], [], [], [], []
    index, parent = {}, []  # node -> segment id; parent segment id per segment

    def add(node: Node, a: int, parent_seg: int) -> None:
        off, k = len(ids), len(parent)
        index[id(node)] = k
        parent.append(parent_seg)
        ids.extend(node.seq[a : node.end])
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
    for sub in subtrees:
        stack = [(sub, top)]
        while stack:
            node, par = stack.pop()
            add(node, node.start, par)
            stack += [(c, index[id(node)]) for c in reversed(node.children)]
    return Inputs([ids], entries, rows, done, len(ids), pos, segment, ancestor_matrix(parent))


def schedule(root: Node, budget: int, mode: str) -> list[Call]:
    """The forward calls that run every edge of the tree once, in order: depth first, each node's subtrees
    packed into calls of at most ``budget`` tokens (``mode`` "tree") or its leaves batched (``mode`` "batch");
    sets each node's ``size``."""
    order, stack = [], [root]  # subtree sizes, children before parents
    while stack:
        order.append(stack.pop())
        stack += order[-1].children
    for node in reversed(order):
        node.size = node.end - node.start + sum(c.size for c in node.children)
    calls: list[Call] = []
    todo = [iter(_expand(root, budget, mode, calls))]  # per open node: its children still to expand
    while todo:
        child = next(todo[-1], None)
        if child is None:
            todo.pop()
        else:
            todo.append(iter(_expand(child, budget, mode, calls)))
    return calls


def _edge(node: Node, upto: int, budget: int, calls: list[Call]) -> None:
    """Calls extending the cache (holding ``node.start`` tokens) by the node's tokens before position ``upto``,
    in chunks of at most ``budget`` (and ``EDGE_TOKENS``) tokens and ``MASK_ELEMENTS`` mask entries."""
    lo = node.start
    while lo < upto:
        hi = min(lo + min(budget, EDGE_TOKENS, _mask_fit(lo)), upto)
        calls.append(Call("edge", lo, [node], lo=lo, hi=hi))
        lo = hi


def _groups(nodes: list[Node], cached: int, mode: str, budget: int, cap: int = 0) -> list[list[Node]]:
    """Pack nodes, largest first, into groups for one forward call each: at most ``cap`` subtree tokens
    (tree mode), or rows x (cached + widest) within the budget (batch mode: leaves)."""
    groups: list[list[Node]] = []
    for node in sorted(nodes, key=lambda n: -n.size):
        cur = groups[-1] if groups else None
        if cur is not None and mode == "tree":
            fits = sum(n.size for n in cur) + node.size <= cap
        elif cur is not None:
            fits = (len(cur) + 1) * (cached + len(cur[0].tokens)) <= budget
        if cur is None or not fits:
            groups.append([node])
        else:
            cur.append(node)
    return groups


def _expand(node: Node, budget: int, mode: str, calls: list[Call]) -> list[Node]:
    """Add the calls running ``node`` (its parent's tokens cached) and those of its children's subtrees that fit
    in a packed call (or its leaves' batches); return the children still to expand one by one. Afterwards the
    cache holds exactly ``node.end`` tokens."""
    if mode == "batch":
        leaves = [c for c in node.children if not c.children and node.end + len(c.tokens) <= budget]
        _edge(node, node.end, budget, calls)
        calls += [Call("batch", node.end, group) for group in _groups(leaves, node.end, mode, budget)]
        return [c for c in node.children if c not in leaves]
    cap = min(budget, _mask_fit(node.end))  # subtree tokens per packed call over this node's cache
    small = [c for c in node.children if c.size <= cap]
    rest = [c for c in node.children if c.size > cap]
    if not small:
        _edge(node, node.end, budget, calls)
        return rest
    groups = _groups(small, node.end, mode, budget, cap)
    first = sum(n.size for n in groups[0])
    # the end of the node's own tokens goes into the first packed call, as far as the call's size allows
    tail = max(0, min(node.end - node.start, budget - first, MASK_ELEMENTS // (node.end + first) - first))
    lo = node.end - tail
    _edge(node, lo, budget, calls)
    calls.append(Call("packed", lo, groups[0], lo=lo, trunk=node if tail else None))
    calls += [Call("packed", node.end, group, lo=node.end) for group in groups[1:]]
    return rest
