"""Which prompt prefixes the generation engine computes once, and the order it prefills the prompts in:
prompts that share a prefix (the few-shot block, the chat template, the dialect instruction) compute it once.

The prompts go into the same radix tree the log-likelihood engine uses (:func:`.prefix_tree.build_tree`): every
inner node is a prefix that two or more prompts share. A prompt is prefilled after the chain of its shared prefixes
(root side first) that are at least ``min_shared`` tokens long and end before its last token (the prefill must
compute at least one position to get the first token's logits). The order is a depth-first walk with the subtree
that holds the longest prompt first, so the prompts under one prefix are prefilled one after another (the engine
keeps only the current chain's caches) and long prompts still come early (the decode frame mostly shrinks).

Why share only prefixes of ``min_shared`` tokens or more: a split prefill gives float32 results that can differ
from a whole-prompt prefill in the last bits (other matrix shapes), so a near-tie greedy token could change; for a
few tokens (a chat template's opening) that risk buys nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from thai_eval_utils.backend.prefix_tree import Node, build_tree

#: shared prefixes shorter than this are computed again with each prompt
MIN_SHARED_TOKENS = 32


@dataclass(frozen=True)
class PrefillPlan:
    """``order``: prompt indices in prefill order; ``chains[i]``: the shared prefixes prompt ``i`` is prefilled
    after (tree nodes, root side first; ``node.end`` is the prefix's length, ``node.seq[:node.end]`` its tokens)."""

    order: list[int]
    chains: list[list[Node]]


def plan_prefill(prompts: Sequence[Sequence[int]], min_shared: int = MIN_SHARED_TOKENS) -> PrefillPlan:
    """The prefill plan of ``prompts`` (token ids, none empty); ``min_shared`` <= 0 shares nothing and orders the
    prompts longest first."""
    if min_shared <= 0 or len(prompts) < 2:
        return PrefillPlan(sorted(range(len(prompts)), key=lambda i: -len(prompts[i])), [[] for _ in prompts])
    root, terminal = build_tree([tuple(p) for p in prompts])
    ending: dict[int, list[int]] = {}
    for i, node in enumerate(terminal):
        ending.setdefault(id(node), []).append(i)
    longest = _longest_prompt(root, ending, prompts)
    chains = []
    for i, node in enumerate(terminal):
        chain, up = [], node
        while up is not None and up is not root:
            if min_shared <= up.end < len(prompts[i]):
                chain.append(up)
            up = up.parent
        chains.append(chain[::-1])
    return PrefillPlan(_depth_first(root, ending, longest, prompts), chains)


def _longest_prompt(root: Node, ending: dict[int, list[int]], prompts: Sequence[Sequence[int]]) -> dict[int, int]:
    """Length of the longest prompt in each node's subtree (keyed by ``id(node)``), children before parents."""
    post, stack = [], [root]
    while stack:
        node = stack.pop()
        post.append(node)
        stack.extend(node.children)
    longest: dict[int, int] = {}
    for node in reversed(post):
        own = [len(prompts[i]) for i in ending.get(id(node), [])]
        longest[id(node)] = max(own + [longest[id(c)] for c in node.children], default=0)
    return longest


def _depth_first(
    root: Node, ending: dict[int, list[int]], longest: dict[int, int], prompts: Sequence[Sequence[int]]
) -> list[int]:
    """Prompt indices in depth-first order: at each node its children's subtrees, the one holding the longest
    prompt first, then the prompts ending at the node itself (shorter than any below it)."""
    order: list[int] = []
    stack: list[Node | int] = [root]
    while stack:
        top = stack.pop()
        if isinstance(top, int):
            order.append(top)
            continue
        own = sorted(ending.get(id(top), []), key=lambda i: -len(prompts[i]))
        children = sorted(top.children, key=lambda c: -longest[id(c)])
        stack.extend(reversed([*children, *own]))  # popped in the listed order
    return order
