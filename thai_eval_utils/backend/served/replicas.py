"""Several OpenAI-compatible servers of one model used as one pool (Thai-H6 spec, "Client practice"):
requests are sharded over the replicas through one shared queue (a faster replica takes more), a replica that
still fails after the openai client's own retries (or gives no reply within the per-request deadline) is dropped
and its requests go back to the queue for the others, and replicas that report different model ids are refused
before a run. A request whose worker fails for any other reason (a malformed reply, an unexpected exception while
parsing it) is re-queued up to ``max_retries`` times and then fails the run with a named :class:`ApiError`; a run
never waits on a request no worker holds.

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

from thai_eval_utils.backend.api_replies import FATAL_ERRORS, ApiError, describe_error
from thai_eval_utils.backend.client_options import ClientOptions
from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.core.provenance import public_url, scrub

T = TypeVar("T")

#: Errors that no other replica and no retry can fix: stop the run (bad key, unknown model, a request the
#: server rejects, e.g. a prompt longer than its context window).
FATAL: tuple[type[BaseException], ...] = (*FATAL_ERRORS, openai.BadRequestError, openai.UnprocessableEntityError)
#: Errors left after the client's retries that mean "this server is failing": drop it, re-queue its work.
REPLICA_DOWN: tuple[type[BaseException], ...] = (openai.APIConnectionError, openai.APIStatusError)


class MalformedReply(ValueError):
    """A 200 reply without what was asked for (no choices, no log-probabilities...): never scored; retried."""


class RequestDeadline(TimeoutError):
    """A request got no complete reply within the pool's overall per-request deadline (all retries included)."""


async def within_deadline(awaitable: Awaitable[T], deadline: float | None) -> T:
    """``await awaitable``, raising :class:`RequestDeadline` after ``deadline`` seconds (None: no deadline).

    The openai client's ``timeout`` bounds each read, not a whole reply: a server trickling one byte at a time
    would never time out without this."""
    if deadline is None:
        return await awaitable
    try:
        return await asyncio.wait_for(awaitable, deadline)
    except asyncio.TimeoutError:
        raise RequestDeadline(f"no complete reply within the {deadline:g} s deadline per request") from None


def default_deadline(timeout: float, max_retries: int) -> float:
    """Overall seconds per request: every attempt may use its ``timeout``, plus the openai client's backoff
    between attempts (at most 8 s each)."""
    return timeout * (max_retries + 1) + 8.0 * max_retries


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
        return public_url(self.base_url)


@dataclass
class Pool:
    """The replicas (one per URL of ``options``, with its key, timeout and retries); :meth:`run` does a list of
    jobs over them, ``concurrency`` at a time per replica.

    A job is ``job(client) -> awaitable``: it makes its request(s) with the replica's ``AsyncOpenAI``
    client and parses the reply (raising :class:`MalformedReply` for a reply it cannot use).
    """

    options: ClientOptions
    concurrency: int = 16
    #: overall seconds per request, retries included (None: ``timeout * (max_retries + 1)`` plus backoff)
    deadline: float | None = None
    replicas: list[Replica] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replicas = [Replica(u) for u in self.options.urls]
        if self.deadline is None:
            self.deadline = default_deadline(self.options.timeout, self.options.max_retries)

    @property
    def max_retries(self) -> int:
        """Re-queues of a job whose reply is unusable (the openai client's retries per request, too)."""
        return self.options.max_retries

    async def request(self, awaitable: Awaitable[T]) -> T:
        """One request of a job, bounded by :attr:`deadline` (:class:`RequestDeadline`, a replica failure)."""
        return await within_deadline(awaitable, self.deadline)

    def describe(self) -> str:
        return ", ".join(r.public for r in self.replicas)

    async def __aenter__(self) -> Pool:
        for i, r in enumerate(self.replicas):
            r.client = AsyncOpenAI(**self.options.client_kwargs(i))
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
                raise ModelLoadError(f"server {r.public} cannot be reached: {describe_error(exc)}") from None
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
            raise ModelLoadError(
                f"{self.describe()} does not serve {model_id!r} (it serves: {', '.join(ids) or 'nothing'}); "
                "use one of those ids in the model spec"
            )
        return ids

    async def run(
        self,
        jobs: Sequence[Callable[[AsyncOpenAI], Awaitable[T]]],
        *,
        desc: str = "requests",
        progress: bool = False,
        weights: Sequence[int] | None = None,
    ) -> list[T]:
        """Results of ``jobs`` in order; each replica runs up to ``concurrency`` jobs at a time.

        A job whose replica still fails after the client's retries (connection error, 5xx, timeout, no reply
        within :attr:`deadline`) goes back to the queue and that replica takes no more work; a job failing for
        any other reason (:class:`MalformedReply`, or any exception while parsing the reply) is re-queued (any
        replica) up to ``max_retries`` times; :data:`FATAL` errors stop the run. Raises :class:`ApiError` when
        every replica failed, a job's retries are spent, or every worker stopped with jobs left (never waits on a
        job no worker holds).
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

        def retry(r: Replica, i: int, exc: BaseException) -> bool:
            """Re-queue job ``i`` after an unusable reply; False (and the run failed) once its retries are spent."""
            attempts[i] += 1
            if attempts[i] > self.max_retries:
                what = str(exc) if isinstance(exc, MalformedReply) else f"{type(exc).__name__}: {exc}"
                fail(ApiError(scrub(f"{r.public}: malformed reply after {attempts[i]} attempts: {what}")[:800]))
                return False
            queue.put_nowait(i)
            return True

        async def serve(r: Replica) -> None:
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
                except (*REPLICA_DOWN, RequestDeadline) as exc:
                    queue.put_nowait(i)
                    if r.alive:
                        r.alive = False
                        r.error = str(exc) if isinstance(exc, RequestDeadline) else describe_error(exc)
                    if not any(x.alive for x in self.replicas):
                        lines = "; ".join(f"{x.public}: {x.error}" for x in self.replicas)
                        fail(ApiError(f"every server failed ({lines})"))
                    return
                except Exception as exc:  # noqa: BLE001 - MalformedReply, or a reply no parser foresaw
                    if not retry(r, i, exc):
                        return
                else:
                    r.served += 1
                    bar.update(weights[i] if weights else 1)
                    state["left"] -= 1
                    if state["left"] == 0:
                        finished.set()

        async def worker(r: Replica) -> None:
            try:
                await serve(r)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - a bug in this loop must end the run, not hang it
                fail(ApiError(scrub(f"{r.public}: worker failed: {type(exc).__name__}: {exc}")[:800]))

        tasks = [asyncio.create_task(worker(r)) for r in self.replicas for _ in range(self.concurrency)]
        done_waiter = asyncio.create_task(finished.wait())
        try:
            pending = {done_waiter, *tasks}
            while not finished.is_set():
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if not finished.is_set() and pending == {done_waiter}:  # every worker returned, jobs left
                    lines = "; ".join(f"{x.public}: {x.error or 'no error'}" for x in self.replicas)
                    fail(ApiError(f"every worker stopped with {state['left']} of {n} requests unanswered ({lines})"))
        finally:
            for t in (*tasks, done_waiter):
                t.cancel()
            await asyncio.gather(*tasks, done_waiter, return_exceptions=True)
            bar.close()
        if state["error"] is not None:
            raise state["error"]
        return results
