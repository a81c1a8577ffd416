"""Live step runs: a step running on the runtime loop, watched by whoever cares to look.

A step belongs to the runtime, not to the page or request that started it. Each run keeps the
events it has emitted so far, so a watcher that arrives late (a reloaded page, a second tab)
first sees what it missed, then each new event as it happens, from any thread or event loop.
`LIVE_RUNS` holds the runs of this process until they end.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from agent_core.errors import StepError

if TYPE_CHECKING:
    from agent_core.events import StepEvent
    from agent_core.types import TaskStepOutput

__all__ = ["LIVE_RUNS", "STOPPED_BY_YOU", "StepRun"]

STOPPED_BY_YOU = "stopped by you"
"""The error recorded on a step stopped with `cancel_step` (or the app's Stop button)."""


class StepRun:
    """One run of one step: its events so far, its end, and a way to stop it.

    Created by the runner when a step starts; `AgentRunner.start_step` returns it and
    `AgentRunner.running_steps` finds it again.
    """

    def __init__(self, task_id: str, step_id: str, task: asyncio.Task[Any] | None) -> None:
        self.task_id = task_id
        self.step_id = step_id
        self._task = task
        self._loop = task.get_loop() if task is not None else None
        self._events: list[StepEvent] = []
        self._changed = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._output: TaskStepOutput | None = None
        self._error: BaseException | None = None
        self._done = False
        self.stop_requested = False

    def __repr__(self) -> str:
        state = "done" if self._done else "running"
        return f"StepRun(task_id={self.task_id!r}, step_id={self.step_id!r}, {state})"

    # ---------------------------------------------------------------- the runner's side

    def record(self, event: StepEvent) -> None:
        """Keep `event` and wake every watcher (called on the runtime loop)."""
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()
        self._wake_async()

    def finish(self, output: TaskStepOutput | None, error: BaseException | None) -> None:
        """Mark the run ended with its output or its error, and wake every watcher."""
        with self._changed:
            self._output, self._error, self._done = output, error, True
            self._changed.notify_all()
        self._wake_async()
        LIVE_RUNS.remove(self)

    def _wake_async(self) -> None:
        for loop, event in list(self._waiters):
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)

    # ---------------------------------------------------------------- the watcher's side

    @property
    def done(self) -> bool:
        """Whether the step has ended (completed, failed or stopped)."""
        return self._done

    @property
    def text(self) -> str:
        """The model's reply streamed so far."""
        with self._changed:
            return "".join(e.delta for e in self._events if e.kind == "token_delta")

    def events_since(self, index: int, *, timeout: float | None = None) -> list[StepEvent]:
        """The events after the first `index`, waiting up to `timeout` s for one if none yet."""
        with self._changed:
            if len(self._events) <= index and not self._done and timeout != 0:
                self._changed.wait(timeout)
            return self._events[index:]

    def watch(self, *, timeout: float | None = None) -> Iterator[StepEvent]:
        """Every event from the first, then each new one, until the step ends.

        `timeout` bounds the whole watch in seconds; the iterator then just stops.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = 0
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = self.events_since(seen, timeout=left)
            yield from events
            seen += len(events)
            if (self._done and seen == len(self._events)) or left == 0.0:
                return

    async def awatch(self) -> AsyncIterator[StepEvent]:
        """`watch` for async code, on any event loop."""
        wake = asyncio.Event()
        waiter = (asyncio.get_running_loop(), wake)
        self._waiters.append(waiter)
        try:
            seen = 0
            while True:
                wake.clear()
                events = self.events_since(seen, timeout=0)
                for event in events:
                    yield event
                seen += len(events)
                if self._done and seen == len(self._events):
                    return
                if not events:
                    await wake.wait()
        finally:
            self._waiters.remove(waiter)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the step to end; whether it did within `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._done, timeout)

    def result(self, timeout: float | None = None) -> TaskStepOutput:
        """The step's output once it has ended; raises its `StepError` if it failed.

        Raises:
            TimeoutError: The step is still running after `timeout` seconds.
        """
        if not self.wait(timeout):
            raise TimeoutError(f"step {self.step_id} is still running after {timeout}s")
        return self._outcome()

    def _outcome(self) -> TaskStepOutput:
        if self._error is not None:
            raise self._error
        if self._output is None:
            raise StepError(f"step {self.step_id} ended without an output")
        return self._output

    def cancel(self) -> None:
        """Stop the step: it is recorded as failed, "stopped by you", and can run again."""
        self.stop_requested = True
        if self._task is not None and self._loop is not None and not self._done:
            self._loop.call_soon_threadsafe(self._task.cancel)


class _LiveRuns:
    """The step runs of this process that have not ended, by step id."""

    def __init__(self) -> None:
        self._runs: dict[str, StepRun] = {}
        self._listeners: list[Callable[[StepRun], None]] = []
        self._guard = threading.Lock()

    def add(self, run: StepRun) -> None:
        with self._guard:
            self._runs[run.step_id] = run
            listeners = list(self._listeners)
        for listener in listeners:
            listener(run)

    def subscribe(self, listener: Callable[[StepRun], None]) -> Callable[[], None]:
        """Call `listener(run)` for each run that starts from now on; returns the unsubscribe.

        The listener is called on the runtime loop: it must only hand the run over.
        """
        with self._guard:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._guard, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def remove(self, run: StepRun) -> None:
        with self._guard:
            if self._runs.get(run.step_id) is run:
                del self._runs[run.step_id]

    def get(self, step_id: str) -> StepRun | None:
        with self._guard:
            return self._runs.get(step_id)

    def of_task(self, task_id: str) -> list[StepRun]:
        with self._guard:
            return [run for run in self._runs.values() if run.task_id == task_id]

    def all(self) -> list[StepRun]:
        """Every run of this process that has not ended."""
        with self._guard:
            return list(self._runs.values())


LIVE_RUNS = _LiveRuns()
