"""How a judge calls any model that can ``chat``: one async ``complete(messages, ...)`` per judgement.

A model with ``session()`` (``ApiModel``: an async client, its semaphore bounding the requests in flight, retries,
token usage) is used as it is. Any other :class:`~thai_eval_utils.core.protocols.ChatModel` (``LocalModel``,
``ServedModel``, a test double) judges in-process through :class:`BatchingSession`: the judgements waiting at once
are sent as one ``chat`` call (grouped by their settings, at most ``batch_size`` a call) in a worker thread, so the
event loop keeps storing finished records while the model generates, and the local engine decodes the batch's rows
together. No HTTP server is involved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from thai_eval_utils.core.protocols import ChatModel, Messages, Reply

#: Judgements per ``chat`` call of a model that does not say how many rows it decodes together (``concurrency``).
DEFAULT_BATCH_SIZE = 8


class ChatSession(Protocol):
    """One judge call: the reply to ``messages`` (raises when the request fails; the judgement stays unjudged)."""

    async def complete(
        self,
        messages: Messages,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> Any: ...


@runtime_checkable
class SessionModel(ChatModel, Protocol):
    """A model with its own async sessions (``ApiModel``): ``async with model.session() as s: await s.complete(...)``."""

    def session(self) -> contextlib.AbstractAsyncContextManager[Any]: ...


class BatchingSession:
    """A synchronous ``chat`` model as a :class:`ChatSession`: requests that wait together become one ``chat`` call.

    Each ``complete`` queues its request and waits; a collector task takes what is queued once every ready task has
    queued its request (the first wave of a run is every judgement; later waves are the replies that did not parse),
    groups it by settings (a repeat's seed is a setting) and calls ``model.chat`` in a worker thread, ``batch_size``
    conversations at most. A failed call fails every request of its batch (those judgements stay unjudged).
    """

    def __init__(self, model: ChatModel, batch_size: int | None = None) -> None:
        self.model = model
        self.batch_size = max(1, int(batch_size or getattr(model, "concurrency", None) or DEFAULT_BATCH_SIZE))
        self._queue: list[tuple[tuple[int, float, float, int | None], Messages, asyncio.Future[Reply]]] = []
        self._wake: asyncio.Event | None = None
        self._collector: asyncio.Task[None] | None = None

    async def __aenter__(self) -> BatchingSession:
        self._wake = asyncio.Event()
        self._collector = asyncio.get_running_loop().create_task(self._collect())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._collector is not None:
            self._collector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._collector

    async def complete(
        self,
        messages: Messages,
        *,
        max_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> Reply:
        assert self._wake is not None, "use `async with BatchingSession(model)`"
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._queue.append(((max_tokens, temperature, top_p, seed), messages, future))
        self._wake.set()
        return await future

    async def _collect(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            for _ in range(3):  # let every task made ready with the last batch queue its request first
                await asyncio.sleep(0)
            while self._queue:
                settings = self._queue[0][0]
                batch = [q for q in self._queue if q[0] == settings][: self.batch_size]
                self._queue = [q for q in self._queue if not any(q is b for b in batch)]
                await self._run(settings, batch)

    async def _run(self, settings: tuple[int, float, float, int | None], batch: list[Any]) -> None:
        max_tokens, temperature, top_p, seed = settings
        try:
            texts = await asyncio.to_thread(
                self.model.chat,
                [m for _, m, _ in batch],
                max_new_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
            )
            if len(texts) != len(batch):
                raise RuntimeError(f"{self.model.name}: {len(texts)} replies for {len(batch)} conversations")
        except Exception as exc:  # noqa: BLE001 - each request of the batch fails with it (unjudged, reported)
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, _, future), text in zip(batch, texts):
            if not future.done():
                future.set_result(Reply(text=text, model=self.model.name))


@contextlib.asynccontextmanager
async def open_session(model: ChatModel, *, batch_size: int | None = None) -> AsyncIterator[ChatSession]:
    """The model's own session when it has one (``ApiModel``), else a :class:`BatchingSession` in-process.

    The test is ``callable(model.session)``, not ``isinstance(model, SessionModel)``, which could evaluate properties
    (an ``ApiModel``'s ``identity`` asks its server)."""
    if callable(getattr(model, "session", None)):
        async with model.session() as session:
            yield session
    else:
        async with BatchingSession(model, batch_size) as session:
            yield session
