"""The request-order probe of a served model, run once before its first log-likelihood request
(:meth:`.model.ServedModel.check_order`).

Why: a server can make a prompt's echoed log-probabilities depend on the requests before it. vLLM's prompt
log-probabilities change with request order when prefix caching is on, its default (vllm-project/vllm#42019: positions
a cache hit covers keep values from earlier requests); llama-cpp-python always reuses the previous prompt's KV
cache, and llama.cpp's kernels for quantised weights give other numbers for other decode batch sizes (0.40 nats on
these requests with the embedded Q4_K_M Gemma). The echo checks of :mod:`.probe` look at one request at a time
and cannot see it.

How: :data:`ORDER_PROBE_REQUESTS` (two contexts, six continuations, written for this check: a shared context
and continuations sharing their first words, so a prefix cache is hit, some past the 16 tokens of a vLLM cache
block) are scored on every replica twice, first in order and then in reverse order, each time batched as a run
batches them (a document's choices in one request on token-id servers, one prompt per request in turn on text
servers). Every log-likelihood is compared with the first replica's in-order one; a difference over the tolerance
refuses the run with :class:`OrderDependentError`. The two passes keep each batch's composition and change only
the order: a different batch shape changes bfloat16 numbers by itself (0.014 nats on one of these requests with
the embedded Gemma in bfloat16, one batch against one request each; 0 for the same batch reordered), which only
batch-invariant kernels remove (vLLM's beta ``VLLM_BATCH_INVARIANT=1``) and which is not what this probe is after.

Tolerance (:data:`DEFAULT_ORDER_TOLERANCE`, 0.01 nats per request): an order-independent server gives exactly 0;
the failures looked for are larger (llama-cpp-python's 0.40 nats above; vLLM's cache bug returns values computed
for other requests); under 0.01 nats a choice's probability moves by under 1 %. docs/protocol_notes.md, "Request
order", has the measurements.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import openai

from thai_eval_utils.backend.api_replies import describe_error
from thai_eval_utils.backend.served.replicas import MalformedReply, Pool, RequestDeadline
from thai_eval_utils.core.async_bridge import run_sync
from thai_eval_utils.core.errors import ModelLoadError

_SUN = "ถาม: ดวงอาทิตย์ขึ้นทางไหน\nตอบ:"
_MANGO = "แม่มีมะม่วงห้าผล ให้น้องสองผล"
#: (context, continuation) pairs written for this check: short (the embedded Gemma tokenizes them into 15-26
#: tokens; llama-cpp-python spends 0.3-0.6 s per echoed token on its vocabulary), a context shared by four
#: continuations and one by two, continuations that share their first words.
ORDER_PROBE_REQUESTS: tuple[tuple[str, str], ...] = (
    (_SUN, " ทิศตะวันออก"),
    (_SUN, " ทิศตะวันตก"),
    (_SUN, " ทิศตะวันออกเสมอ ไม่ว่าจะเป็นฤดูใดก็ตาม"),
    (_SUN, " ทิศเหนือ"),
    (_MANGO, " เหลือสามผล"),
    (_MANGO, " เหลือสามผล ส่วนน้องเอาสองผลไปกินที่โรงเรียน"),
)
REVERSED_REQUESTS = ORDER_PROBE_REQUESTS[::-1]
#: Largest accepted difference between two scorings of one request, in nats (see the module docstring).
DEFAULT_ORDER_TOLERANCE = 0.01
IN_ORDER, REVERSED = "in order", "in reverse order"

#: One job of a pass: ``job(client)`` -> ``(ll, is_greedy, straddled)`` per prompt of its group.
Job = Callable[[Any], Awaitable[list[tuple[float, bool, bool]]]]
#: A pass's jobs and, for each, the indices of the requests it scores (``ServedModel._scoring_jobs``).
Jobs = tuple[list[Job], list[list[int]]]


def check_tolerance(tolerance: float | None) -> float:
    """``tolerance`` as a float (None: :data:`DEFAULT_ORDER_TOLERANCE`); ValueError unless finite and >= 0."""
    if tolerance is None:
        return DEFAULT_ORDER_TOLERANCE
    value = float(tolerance)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"order_tolerance must be a finite number of nats >= 0, got {tolerance!r}")
    return value


class OrderDependentError(ModelLoadError):
    """A served model's log-likelihoods changed with the order of the requests (the probe's worst request named)."""

    def __init__(
        self,
        message: str,
        *,
        request: tuple[str, str],
        values: tuple[float, float],
        difference: float,
        tolerance: float,
        servers: tuple[str, str],
    ) -> None:
        super().__init__(message)
        self.request, self.values, self.difference = request, values, difference
        self.tolerance, self.servers = tolerance, servers


@dataclass(frozen=True)
class Pass:
    """One scoring of every probe request on one server: ``lls[i]`` is request ``i``'s log-likelihood."""

    server: str
    order: str
    lls: tuple[float, ...]


@dataclass(frozen=True)
class OrderProbeResult:
    """What the probe found: the requests scored per pass, the largest difference seen, the tolerance."""

    requests: int
    max_abs_diff: float
    tolerance: float

    @property
    def identity(self) -> dict[str, Any]:
        """The run card's ``order_probe`` entry."""
        return {"requests": self.requests, "max_abs_diff": self.max_abs_diff, "tolerance": self.tolerance}


#: The run card's ``order_probe`` entry of a model loaded with ``order_probe=False``.
SKIPPED = {"skipped": "order_probe=False: log-likelihoods not checked for request-order dependence"}


async def _run_pass(
    client: Any, where: str, jobs: Sequence[Job], groups: Sequence[Sequence[int]], n: int, order: str
) -> Pass:
    """The jobs one after the other on one server; ``groups[k]`` are the request indices job ``k`` scores."""
    lls = [math.nan] * n
    try:
        for job, group in zip(jobs, groups):
            for i, (ll, _, _) in zip(group, await job(client)):
                lls[i] = ll
    except (RequestDeadline, MalformedReply) as exc:
        raise ModelLoadError(f"order probe of {where} failed: {exc}") from None
    except openai.APIError as exc:
        raise ModelLoadError(f"order probe of {where} failed: {describe_error(exc)}") from None
    return Pass(where, order, tuple(lls))


async def score_both_orders(pool: Pool, forward: Jobs, backward: Jobs, n: int) -> list[Pass]:
    """Every replica of ``pool`` (entered) scores the ``n`` requests in order, then in reverse order (the replicas
    at the same time); ``backward``'s groups index the reversed list. The first replica's in-order pass first."""
    flipped = [[n - 1 - i for i in g] for g in backward[1]]

    async def on(r: Any) -> list[Pass]:
        first = await _run_pass(r.client, r.public, forward[0], forward[1], n, IN_ORDER)
        return [first, await _run_pass(r.client, r.public, backward[0], flipped, n, REVERSED)]

    found = await asyncio.gather(*(on(r) for r in pool.replicas))
    return [p for passes in found for p in passes]


def run_order_probe(
    pool: Pool, forward: Jobs, backward: Jobs, tolerance: float, *, model_id: str, server_kind: str | None
) -> OrderProbeResult:
    """Score :data:`ORDER_PROBE_REQUESTS` with ``forward``'s jobs, then ``backward``'s (the reversed requests), on
    every replica of ``pool`` (not entered) and :func:`judge` the passes."""

    async def go() -> list[Pass]:
        async with pool:
            return await score_both_orders(pool, forward, backward, len(ORDER_PROBE_REQUESTS))

    return judge(run_sync(go), tolerance, model_id=model_id, server_kind=server_kind)


def judge(passes: Sequence[Pass], tolerance: float, *, model_id: str, server_kind: str | None) -> OrderProbeResult:
    """Compare every pass with the first; :class:`OrderDependentError` naming the worst request over
    ``tolerance``, else the result."""
    reference = passes[0]
    worst, at, other = 0.0, 0, reference
    for p in passes[1:]:
        for i, (a, b) in enumerate(zip(reference.lls, p.lls)):
            diff = abs(a - b) if math.isfinite(a) and math.isfinite(b) else math.inf
            if diff > worst:
                worst, at, other = diff, i, p
    if worst > tolerance:
        raise _order_error(reference, other, at, worst, tolerance, model_id, server_kind)
    return OrderProbeResult(len(reference.lls), worst, tolerance)


def _order_error(
    reference: Pass, other: Pass, i: int, diff: float, tolerance: float, model_id: str, server_kind: str | None
) -> OrderDependentError:
    """The refusal: the request, both scorings (value, order, server), the difference, the cause and the fix."""
    request = ORDER_PROBE_REQUESTS[i]
    a, b = reference.lls[i], other.lls[i]
    message = (
        f"order probe: {model_id!r} scored request {i + 1} of {len(reference.lls)} ({request[0]!r} + "
        f"{request[1]!r}) {a:.6f} {reference.order} on {reference.server} and {b:.6f} {other.order} on "
        f"{other.server}: a difference of {diff:.3g} nats > order_tolerance {tolerance:g}. "
    )
    message += _cause(server_kind)
    if other.server != reference.server:
        message += " The two values come from different servers: replicas on other hardware or software differ too."
    message += (
        " Or accept numbers that depend on the request order: order_probe=False (thai-eval run "
        "--no-order-probe) or a larger order_tolerance (--order-tolerance); the run card records either."
    )
    return OrderDependentError(
        message,
        request=request,
        values=(a, b),
        difference=diff,
        tolerance=tolerance,
        servers=(reference.server, other.server),
    )


def _cause(server_kind: str | None) -> str:
    """The likely cause and its fix, by server software (``ProbeResult.server``)."""
    if server_kind == "llama-cpp-python":
        return (
            "Likely cause: llama-cpp-python reuses the KV cache of the prefix a prompt shares with the previous "
            "one (always on; no server option turns it off), and llama.cpp's kernels for quantised weights "
            "give other numbers for other decode batch sizes, so a request's log-likelihood depends on the "
            "request before it (a float32 GGUF gave the same numbers in any order in thai-eval's tests)."
        )
    return (
        "Likely cause: the server's prefix cache (vLLM's prompt log-probabilities change with request order "
        "when prefix caching is on, its default: vllm-project/vllm#42019; SGLang's radix cache reuses prefixes the "
        "same way). Fix: restart the server with --no-enable-prefix-caching (vLLM) or --disable-radix-cache "
        "(SGLang)."
    )
