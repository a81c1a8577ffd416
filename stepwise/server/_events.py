"""A task's events, live, for `GET /stepwise/v1/tasks/{id}/events` (server-sent events).

Two sources, merged in order of arrival:
- step runs of this process (the server's own routes run steps recording their events):
  step started, token deltas, tool calls, step completed or failed, as they happen;
- the store: what changed elsewhere (the app, another process, a run that records no events) —
  steps completed, failed, undone, skipped, new upcoming steps, the task's status. A change
  already told by a run is not told twice.

Subscribers are pushed to, never poll: one `_Feed` per watched task and process wakes them
when a run of the task records an event, when this process commits to the task (the runtime
calls `EventHub.changed`), or when the feed's one poll of the store (every `POLL_S`, for the
other processes sharing the file) finds a new version. An idle subscriber costs nothing but
its connection; a process takes at most `MAX_SUBSCRIBERS` of them (then 503).

On PostgreSQL the other processes tell too (`stepwise.server._notify`): their commits wake the
feed as this process's do, and their runs' events arrive as runs of their own (`add_run`), so
the poll is only a safety net and slows to `SAFETY_POLL_S` while that bridge listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from agent_core.runtime.step_runs import LIVE_RUNS, StepRun
from agent_core.types import StepStatus, TaskState
from stepwise.http.errors import ApiError

__all__ = ["MAX_SUBSCRIBERS", "POLL_S", "SAFETY_POLL_S", "EventHub"]

log = logging.getLogger("stepwise.server")

POLL_S = 0.5
"""How often a watched task's version is read from the store, once per task and process."""
SAFETY_POLL_S = 5.0
"""The same while other processes' commits arrive by NOTIFY: for a notice lost (the listening
connection dropped) and for faces that commit without telling (the app)."""
KEEPALIVE_S = 15.0
MAX_SUBSCRIBERS = 1000
"""Event streams one server process serves at once."""
_RUN_KEPT_S = 5.0  # A finished run stays readable this long, for subscribers still draining it.
_STATUS_EVENTS = {
    StepStatus.COMPLETED: "step_completed",
    StepStatus.FAILED: "step_failed",
    StepStatus.UNDONE: "step_undone",
    StepStatus.SKIPPED: "step_skipped",
    StepStatus.RUNNING: "step_started",
    StepStatus.UPCOMING: "step_created",
}


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


class _Watch:
    """What one subscriber has been told so far."""

    def __init__(self, state: TaskState) -> None:
        self.version = state.version
        self.status = state.task.status.value
        self.steps = {step_id: step.status for step_id, step in state.steps.items()}
        self.told: set[tuple[str, str]] = set()  # (step id, event) told by a run

    def run_events(self, run: StepRun, index: int) -> tuple[list[bytes], int]:
        events = run.events_since(index, timeout=0)
        out = []
        for event in events:
            data = event.model_dump(mode="json")
            out.append(sse(event.kind, data))
            self.told.add((event.step_id, event.kind))
        return out, index + len(events)

    def store_events(self, state: TaskState) -> list[bytes]:
        out = []
        for step_id, step in state.steps.items():
            if self.steps.get(step_id) is step.status:
                continue
            self.steps[step_id] = step.status
            kind = _STATUS_EVENTS[step.status]
            if (step_id, kind) in self.told:
                self.told.discard((step_id, kind))
                continue
            data = {"kind": kind, "step_id": step_id, "number": step.number, "error": step.error}
            out.append(sse(kind, data))
        if state.task.status.value != self.status:
            self.status = state.task.status.value
            out.append(sse("task_status", {"kind": "task_status", "status": self.status}))
        self.version = state.version
        return out


class _Feed:
    """One watched task in this process: its latest stored state, its runs, its subscribers."""

    def __init__(self, hub: EventHub, task_id: str, state: TaskState) -> None:
        self.hub, self.task_id = hub, task_id
        self.state, self.version = state, state.version
        self.runs: dict[StepRun, float | None] = dict.fromkeys(LIVE_RUNS.of_task(task_id))
        self.subscribers: set[asyncio.Event] = set()
        self.poke = asyncio.Event()  # This process committed to the task: read it now.
        self.poller = asyncio.create_task(self._poll(), name=f"events of task {task_id}")
        self.relays: set[asyncio.Task[None]] = set()
        for run in self.runs:
            self._relay(run)

    def wake(self) -> None:
        for event in self.subscribers:
            event.set()

    def add_run(self, run: StepRun) -> None:
        if run not in self.runs:
            self.runs[run] = None
            self._relay(run)
            self.wake()

    def _relay(self, run: StepRun) -> None:
        async def relay() -> None:
            async for _ in run.awatch():
                self.wake()
            self.runs[run] = time.monotonic()  # Done: kept a while for slow subscribers.
            self.wake()

        relaying = asyncio.create_task(relay(), name=f"events of step {run.step_id}")
        self.relays.add(relaying)
        relaying.add_done_callback(self.relays.discard)

    def close(self) -> None:
        """The last subscriber left: stop polling and relaying."""
        self.poller.cancel()
        for relaying in list(self.relays):
            relaying.cancel()

    async def _poll(self) -> None:
        while True:  # Until the last subscriber leaves (cancelled).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.poke.wait(), self.hub.poll_s)
            self.poke.clear()
            self._forget_old_runs()
            try:
                await self._read()
            except Exception:  # A damaged or busy store: say so, and try again next time.
                log.warning("events of task %s: the store could not be read", self.task_id)

    async def _read(self) -> None:
        version = await asyncio.to_thread(self.hub.version_of, self.task_id)
        if version is not None and version != self.version:
            self.state = await asyncio.to_thread(self.hub.load, self.task_id)
            self.version = version
            self.wake()

    def _forget_old_runs(self) -> None:
        now = time.monotonic()
        for run, ended in list(self.runs.items()):
            if ended is not None and now - ended > _RUN_KEPT_S:
                del self.runs[run]


class EventHub:
    """The event feeds of one server process, and its count of subscribers.

    Args:
        load: `load(task_id) -> TaskState` (blocking: run in a thread).
        version_of: `version_of(task_id) -> int | None` (blocking).
        limit: The most subscribers at once.
    """

    def __init__(
        self,
        load: Callable[[str], TaskState],
        version_of: Callable[[str], int | None],
        limit: int = MAX_SUBSCRIBERS,
    ) -> None:
        self.load, self.version_of, self.limit = load, version_of, limit
        self.poll_s = POLL_S  # SAFETY_POLL_S while another process's commits are told.
        self._feeds: dict[str, _Feed] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._count = 0
        self._guard = threading.Lock()
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def subscribers(self) -> int:
        """Subscribers now."""
        return self._count

    def changed(self, task_id: str) -> None:
        """This process committed to the task (from any thread): its feed reads it now."""
        loop = self._loop
        if loop is not None and task_id in self._feeds:
            with contextlib.suppress(RuntimeError):  # The server's loop closed: nobody listens.
                loop.call_soon_threadsafe(self._poke, task_id)

    def watching(self, task_id: str) -> bool:
        """Whether a subscriber of this process watches the task (from any thread)."""
        return task_id in self._feeds

    def changed_all(self) -> None:
        """Every watched task may have changed (a notice may be lost): each feed reads it."""
        for task_id in list(self._feeds):
            self.changed(task_id)

    def add_run(self, run: StepRun) -> None:
        """A run to relay to the task's subscribers (from any thread): another process's."""
        self._on_run(run)

    def subscribe(
        self, task_id: str, is_disconnected: Callable[[], Any]
    ) -> AsyncGenerator[bytes, None]:
        """The task's events until the client leaves; 503 past `limit` subscribers.

        Raises:
            ApiError: 503 `too_many_subscribers`.
        """
        with self._guard:
            if self._count >= self.limit:
                raise ApiError(
                    503,
                    "too_many_subscribers",
                    f"this server already streams events to {self.limit:,} subscribers, its limit",
                    hint="close event streams you no longer read, or read the task with GET "
                    f"/stepwise/v1/tasks/{task_id} instead",
                )
            self._count += 1
        slot = _Slot(self._release)
        stream = self._stream(task_id, is_disconnected, slot)
        weakref.finalize(stream, slot.close)  # Never started (the client left first): freed.
        return stream

    def _release(self) -> None:
        with self._guard:
            self._count -= 1

    def _poke(self, task_id: str) -> None:
        feed = self._feeds.get(task_id)
        if feed is not None:
            feed.poke.set()

    def _on_run(self, run: StepRun) -> None:
        loop = self._loop
        if loop is not None and run.task_id in self._feeds:
            with contextlib.suppress(RuntimeError):  # The server's loop closed.
                loop.call_soon_threadsafe(self._add_run, run)

    def _add_run(self, run: StepRun) -> None:
        feed = self._feeds.get(run.task_id)
        if feed is not None:
            feed.add_run(run)

    def close(self) -> None:
        """Stop hearing of step runs (the server stops)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    async def _feed(self, task_id: str) -> _Feed:
        self._loop = asyncio.get_running_loop()
        if self._unsubscribe is None:
            self._unsubscribe = LIVE_RUNS.subscribe(self._on_run)
        feed = self._feeds.get(task_id)
        if feed is None:
            state = await asyncio.to_thread(self.load, task_id)
            feed = self._feeds.get(task_id)  # Another subscriber may have made it meanwhile.
            if feed is None:
                feed = self._feeds[task_id] = _Feed(self, task_id, state)
        return feed

    async def _stream(
        self, task_id: str, is_disconnected: Callable[[], Any], slot: _Slot
    ) -> AsyncGenerator[bytes, None]:
        wake = asyncio.Event()
        feed: _Feed | None = None
        try:
            feed = await self._feed(task_id)
            feed.subscribers.add(wake)
            watch = _Watch(await asyncio.to_thread(self.load, task_id))
            yield sse(
                "subscribed", {"kind": "subscribed", "task_id": task_id, "version": watch.version}
            )
            async for chunk in _follow(feed, watch, wake, is_disconnected):
                yield chunk
        finally:
            slot.close()
            if feed is not None:
                feed.subscribers.discard(wake)
                if not feed.subscribers and self._feeds.get(task_id) is feed:
                    del self._feeds[task_id]
                    feed.close()


async def _follow(
    feed: _Feed, watch: _Watch, wake: asyncio.Event, is_disconnected: Callable[[], Any]
) -> AsyncIterator[bytes]:
    """One subscriber's events: what each wake-up brought, or a keep-alive when nothing did."""
    # Runs already over when it subscribed were told by the store, if at all.
    runs: dict[StepRun, int] = {run: 0 for run, ended in feed.runs.items() if ended is None}
    told_runs: weakref.WeakSet[StepRun] = weakref.WeakSet(feed.runs)
    while True:
        try:
            await asyncio.wait_for(wake.wait(), KEEPALIVE_S)
        except TimeoutError:
            yield b": keep-alive\n\n"
            continue
        wake.clear()
        if await is_disconnected():
            return
        for run in feed.runs:
            if run not in told_runs:
                told_runs.add(run)
                runs[run] = 0
        sent: list[bytes] = []
        for run in list(runs):
            events, runs[run] = watch.run_events(run, runs[run])
            sent += events
            if run.done and not run.events_since(runs[run], timeout=0):
                del runs[run]
        if feed.version > watch.version:  # Versions only grow: an older read is no news.
            sent += watch.store_events(feed.state)
        for chunk in sent:
            yield chunk


class _Slot:
    """One subscriber's place in the count, given back once."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release: Callable[[], None] | None = release

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()
