"""The one run loop every benchmark uses: skip finished items, batch the rest, store each record as it finishes.

A benchmark passes only what differs: its items, a key per item (stable across reruns), and a function that
turns a batch of items into one record per item. The loop appends every record to the :class:`RunStore`
(flushed and fsynced) before it starts the next batch, so a run killed at any point loses at most the batch
in flight and a rerun computes only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from tqdm.auto import tqdm

from thai_eval_utils.core.store import RunStore

Item = TypeVar("Item")
Record = dict[str, Any]


@dataclass
class RunOutcome(Generic[Item]):
    """What one pass of :func:`run_items` did.

    ``records`` maps every item's key to its stored record (old and new; items whose batch failed are absent),
    ``computed`` counts the items computed in this pass, and ``failed`` maps the key of each item whose batch
    raised one of the ``tolerate`` errors to the error's text (those items stay unfinished; a rerun retries them).
    """

    keys: list[str]
    records: dict[str, Record]
    computed: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def in_order(self) -> list[Record]:
        """The records of the finished items, in item order."""
        return [self.records[k] for k in self.keys if k in self.records]


def batches(indices: Sequence[int], size: int) -> list[list[int]]:
    """``indices`` cut into consecutive batches of at most ``size`` (at least 1)."""
    size = max(1, int(size))
    return [list(indices[i : i + size]) for i in range(0, len(indices), size)]


def run_items(
    store: RunStore,
    items: Sequence[Item],
    key: Callable[[Item], str],
    compute: Callable[[list[Item]], Sequence[Mapping[str, Any]]],
    *,
    batch_size: int,
    desc: str,
    progress: bool = True,
    tolerate: tuple[type[BaseException], ...] = (),
    describe: Callable[[BaseException], str] = str,
    prepare: Callable[[list[Item]], Any] | None = None,
    finish: Callable[[list[Item], Any], Sequence[Mapping[str, Any]]] | None = None,
    fields: Mapping[str, type | tuple[type, ...]] | None = None,
) -> RunOutcome[Item]:
    """Compute the records of the items the store lacks, batch by batch, and append each as it finishes.

    Args:
        store: the run's results store (its finished records are skipped).
        items: the items of the run, in order.
        key: the store key of an item (stable across reruns; duplicate keys are computed once).
        compute: one batch of items -> one record per item, in order. With ``prepare`` and ``finish``, the loop
            calls ``finish(batch, compute(prepare(batch)))`` instead, so ``compute`` can be the model's own method
            (e.g. ``model.loglikelihood``: a benchmark's batch code then sits beside the model call, not above it).
        batch_size: items per ``compute`` call (and per store flush).
        desc: the progress bar's label.
        progress: show a tqdm bar over the items (finished ones count as done from the start).
        tolerate: errors of ``compute`` that leave the batch's items unfinished instead of ending the run.
        describe: the text recorded for a tolerated error (never a secret: pass a redacting function).
        prepare: a batch of items -> the model call's input (default: the batch itself).
        finish: (batch, the model call's output) -> one record per item (default: the output itself).
        fields: field -> type(s) every stored record must have to be reused (an edited or foreign record is a
            ``ThaiEvalDataError`` naming ``items.jsonl``, its line and the field, not a wrong result later).

    Returns:
        The :class:`RunOutcome`.
    """
    keys = [key(item) for item in items]
    records = dict(store.completed(fields))
    todo, queued = [], set()
    for i, k in enumerate(keys):
        if k not in records and k not in queued:
            queued.add(k)
            todo.append(i)
    outcome: RunOutcome[Item] = RunOutcome(keys, records)
    bar = tqdm(total=len(keys), initial=len(keys) - len(todo), desc=desc, unit="item", disable=not progress)
    try:
        for batch in batches(todo, batch_size):
            chunk = [items[i] for i in batch]
            try:
                output = compute(prepare(chunk) if prepare else chunk)
                fresh = list(finish(chunk, output) if finish else output)
            except tolerate as exc:
                outcome.failed.update({keys[i]: describe(exc) for i in batch})
                continue
            if len(fresh) != len(batch):
                raise RuntimeError(f"{desc}: {len(fresh)} records for a batch of {len(batch)} items")
            for i, rec in zip(batch, fresh):
                store.append(keys[i], rec)
                records[keys[i]] = {"key": keys[i], **rec}
            outcome.computed += len(batch)
            bar.update(len(batch))
    finally:
        bar.close()
    return outcome
