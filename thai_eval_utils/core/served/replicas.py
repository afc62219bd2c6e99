"""Several OpenAI-compatible servers of one model used as one pool (Thai-H6 spec, "Client practice"):
requests are sharded over the replicas through one shared queue (a faster replica takes more), a replica that
still fails after the openai client's own retries is dropped and its requests go back to the queue for the
others, and replicas that report different model ids are refused before a run.

Hand-written on ``AsyncOpenAI`` (the pinned client): the client retries one request against one server; no
maintained library re-queues work over several OpenAI-compatible servers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai
from openai import AsyncOpenAI
from tqdm.auto import tqdm

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.openai_client import (
    FATAL_ERRORS,
    ApiError,
    describe_error,
    public_base_url,
)

T = TypeVar("T")

#: Errors that no other replica and no retry can fix: stop the run (bad key, unknown model, a request the
#: server rejects, e.g. a prompt longer than its context window).
FATAL: tuple[type[BaseException], ...] = (*FATAL_ERRORS, openai.BadRequestError, openai.UnprocessableEntityError)
#: Errors left after the client's retries that mean "this server is failing": drop it, re-queue its work.
REPLICA_DOWN: tuple[type[BaseException], ...] = (openai.APIConnectionError, openai.APIStatusError)


class MalformedReply(ValueError):
    """A 200 reply without what was asked for (no choices, no log-probabilities...): never scored; retried."""


def split_base_urls(base_url: str | Sequence[str]) -> list[str]:
    """Replica URLs from a list or a comma-separated string, in order, duplicates dropped."""
    items = base_url.split(",") if isinstance(base_url, str) else list(base_url)
    out: list[str] = []
    for url in (str(u).strip().rstrip("/") for u in items):
        if url and url not in out:
            out.append(url)
    if not out:
        raise ModelLoadError(f"no server URL in base_url={base_url!r}")
    return out


@dataclass
class Replica:
    """One server of the pool, for one event loop (its client lives only inside :meth:`Pool.session`)."""

    base_url: str
    client: AsyncOpenAI | None = None
    alive: bool = True
    served: int = 0
    error: str | None = None
    owned_by: tuple[str, ...] = ()  # the ``owned_by`` fields of its ``/v1/models`` entries (names the server kind)

    @property
    def public(self) -> str:
        return public_base_url(self.base_url)


@dataclass
class Pool:
    """The replicas with the client settings; :meth:`run` does a list of jobs over them.

    A job is ``job(client) -> awaitable``: it makes its request(s) with the replica's ``AsyncOpenAI``
    client and parses the reply (raising :class:`MalformedReply` for a reply it cannot use).
    """

    base_urls: list[str]
    api_key: str
    concurrency: int = 16
    timeout: float = 60.0
    max_retries: int = 6
    replicas: list[Replica] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replicas = [Replica(u) for u in self.base_urls]

    def describe(self) -> str:
        return ", ".join(r.public for r in self.replicas)

    async def __aenter__(self) -> Pool:
        for r in self.replicas:
            r.client = AsyncOpenAI(base_url=r.base_url, api_key=self.api_key, max_retries=self.max_retries,
                                   timeout=self.timeout)
            r.alive, r.error = True, None
        return self

    async def __aexit__(self, *exc: object) -> None:
        for r in self.replicas:
            if r.client is not None:
                await r.client.close()
                r.client = None

    async def served_models(self) -> dict[str, list[str]]:
        """replica URL (public) -> the model ids it serves (``GET /v1/models``)."""

        async def one(r: Replica) -> list[str]:
            assert r.client is not None
            try:
                page = await r.client.models.list()
            except openai.APIError as exc:
                raise ModelLoadError(f"server {r.public} cannot be reached: {describe_error(exc)}") from exc
            r.owned_by = tuple(sorted({str(getattr(m, "owned_by", "") or "") for m in page.data}))
            return sorted(m.id for m in page.data)

        found = await asyncio.gather(*(one(r) for r in self.replicas))
        return {r.public: ids for r, ids in zip(self.replicas, found)}

    async def check_model(self, model_id: str) -> list[str]:
        """Refuse replicas that serve different model ids, or not ``model_id``; returns the served ids."""
        found = await self.served_models()
        distinct = {tuple(v) for v in found.values()}
        if len(distinct) > 1:
            lines = "; ".join(f"{u}: {', '.join(v) or '(none)'}" for u, v in found.items())
            raise ModelLoadError(f"replicas serve different models, refusing to mix them: {lines}")
        ids = list(next(iter(distinct)))
        if model_id not in ids:
            raise ModelLoadError(f"{self.describe()} does not serve {model_id!r} (it serves: {', '.join(ids) or 'nothing'}); "
                                 "use one of those ids in the model spec")
        return ids

    async def run(self, jobs: Sequence[Callable[[AsyncOpenAI], Awaitable[T]]], *, desc: str = "requests",
                  progress: bool = False, weights: Sequence[int] | None = None) -> list[T]:
        """Results of ``jobs`` in order; each replica runs up to ``concurrency`` jobs at a time.

        A job whose replica still fails after the client's retries (connection error, 5xx, timeout) goes back
        to the queue and that replica takes no more work; :class:`MalformedReply` re-queues the job (any replica)
        up to ``max_retries`` times; :data:`FATAL` errors stop the run. Raises :class:`ApiError` when every
        replica failed or a job's retries are spent.
        """
        n = len(jobs)
        results: list[Any] = [None] * n
        if not n:
            return []
        attempts = [0] * n
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(n):
            queue.put_nowait(i)
        state: dict[str, Any] = {"left": n, "error": None}
        finished = asyncio.Event()
        bar = tqdm(total=sum(weights) if weights else n, desc=desc, unit="req", disable=not progress)

        def fail(exc: BaseException) -> None:
            if state["error"] is None:
                state["error"] = exc
            finished.set()

        async def worker(r: Replica) -> None:
            while r.alive and not finished.is_set():
                i = await queue.get()
                if not r.alive:  # dropped while waiting: leave the job to the others
                    queue.put_nowait(i)
                    return
                try:
                    results[i] = await jobs[i](r.client)  # type: ignore[arg-type]
                except FATAL as exc:
                    fail(ApiError(f"{r.public}: {describe_error(exc)}"))
                    return
                except MalformedReply as exc:
                    attempts[i] += 1
                    if attempts[i] > self.max_retries:
                        fail(ApiError(f"{r.public}: malformed reply after {attempts[i]} attempts: {exc}"))
                        return
                    queue.put_nowait(i)
                except REPLICA_DOWN as exc:
                    queue.put_nowait(i)
                    if r.alive:
                        r.alive, r.error = False, describe_error(exc)
                    if not any(x.alive for x in self.replicas):
                        lines = "; ".join(f"{x.public}: {x.error}" for x in self.replicas)
                        fail(ApiError(f"every server failed ({lines})"))
                    return
                else:
                    r.served += 1
                    bar.update(weights[i] if weights else 1)
                    state["left"] -= 1
                    if state["left"] == 0:
                        finished.set()

        tasks = [asyncio.create_task(worker(r)) for r in self.replicas for _ in range(self.concurrency)]
        try:
            await finished.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            bar.close()
        if state["error"] is not None:
            raise state["error"]
        return results
