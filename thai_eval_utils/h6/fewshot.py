"""Few-shot draws of the Open LLM Leaderboard harness (LB, commit b281b09) and lm-eval 0.4.13 (spec: Few-shot sampling).

Every sampler here returns, for each evaluation document, the *indices* into the few-shot pool of its
examples, in the order they appear in the prompt. Because ``random.Random.sample`` draws depend only on
the population's length, sampling indices replays the harnesses' draws of documents exactly.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from thai_eval_utils.tasks.shaping import FirstN, RandomSample, Sampler

#: LB: ``evaluator.evaluate`` seeds one ``random.Random()`` with 42 per task (spec: Few-shot sampling).
LB_FEWSHOT_SEED = 42
#: lm-eval 0.4.13: the default ``fewshot_random_seed`` of ``simple_evaluate`` (spec: Few-shot sampling).
H_FEWSHOT_SEED = 1234

#: The sampler names (``H6Protocol.sampler``) and the seed each uses when none is given (first_n draws nothing).
_DEFAULT_SEEDS = {"lb": LB_FEWSHOT_SEED, "h": H_FEWSHOT_SEED, "first_n": None}
SAMPLERS = tuple(_DEFAULT_SEEDS)


def lb_draws(n_eval: int, n_pool: int, k: int, seed: int = LB_FEWSHOT_SEED) -> list[list[int]]:
    """LB's draws: seed a Random, shuffle the eval docs, then sample ``k`` per doc in shuffled order.

    Args:
        n_eval: number of evaluation documents (the whole split, whatever ``limit`` is used later).
        n_pool: size of the few-shot pool.
        k: shots per document.
        seed: the task's seed (LB: 42).

    Returns:
        ``shots[d]`` = pool indices of document ``d``'s examples, in prompt order.

    Example: ``lb_draws(3, 5, 2)[0]`` are the pool indices LB's 2-shot prompt for doc 0 uses.
    """
    if n_eval < 0 or n_pool < 0 or k < 0:
        raise ValueError(f"negative size: n_eval={n_eval}, n_pool={n_pool}, k={k}")
    if k > n_pool:
        raise ValueError(f"{k} few-shot examples requested from a pool of {n_pool}")
    rnd = random.Random()
    rnd.seed(seed)
    order = list(range(n_eval))
    rnd.shuffle(order)
    shots: list[list[int]] = [[] for _ in range(n_eval)]
    if k == 0:  # LB never calls sample() for zero-shot tasks
        return shots
    for d in order:
        shots[d] = rnd.sample(range(n_pool), k)
    return shots


def default_seed(sampler: str) -> int | None:
    """The seed a sampler uses when none is given (LB 42, lm-eval 1234, first_n none)."""
    if sampler not in _DEFAULT_SEEDS:
        raise ValueError(f"unknown few-shot sampler {sampler!r}; expected one of {SAMPLERS}")
    return _DEFAULT_SEEDS[sampler]


class LeaderboardSample(Sampler):
    """LB's sampler as a declared task's sampler object (:class:`~thai_eval_utils.tasks.shaping.Sampler`):
    :func:`lb_draws` over the whole split (``own`` only counts the items: the pool is a separate split)."""

    def __init__(self, seed: int = LB_FEWSHOT_SEED) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.seed = seed

    def parameters(self) -> dict[str, int]:
        return {"seed": self.seed}

    def choose(self, pool_size: int, n: int, own: Sequence[int | None]) -> list[list[int]]:
        return lb_draws(len(own), pool_size, n, self.seed)


def sampler_object(name: str, seed: int | None) -> Sampler:
    """The sampler object of a protocol's sampler name: ``lb`` (:class:`LeaderboardSample`), ``h`` (lm-eval 0.4.13's
    ``RandomSample``: one ``Random(seed)``, ``sample(pool, k)`` per doc in dataset order) or ``first_n``; ``seed`` None: the sampler's default."""
    default = default_seed(name)
    if name == "first_n":
        return FirstN()
    seed = default if seed is None else seed
    return LeaderboardSample(seed) if name == "lb" else RandomSample(seed)  # type: ignore[arg-type]
