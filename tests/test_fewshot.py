"""Few-shot samplers: LB replay (seed 42, shuffled order), lm-eval 0.4.13 (seed 1234, dataset order), first_n."""

from __future__ import annotations

import random

import pytest

from thai_eval_utils.h6.fewshot import (
    LB_FEWSHOT_SEED,
    default_seed,
    draw_shots,
    first_n_draws,
    h_draws,
    lb_draws,
)


def _lb_with_documents(docs: list[dict], pool: list[dict], k: int) -> dict[str, list[str]]:
    """LB's loop on real document objects: shuffle the docs, then sample the pool per doc in that order."""
    rnd = random.Random()
    rnd.seed(42)
    shuffled = list(docs)
    rnd.shuffle(shuffled)
    return {d["id"]: [ex["id"] for ex in rnd.sample(pool, k)] for d in shuffled}


def test_lb_first_draws_hand_checked():
    # random.Random(); seed(42); shuffle([0, 1, 2]) -> [1, 0, 2]; then sample(pool of 5, 2) for doc 1,
    # doc 0, doc 2 in turn gives [0, 2], [1, 4], [1, 0] (checked once with `random` directly).
    assert lb_draws(3, 5, 2) == [[1, 4], [0, 2], [1, 0]]


def test_lb_replay_matches_sampling_documents():
    docs = [{"id": f"d{i}", "text": "ข้อ" * i} for i in range(37)]
    pool = [{"id": f"p{j}"} for j in range(23)]
    expected = _lb_with_documents(docs, pool, 5)
    shots = lb_draws(len(docs), len(pool), 5)
    assert {f"d{i}": [f"p{j}" for j in s] for i, s in enumerate(shots)} == expected


def test_limit_keeps_full_run_draws():
    full = lb_draws(50, 30, 4)
    assert draw_shots("lb", 50, 30, 4)[:7] == full[:7]
    # A split of only the first 7 docs would draw differently: the shuffle depends on the split size.
    assert lb_draws(7, 30, 4) != full[:7]


def test_h_sampler_dataset_order():
    rnd = random.Random(1234)
    assert h_draws(3, 5, 2) == [[3, 0], [0, 4], [4, 0]]
    assert h_draws(3, 5, 2) == [rnd.sample(range(5), 2) for _ in range(3)]
    assert h_draws(10, 8, 3)[:4] == h_draws(4, 8, 3)  # dataset order: a prefix is a prefix


def test_first_n_and_zero_shot():
    assert first_n_draws(3, 7, 5) == [[0, 1, 2, 3, 4]] * 3
    assert lb_draws(4, 0, 0) == [[], [], [], []]
    assert draw_shots("h", 2, 3, 0) == [[], []]


def test_seeds_and_errors():
    assert default_seed("lb") == LB_FEWSHOT_SEED == 42
    assert default_seed("h") == 1234
    assert draw_shots("lb", 5, 9, 2, seed=7) != draw_shots("lb", 5, 9, 2)
    with pytest.raises(ValueError, match="3 few-shot examples requested from a pool of 2"):
        lb_draws(4, 2, 3)
    with pytest.raises(ValueError, match="unknown few-shot sampler"):
        draw_shots("random", 4, 2, 1)
