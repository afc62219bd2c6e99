"""Calling the async OpenAI client from synchronous code, also inside a running event loop (a Jupyter cell):
the coroutine then runs in a worker thread with its own loop, and an interrupt of the caller cancels it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(make_coro: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make_coro()`` to completion from synchronous code.

    With no event loop running this is ``asyncio.run``; inside a running loop (a Jupyter cell) the
    coroutine runs on a fresh loop in a worker thread, since a running loop cannot be re-entered; an
    interrupt of the caller (Jupyter's stop button) cancels that coroutine before it propagates.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())  # type: ignore[arg-type]
    box: dict[str, Any] = {}
    finished, abandoned = threading.Event(), threading.Event()

    async def main() -> T:
        box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
        if abandoned.is_set():  # interrupted before the loop existed: do none of the work
            raise asyncio.CancelledError
        return await make_coro()

    def worker() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
        finally:
            finished.set()

    # Waiting on an Event rather than Thread.join: an interrupted join (3.11) marks the thread finished. The
    # thread starts inside the try, so an interrupt arriving as soon as it runs is still handled here.
    thread = threading.Thread(target=worker, name="thai-eval-api", daemon=True)
    try:
        thread.start()
        finished.wait()
    except BaseException:  # an interrupt (Jupyter's stop button): cancel the work, wait for it to unwind
        abandoned.set()  # a worker that has no loop yet sees this and stops before the work
        if "loop" in box:  # a worker that has one: cancel its task
            with contextlib.suppress(RuntimeError):  # the loop already closed: nothing left to cancel
                box["loop"].call_soon_threadsafe(box["task"].cancel)
        if thread.is_alive():
            finished.wait()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]
