"""Radix tree over the token sequences fed to the model, so each shared token prefix runs once (Thai-H6 spec,
"Where the reference implementation wastes compute"); used by :mod:`thai_eval_utils.scoring`.

Hand-written: no maintained library builds a token-level radix tree with positions for KV-cache reuse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Node", "build_tree"]


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
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    stack = [root]
    prev: tuple[int, ...] | None = None
    for i in order:
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
        if len(s) == lcp:  # cannot happen for sorted distinct sequences (a prefix sorts first); kept explicit
            terminal[i] = top
        else:
            leaf = Node(seq=s, start=lcp, end=len(s), parent=top)
            top.children.append(leaf)
            stack.append(leaf)
            terminal[i] = leaf
        prev = s
    return root, terminal  # type: ignore[return-value]
