"""Several SEA-HELM tasks' prompts in one engine call, for speed (docs/benchmarks.md, "SEA-HELM Thai prompts").

SEA-HELM's tasks are long prompts with short, different budgets (16 to 512 new tokens). Run one task at a time, the
local engine decodes a handful of rows per step whenever a task has few items (a ``--limit`` look, or a short task),
and a decode step costs a full read of the weights however few rows it carries. :func:`pool_replies` hands the
engine the pending items of every instruct generation task of a suite run at once, grouped by run (a run's seed is
the same for every task), each prompt with its own task's budget (:class:`~thai_eval_utils.core.protocols.
BudgetPerPromptModel`), and stores each reply in its own task's run store, as :func:`.runner.run_seahelm_task` would: same
record, same key, same run folder. ``run_seahelm_task`` then finds every item stored and only scores.

Pooling changes no text: the engine seeds each row with the call's seed and stops it at its own budget, so a row
gets the text a call of its own gives (``tests/test_generation.py::test_a_budget_per_prompt_gives_each_prompt_
the_text_of_a_call_of_its_own``; ``tests/test_seahelm_pooling.py`` checks the stored records equal those of the
per-task path). It is therefore not part of any config id. A run killed mid-call loses at most the call in flight
(``chunk`` items); a rerun computes only what no store holds.

Not pooled: base models (two-phase generation with a stop string per phase), tasks another module runs (IF-Eval,
MT-Bench), models that take one budget per call (served models; they already run each task's items concurrently),
and models that answer in batch mode (their requests are named by ``run_items``' current call).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from thai_eval_utils.core.protocols import BudgetPerPromptModel, Model
from thai_eval_utils.core.store import RunStore
from thai_eval_utils.seahelm.config import SEEDS
from thai_eval_utils.seahelm.generation import chat_replies
from thai_eval_utils.seahelm.task_run import RECORD_FIELDS, Protocol, TaskSetup, task_setup
from thai_eval_utils.tasks.thinking import apply_to_model

#: Items per engine call, as a multiple of the rows the engine decodes together: larger calls keep more rows busy
#: (finished rows are refilled from the call's queue), smaller ones lose less when the run is killed.
CALLS_OF_ROWS = 4


def can_pool(model: Model, protocol: Protocol) -> bool:
    """Whether :func:`pool_replies` applies: an instruct run on a model that takes a budget per prompt."""
    return isinstance(model, BudgetPerPromptModel) and bool(model.budget_per_prompt) and not protocol.base


def pool_replies(
    model: Model,
    keys: Sequence[str],
    *,
    runs: int,
    limit: int | None = None,
    data_dir: str | Path | None = None,
    outputs: str | Path | None = None,
    protocol: Protocol = Protocol(),
    progress: bool = True,
) -> int:
    """Generate and store every pending reply of the tasks ``keys`` (tasks :mod:`.runner` runs itself, not IF-Eval
    or MT-Bench), run by run, several tasks per engine call; returns how many replies it computed. A no-op (0)
    where :func:`can_pool` is false."""
    if not keys or not can_pool(model, protocol):
        return 0
    size = max(1, int(protocol.batch_size or getattr(model, "concurrency", None) or 8) * CALLS_OF_ROWS)
    computed = 0
    with ExitStack() as stack:
        pending: list[tuple[TaskSetup, RunStore, dict[str, Any]]] = []  # each reply no store holds yet
        for key in keys:
            setup = task_setup(model, key, runs=runs, limit=limit, data_dir=data_dir, protocol=protocol)
            store = stack.enter_context(setup.open_store(model, outputs))
            done = store.completed(RECORD_FIELDS)
            pending += [(setup, store, it) for it in setup.items() if it["id"] not in done]
        if not pending:
            return 0
        stack.enter_context(apply_to_model(model, protocol.thinking))
        desc = f"seahelm, {len(keys)} tasks pooled ({model.name})"
        bar = stack.enter_context(tqdm(total=len(pending), desc=desc, unit="item", disable=not progress))
        for run in sorted({it["run"] for _, _, it in pending}):
            # the longest budgets first, so the rows that decode longest start earliest (stable: task, then row)
            todo = sorted((p for p in pending if p[2]["run"] == run), key=lambda p: -p[0].max_new)
            for start in range(0, len(todo), size):
                chunk = todo[start : start + size]
                convs = [setup.messages(it["row"]) for setup, _, it in chunk]
                budgets, sampling = [setup.max_new for setup, _, _ in chunk], chunk[0][0].sampling
                replies = chat_replies(model, convs, max_tokens=budgets, seed=SEEDS[run], sampling=sampling)
                for (setup, store, it), conv, raw in zip(chunk, convs, replies, strict=True):
                    store.append(it["id"], setup.record(model, run, it["row"], conv, raw))
                computed += len(chunk)
                bar.update(len(chunk))
    return computed
