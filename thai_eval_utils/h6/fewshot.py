"""Few-shot draws of the Open LLM Leaderboard harness (LB, commit b281b09) and lm-eval 0.4.13 (spec: Few-shot sampling).

Every sampler here returns, for each evaluation document, the *indices* into the few-shot pool of its
examples, in the order they appear in the prompt. Because ``random.Random.sample`` draws depend only on
the population's length, sampling indices replays the harnesses' draws of documents exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from thai_eval_utils.tasks.shaping import FirstN, RandomSample, Sampler

#: LB: ``evaluator.evaluate`` seeds one ``random.Random()`` with 42 per task (spec: Few-shot sampling).
LB_FEWSHOT_SEED = 42
#: lm-eval 0.4.13: the default ``fewshot_random_seed`` of ``simple_evaluate`` (spec: Few-shot sampling).
H_FEWSHOT_SEED = 1234

#: Sampler names accepted by :func:`draw_shots`.
SAMPLERS = ("lb", "h", "first_n")


def _check(n_eval: int, n_pool: int, k: int) -> None:
    if n_eval < 0 or n_pool < 0 or k < 0:
        raise ValueError(f"negative size: n_eval={n_eval}, n_pool={n_pool}, k={k}")
    if k > n_pool:
        raise ValueError(f"{k} few-shot examples requested from a pool of {n_pool}")


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
    _check(n_eval, n_pool, k)
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


def h_draws(n_eval: int, n_pool: int, k: int, seed: int = H_FEWSHOT_SEED) -> list[list[int]]:
    """lm-eval 0.4.13's draws: one ``Random(seed)``, ``sample(pool, k)`` per doc in dataset order."""
    _check(n_eval, n_pool, k)
    rnd = random.Random(seed)
    if k == 0:
        return [[] for _ in range(n_eval)]
    return [rnd.sample(range(n_pool), k) for _ in range(n_eval)]


def first_n_draws(n_eval: int, n_pool: int, k: int, seed: int | None = None) -> list[list[int]]:
    """The first ``k`` pool items in file order for every doc (MMLU in both LB and lm-eval)."""
    _check(n_eval, n_pool, k)
    return [list(range(k)) for _ in range(n_eval)]


_SAMPLERS: dict[str, Callable[..., list[list[int]]]] = {"lb": lb_draws, "h": h_draws, "first_n": first_n_draws}
_DEFAULT_SEEDS = {"lb": LB_FEWSHOT_SEED, "h": H_FEWSHOT_SEED, "first_n": None}


def default_seed(sampler: str) -> int | None:
    """The seed a sampler uses when none is given (LB 42, lm-eval 1234, first_n none)."""
    if sampler not in _SAMPLERS:
        raise ValueError(f"unknown few-shot sampler {sampler!r}; expected one of {SAMPLERS}")
    return _DEFAULT_SEEDS[sampler]


def draw_shots(sampler: str, n_eval: int, n_pool: int, k: int, seed: int | None = None) -> list[list[int]]:
    """Pool indices of every eval doc's few-shot examples under ``sampler`` ("lb", "h" or "first_n").

    The draws are made for the whole split so that evaluating only the first N documents gives
    them exactly the examples they get in a full run.
    """
    if sampler not in _SAMPLERS:
        raise ValueError(f"unknown few-shot sampler {sampler!r}; expected one of {SAMPLERS}")
    if seed is None:
        seed = _DEFAULT_SEEDS[sampler]
    return _SAMPLERS[sampler](n_eval, n_pool, k, seed) if seed is not None else _SAMPLERS[sampler](n_eval, n_pool, k)


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
    ``RandomSample``, the same draws as :func:`h_draws`) or ``first_n``; ``seed`` None: the sampler's default."""
    if name not in _SAMPLERS:
        raise ValueError(f"unknown few-shot sampler {name!r}; expected one of {SAMPLERS}")
    seed = _DEFAULT_SEEDS[name] if seed is None else seed
    if name == "first_n":
        return FirstN()
    return LeaderboardSample(seed) if name == "lb" else RandomSample(seed)  # type: ignore[arg-type]
