"""The one run loop every benchmark uses: skip finished items, batch the rest, store each record as it finishes.

A benchmark passes only what differs: its items, a key per item (stable across reruns), and a function that
turns a batch of items into one record per item. The loop appends every record to the :class:`RunStore`
(flushed and fsynced) before it starts the next batch, so a run killed at any point loses at most the batch
in flight and a rerun computes only what is missing.

:func:`run_items_async` is the same loop for a call made per item on an event loop (the ThaiCLI judge: many
requests in flight, each item finishing on its own): every item is prepared, called and finished as a task, and
its record is appended as soon as it finishes (in group commits on a writer thread, so the event loop never
waits on the disk); a run killed at any point loses only the calls in flight.

While ``run_items`` computes a batch it says which items the call is for (:func:`current_call`: the store and the
items' keys), so a model that answers later, in batches (:class:`thai_eval_utils.backend.batch_model.BatchChatModel`),
names each request by its item's store key and keeps its files in the run's folder, whatever benchmark
made the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
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
    ``fatal`` is the error that ended a :func:`run_items_async` pass early (None when it ran to the end).
    ``store`` is the store the pass ran on (what a summary keys a second store by, e.g. a judge's run).
    """

    keys: list[str]
    records: dict[str, Record]
    computed: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    fatal: BaseException | None = None
    store: RunStore | None = None

    def in_order(self) -> list[Record]:
        """The records of the finished items, in item order."""
        return [self.records[k] for k in self.keys if k in self.records]


@dataclass(frozen=True)
class CurrentCall:
    """The items a model call of :func:`run_items` is for: the run's store and each item's key, in call order."""

    store: RunStore
    keys: tuple[str, ...]


_CURRENT: contextvars.ContextVar[CurrentCall | None] = contextvars.ContextVar("thai_eval_current_call", default=None)


def current_call() -> CurrentCall | None:
    """The call :func:`run_items` is making now (None outside one): a batch-mode model reads its items' keys here."""
    return _CURRENT.get()


@contextlib.contextmanager
def _calling(store: RunStore, keys: Sequence[str]) -> Iterator[None]:
    token = _CURRENT.set(CurrentCall(store, tuple(keys)))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def batches(indices: Sequence[int], size: int, group: Callable[[int], Any] | None = None) -> list[list[int]]:
    """``indices`` cut into consecutive batches of at most ``size`` (at least 1); with ``group``, also cut wherever
    ``group(index)`` changes, so no batch mixes two groups."""
    size = max(1, int(size))
    out: list[list[int]] = []
    for i in indices:
        if out and len(out[-1]) < size and (group is None or group(i) == group(out[-1][0])):
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _pending(
    store: RunStore,
    items: Sequence[Item],
    key: Callable[[Item], str],
    fields: Mapping[str, type | tuple[type, ...]] | None,
    done: Callable[[Record], bool] | None = None,
) -> tuple[list[str], dict[str, Record], list[int]]:
    """The items' keys, the stored records that count as finished (``done``, default all) and the indices of the
    items to compute (the first item of each key without a finished record)."""
    keys = [key(item) for item in items]
    records = {k: r for k, r in store.completed(fields).items() if done is None or done(r)}
    todo, queued = [], set()
    for i, k in enumerate(keys):
        if k not in records and k not in queued:
            queued.add(k)
            todo.append(i)
    return keys, records, todo


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
    group: Callable[[Item], Any] | None = None,
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
        group: an item -> its group; items of different groups never share a batch (e.g. a suite's repeated runs,
            each called with its own seed). None: batches of consecutive items, whatever they are.

    Returns:
        The :class:`RunOutcome`.
    """
    keys, records, todo = _pending(store, items, key, fields)
    outcome: RunOutcome[Item] = RunOutcome(keys, records, store=store)
    bar = tqdm(total=len(keys), initial=len(keys) - len(todo), desc=desc, unit="item", disable=not progress)
    try:
        for batch in batches(todo, batch_size, None if group is None else (lambda i: group(items[i]))):
            chunk = [items[i] for i in batch]
            try:
                with _calling(store, [keys[i] for i in batch]):
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


class StoreWriter:
    """Appends records to a store on a background thread, in group commits (:meth:`RunStore.append_many`: one
    fsync per batch), so an event loop never blocks on the disk. :meth:`close` writes everything put before it
    and re-raises the first write error (a failed write stops the writing: what follows it is not appended)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.queue: queue.SimpleQueue[tuple[str, Mapping[str, Any]] | None] = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="thai-eval-store-writer", daemon=True)
        self.thread.start()

    def put(self, key: str, record: Mapping[str, Any]) -> None:
        """Queue one finished item's record."""
        self.queue.put((key, record))

    def _loop(self) -> None:
        done = False
        while not done:
            batch = [self.queue.get()]
            while not self.queue.empty():
                batch.append(self.queue.get())
            done = None in batch
            try:
                if self.error is None:
                    self.store.append_many([entry for entry in batch if entry is not None])
            except BaseException as exc:  # noqa: BLE001 - re-raised by close()
                self.error = exc

    def close(self) -> None:
        """Write every queued record, stop the thread, re-raise a write error."""
        self.queue.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


async def run_items_async(
    store: RunStore,
    items: Sequence[Item],
    key: Callable[[Item], str],
    call: Callable[[Any], Awaitable[Any]],
    *,
    prepare: Callable[[Item], Any] | None = None,
    finish: Callable[[Item, Any], Mapping[str, Any]] | None = None,
    done: Callable[[Record], bool] | None = None,
    desc: str,
    progress: bool = True,
    tolerate: tuple[type[BaseException], ...] = (),
    fatal: tuple[type[BaseException], ...] = (),
    describe: Callable[[BaseException], str] = str,
) -> RunOutcome[Item]:
    """:func:`run_items` for one awaited call per item: the items the store lacks are prepared, called and
    finished concurrently (``finish(item, await call(prepare(item)))``, all started at once: ``call`` bounds what
    is in flight, e.g. through a client's semaphore), and each record is appended as soon as its item finishes.

    Args:
        call: the model call of one prepared item (a coroutine function).
        prepare: an item -> the call's input (default: the item).
        finish: (item, the call's output) -> the item's record (default: the output).
        done: which stored records count as finished (default: all; e.g. not a record of a failed item).
        tolerate: errors of one item that leave it unfinished (recorded in ``failed``) while the others go on.
        fatal: errors that end the run (checked before ``tolerate``): the items in flight are cancelled, every
            finished record is written, and the first such error is returned as ``outcome.fatal`` (the caller
            writes what it must, e.g. a summary, then raises it).
        store, items, key, desc, progress, describe: as for :func:`run_items` (duplicate keys are called once).

    Returns:
        The :class:`RunOutcome`.
    """
    keys, records, todo = _pending(store, items, key, None, done)
    outcome: RunOutcome[Item] = RunOutcome(keys, records, store=store)
    bar = tqdm(total=len(keys), initial=len(keys) - len(todo), desc=desc, unit="item", disable=not progress)

    async def one(i: int) -> None:
        item = items[i]
        try:
            output = await call(prepare(item) if prepare else item)
            rec = dict(finish(item, output) if finish else output)
        except fatal:
            raise
        except tolerate as exc:
            outcome.failed[keys[i]] = describe(exc)
        else:
            writer.put(keys[i], rec)
            records[keys[i]] = {"key": keys[i], **rec}
            outcome.computed += 1
        bar.update(1)

    writer = StoreWriter(store)
    try:
        outcome.fatal = await _gather([one(i) for i in todo], fatal)
    finally:
        writer.close()  # every finished record is on disk before returning or raising
        bar.close()
    return outcome


async def _gather(
    coros: list[Coroutine[Any, Any, None]], fatal: tuple[type[BaseException], ...]
) -> BaseException | None:
    """Run ``coros`` together; on the first ``fatal`` error cancel the others and return it (None when all ended);
    any other error is raised."""
    try:
        async with asyncio.TaskGroup() as group:
            for coro in coros:
                group.create_task(coro)
    except BaseExceptionGroup as errors:  # the TaskGroup wraps the first fatal error
        first = errors.subgroup(fatal) if fatal else None
        if first is None:
            raise
        return first.exceptions[0]
    return None
