"""Few-shot samplers: LB replay (seed 42, shuffled order), lm-eval 0.4.13 (seed 1234, dataset order), first_n."""

from __future__ import annotations

import random

import pytest

from thai_eval_utils.h6.fewshot import LB_FEWSHOT_SEED, default_seed, lb_draws, sampler_object


def _draws(sampler: str, n_eval: int, n_pool: int, k: int, seed: int | None = None) -> list[list[int]]:
    """Pool indices of every eval doc's examples as a run draws them (``H6Task.draw``: the sampler object)."""
    return sampler_object(sampler, seed).choose(n_pool, k, [None] * n_eval)


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
    assert _draws("lb", 50, 30, 4)[:7] == full[:7]
    # A split of only the first 7 docs would draw differently: the shuffle depends on the split size.
    assert lb_draws(7, 30, 4) != full[:7]


def test_h_sampler_dataset_order():
    rnd = random.Random(1234)
    assert _draws("h", 3, 5, 2) == [[3, 0], [0, 4], [4, 0]]
    assert _draws("h", 3, 5, 2) == [rnd.sample(range(5), 2) for _ in range(3)]
    assert _draws("h", 10, 8, 3)[:4] == _draws("h", 4, 8, 3)  # dataset order: a prefix is a prefix


def test_first_n_and_zero_shot():
    assert _draws("first_n", 3, 7, 5) == [[0, 1, 2, 3, 4]] * 3
    assert lb_draws(4, 0, 0) == [[], [], [], []]
    assert _draws("h", 2, 3, 0) == [[], []]


def test_seeds_and_errors():
    assert default_seed("lb") == LB_FEWSHOT_SEED == 42
    assert default_seed("h") == 1234
    assert _draws("lb", 5, 9, 2, seed=7) != _draws("lb", 5, 9, 2)
    with pytest.raises(ValueError, match="3 few-shot examples requested from a pool of 2"):
        lb_draws(4, 2, 3)
    with pytest.raises(ValueError, match="unknown few-shot sampler"):
        _draws("random", 4, 2, 1)
