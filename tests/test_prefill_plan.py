"""Shared prefixes: which prompt prefixes the generation engine computes once (backend.prefill_plan), on
hand-built token lists; and the engine's texts with shared prefixes against transformers' ``generate`` at batch
size 1 (tests/test_generation.py checks the engine on prompts that share nothing)."""

from __future__ import annotations

import pytest
import torch
from conftest import TRAINING_TEXT

from thai_eval_utils.backend.generation import generate
from thai_eval_utils.backend.prefill_plan import plan_prefill

A = list(range(1, 41)) + [100, 101]  # 42 tokens: shares 40 with B and 20 with C
B = list(range(1, 41)) + [200]  # 41
C = list(range(1, 21)) + [300] * 30  # 50
D = [5, 6]  # shares nothing


def test_chains_hold_the_shared_prefixes_long_enough_and_the_order_keeps_a_prefix_s_prompts_together():
    plan = plan_prefill([A, B, C, D], min_shared=32)
    assert [[n.end for n in chain] for chain in plan.chains] == [[40], [40], [], []]
    assert plan.chains[0][0] is plan.chains[1][0] and plan.chains[0][0].seq[:40] == tuple(range(1, 41))
    # depth first, the subtree holding the longest prompt first: C (50) under the 20-token prefix, then A and B
    # under the 40-token one, then D
    assert plan.order == [2, 0, 1, 3]
    plan = plan_prefill([A, B, C, D], min_shared=16)
    assert [[n.end for n in chain] for chain in plan.chains] == [[20, 40], [20, 40], [20], []]


def test_a_prompt_keeps_at_least_its_last_token_to_compute_and_sharing_can_be_off():
    # B is a prefix of E and a duplicate of F: its own tokens are a node, but its chain stops before them
    E, F = B + [7, 8], list(B)
    plan = plan_prefill([B, E, F], min_shared=32)
    assert [[n.end for n in chain] for chain in plan.chains] == [[], [41], []]
    off = plan_prefill([A, B, C, D], min_shared=0)
    assert off.order == [2, 0, 1, 3] and off.chains == [[], [], [], []]


def _shared_prompts(tok, prefix_chars: int) -> list[list[int]]:
    """Prompts that share a long few-shot-like prefix, two levels deep, and one that shares nothing."""
    block = " ".join(TRAINING_TEXT[:4])[:prefix_chars]
    texts = [
        block + TRAINING_TEXT[5][:18],
        block + TRAINING_TEXT[5][:9] + TRAINING_TEXT[6][:14],
        block + TRAINING_TEXT[7][:20],
        TRAINING_TEXT[8][:30],
        block[:60] + TRAINING_TEXT[2][:16],
    ]
    return [tok(t, add_special_tokens=False).input_ids for t in texts]


@pytest.fixture(params=["tiny_llama", "tiny_gemma3"])
def lm(request):
    return request.getfixturevalue(request.param)


def _alone(model, tok, ids, n):
    with torch.inference_mode():
        out = model.generate(
            torch.tensor([ids]),
            max_new_tokens=n,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=tok.pad_token_id,
        )
    return tok.decode(out[0, len(ids) :], skip_special_tokens=True)


@pytest.mark.parametrize("rows", [1, 16])
def test_shared_prefixes_are_computed_once_and_the_greedy_text_stays_batch_one_s(lm, rows):
    model, tok = lm
    ids = _shared_prompts(tok, 150)
    want = [_alone(model, tok, x, 20) for x in ids]
    texts, stats = generate(model, tok, ids, max_new_tokens=20, max_rows=rows, progress=False, min_shared=8)
    assert texts == want
    plan = plan_prefill(ids, 8)
    nodes = {id(n): n for chain in plan.chains for n in chain}
    parent_end = {id(n): (chain[k - 1].end if k else 0) for chain in plan.chains for k, n in enumerate(chain)}
    computed = sum(n.end - parent_end[k] for k, n in nodes.items())  # each shared prefix's own tokens, once
    computed += sum(len(x) - (chain[-1].end if chain else 0) for x, chain in zip(ids, plan.chains))
    assert len(nodes) >= 2 and computed < sum(map(len, ids))
    assert stats.prompt_tokens == computed
    assert stats.shared_tokens == sum(chain[-1].end for chain in plan.chains if chain)
    whole, off = generate(model, tok, ids, max_new_tokens=20, max_rows=rows, progress=False, min_shared=0)
    assert whole == want and off.prompt_tokens == sum(map(len, ids)) and off.shared_tokens == 0


def test_seeded_sampling_with_shared_prefixes_gives_each_prompt_its_text_alone(tiny_gemma3):
    model, tok = tiny_gemma3
    ids = _shared_prompts(tok, 150)
    kw = {"max_new_tokens": 12, "temperature": 0.9, "top_p": 0.95, "seed": 3, "progress": False, "min_shared": 8}
    alone = [generate(model, tok, [x], **kw)[0][0] for x in ids]
    texts, stats = generate(model, tok, ids, max_rows=3, **kw)
    assert texts == alone and stats.shared_tokens > 0 and len(set(alone)) > 1


def test_tree_positions_counts_each_distinct_prefix_once():
    from thai_eval_utils.backend.prefix_tree import tree_positions

    # 1..20 shared by A, B, C; 21..40 by A and B; then A's 2, B's 1, C's 30 and D's 2 own tokens
    assert tree_positions([tuple(x) for x in (A, B, C, D)]) == 20 + 20 + 2 + 1 + 30 + 2
    assert tree_positions([tuple(A), tuple(A), ()]) == len(A) and tree_positions([]) == 0
