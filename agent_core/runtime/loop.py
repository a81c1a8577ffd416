"""The runtime loop: one long-lived event loop on a daemon thread, where every step runs.

Callers come from anywhere: Streamlit runs each rerun on a new thread, an HTTP server has its
own loop, a script calls `asyncio.run` per call, a notebook keeps a loop alive. Anything async
that the runtime holds (SDK clients and their keep-alive pools, timers, tasks) is bound to the
loop it was created on, so all of it is created on this one loop, which lives as long as the
process: nothing can be bound to a loop that dies.

- sync callers submit a coroutine and wait (`run_sync`, `iterate_sync`); an interrupt
  (KeyboardInterrupt or any `BaseException`) cancels the coroutine and waits until it has
  unwound, so nothing half-run resumes later;
- async callers on another loop hand the coroutine over and await it (`on_runtime`);
  cancelling the caller cancels the work, and waits for it to unwind;
- work already on the runtime loop runs inline.

Code running for the runtime (a tool in a worker thread, a worker on the loop) must not call
a sync twin: it would wait on the loop it is running on, or on itself. `run_sync` refuses it
with the async twin named.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

from agent_core._loop_thread import start_loop_thread
from agent_core.errors import UserError

__all__ = [
    "iterate_sync",
    "on_runtime",
    "on_runtime_thread",
    "run_sync",
    "runs_on_runtime",
    "runtime_loop",
    "submit",
]

T = TypeVar("T")
P = ParamSpec("P")

_ON_RUNTIME: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "stepwise_on_runtime", default=False
)
"""True in code the runtime runs: its tasks and the threads they hand sync tools to."""

_guard = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def runtime_loop() -> asyncio.AbstractEventLoop:
    """The process's runtime loop, started on first use on a daemon thread."""
    global _loop
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _guard:
        if _loop is None or _loop.is_closed():
            _loop = start_loop_thread("stepwise-runtime")
        return _loop


def _on_this_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class Submitted(concurrent.futures.Future):  # type: ignore[type-arg]
    """A coroutine running on the runtime loop: its result, and a way to cancel it.

    Unlike `asyncio.run_coroutine_threadsafe`'s future, this one completes only once the
    coroutine has finished unwinding, even when it is cancelled before it started.
    """

    def __init__(self) -> None:
        super().__init__()
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False

    def request_cancel(self) -> None:
        """Ask the coroutine to stop; `result()` then raises `CancelledError` once it has."""
        self._cancel_requested = True
        loop = runtime_loop()
        loop.call_soon_threadsafe(self._cancel_task)

    def cancel(self) -> bool:
        """Ask the coroutine to stop; the future completes once it has unwound, not before."""
        self.request_cancel()
        return False  # `asyncio.wrap_future` cancels through here; stay pending until unwound.

    def _cancel_task(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def _start(self, coro: Coroutine[Any, Any, Any]) -> None:
        if self._cancel_requested:  # Interrupted before it began: it never runs at all.
            coro.close()
            self.set_exception(asyncio.CancelledError())
            return
        context = contextvars.copy_context()
        context.run(_ON_RUNTIME.set, True)
        task = runtime_loop().create_task(coro, context=context)
        self._task = task
        task.add_done_callback(self._settle)

    def _settle(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            self.set_exception(asyncio.CancelledError())
        elif (error := task.exception()) is not None:
            self.set_exception(error)
        else:
            self.set_result(task.result())


def submit(coro: Coroutine[Any, Any, T]) -> Submitted:
    """Start `coro` on the runtime loop from any thread; returns at once."""
    submitted = Submitted()
    _schedule(submitted, coro)
    return submitted


def _schedule(submitted: Submitted, coro: Coroutine[Any, Any, Any]) -> None:
    runtime_loop().call_soon_threadsafe(submitted._start, coro)


def _run_and_wait(coro: Coroutine[Any, Any, T]) -> T:
    submitted = Submitted()
    try:
        _schedule(submitted, coro)  # An interrupt may land here too, once it is queued.
        return submitted.result()
    except BaseException:
        if not submitted.done():
            # Stop the work and let it unwind. A coroutine whose task does not exist yet
            # is cancelled before its first line when `_start` sees the request.
            submitted.request_cancel()
            if submitted._task is not None:
                concurrent.futures.wait([submitted])
        raise


def _refuse_nested(name: str) -> None:
    if _ON_RUNTIME.get():
        raise UserError(
            f"{name}() cannot be called from code the runtime is running (a tool or a worker); "
            f"use `await a{name}(...)` instead"
        )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UserError(
        f"{name}() cannot run inside a running event loop (async code or a notebook); "
        f"use `await a{name}(...)` instead"
    )


def run_sync(coro: Coroutine[Any, Any, T], *, name: str) -> T:
    """Run `coro` on the runtime loop and wait; `name` is the sync method's name.

    Raises:
        UserError: Called inside a running event loop, or from code the runtime runs.
    """
    try:
        _refuse_nested(name)
    except UserError:
        coro.close()
        raise
    return _run_and_wait(coro)


def iterate_sync(stream: AsyncIterator[T], *, name: str) -> Iterator[T]:
    """Drive an async iterator on the runtime loop from sync code, one item at a time."""
    _refuse_nested(name)
    try:
        while True:
            try:
                yield _run_and_wait(_next(stream))
            except StopAsyncIteration:
                return
    finally:
        # A consumer that stops early must still let the step finish and commit.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            _run_and_wait(aclose())


async def _next(stream: AsyncIterator[T]) -> T:
    return await anext(stream)


async def on_runtime(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on the runtime loop, from whichever loop the caller is on."""
    loop = runtime_loop()
    if _on_this_loop(loop):
        return await coro
    submitted = submit(coro)
    try:
        return await asyncio.wrap_future(submitted)
    except asyncio.CancelledError:
        if not submitted.done():
            submitted.request_cancel()
            await asyncio.shield(asyncio.wrap_future(_unwound(submitted)))
        raise


def _unwound(submitted: Submitted) -> concurrent.futures.Future[None]:
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    submitted.add_done_callback(lambda _: done.set_result(None))
    return done


def runs_on_runtime(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Make an async method run on the runtime loop whichever loop awaits it."""

    @functools.wraps(method)
    async def handed_over(*args: P.args, **kwargs: P.kwargs) -> T:
        return await on_runtime(method(*args, **kwargs))

    return handed_over


def on_runtime_thread() -> bool:
    """Whether the caller is code the runtime runs (on its loop or in a thread it handed)."""
    return _ON_RUNTIME.get() or _on_this_loop(runtime_loop())
