"""A task's events, live, as server-sent events: what every face streams (`Host.events`).

`stepwise serve` answers `GET /stepwise/v1/tasks/{id}/events` with `EventHub.subscribe`; the
bytes are SSE's, which any face can relay or parse, and nothing here needs a web framework.

Two sources, merged in order of arrival:
- step runs of this process (the server's own routes run steps recording their events):
  step started, token deltas, tool calls, step completed or failed, as they happen;
- the store: what changed elsewhere (the app, another process, a run that records no events) —
  steps completed, failed, undone, skipped, new upcoming steps, the task's status. A change
  already told by a run is not told twice.

One `_Feed` per watched task and process does the work once for all its subscribers: it
relays the task's runs, is told each commit of this process to the task (the store's commit
listener calls `EventHub.changed` with the state it committed, so the feed reads nothing
back), reads the store when the host's change feed says another process wrote (or its own
slow poll, every `POLL_S`, finds a new version), and turns each event into bytes once. Fan-out is a
`put` into each subscriber's own bounded queue, never an await: a subscriber whose client
reads slowly, or not at all, holds up nobody, and one that falls `MAX_BEHIND_BYTES` behind is
told so (`stream_overflow`) and closed. Each stream's route reads only its own queue.

Fan-out to many subscribers still costs the server's loop a write per subscriber, so a feed
batches: after each fan-out it waits `1 / FANOUT_SHARE - 1` times what that fan-out took
(at most `MAX_BATCH_S`) before the next, so that events for a thousand idle streams take at
most about a tenth of the loop that also answers every other request (and, through the GIL,
of the thread that runs the steps). With a few subscribers a fan-out takes microseconds and
events go out at once.

On PostgreSQL the other processes tell too (`agent_core.host.notify`): their commits wake the
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
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from agent_core.errors import SubscriberLimitError
from agent_core.runtime.step_runs import LIVE_RUNS, StepRun
from agent_core.types import StepStatus, TaskState

__all__ = [
    "FANOUT_SHARE",
    "MAX_BEHIND_BYTES",
    "MAX_SUBSCRIBERS",
    "POLL_S",
    "SAFETY_POLL_S",
    "EventHub",
]

log = logging.getLogger("agent_core.host")

POLL_S = 0.5
"""How often a watched task's version is read from the store, once per task and process."""
SAFETY_POLL_S = 5.0
"""The same while other processes' commits arrive by the host's change feed (SQLite's
`data_version`, PostgreSQL's NOTIFY): for a notice lost (the listening connection dropped)."""
KEEPALIVE_S = 15.0
MAX_SUBSCRIBERS = 1000
"""Event streams one process serves at once."""
MAX_BEHIND_BYTES = 4 * 1024 * 1024
"""How far a subscriber's client may fall behind (bytes queued, unsent) before it is closed."""
FANOUT_SHARE = 0.1
"""The most of the server loop's time a feed's fan-out takes, by batching events."""
MAX_BATCH_S = 1.0
"""The longest a feed holds events back to batch them, however many subscribers it has."""
_RUN_KEPT_S = 5.0  # A finished run stays readable this long, for subscribers still draining it.
_KEEPALIVE = b": keep-alive\n\n"
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


@dataclass(frozen=True)
class _Seen:
    """The part of a task's state its events tell: version, status, each step's status."""

    version: int
    status: str
    steps: dict[str, tuple[StepStatus, int | None, str | None]]  # id: (status, number, error)


def _seen(state: TaskState) -> _Seen:
    steps = {i: (step.status, step.number, step.error) for i, step in state.steps.items()}
    return _Seen(state.version, state.task.status.value, steps)


class _Watch:
    """What a feed has told its subscribers so far (one for all of them)."""

    def __init__(self, seen: _Seen) -> None:
        self.version = seen.version
        self.status = seen.status
        self.steps = {step_id: step[0] for step_id, step in seen.steps.items()}
        self.told: set[tuple[str, str]] = set()  # (step id, event) told by a run
        self.held: dict[str, list[tuple[str, bytes]]] = {}  # Of running steps, by step id.

    def run_ended(self, step_id: str) -> list[bytes]:
        """The store's news of a step held for its run, that the run did not tell."""
        out = []
        for kind, chunk in self.held.pop(step_id, []):
            if (step_id, kind) in self.told:
                self.told.discard((step_id, kind))
            else:
                out.append(chunk)
        return out

    def store_events(self, seen: _Seen, running: set[str]) -> list[bytes]:
        """What changed since the last state told; a running step's news waits for its run."""
        out = []
        for step_id, (status, number, error) in seen.steps.items():
            if self.steps.get(step_id) is status:
                continue
            self.steps[step_id] = status
            kind = _STATUS_EVENTS[status]
            if (step_id, kind) in self.told:
                self.told.discard((step_id, kind))
                continue
            data = {"kind": kind, "step_id": step_id, "number": number, "error": error}
            if step_id in running:
                # The commit may arrive before the run's own event, which says more (the
                # output): the store's is told only if the run ends without telling it.
                self.held.setdefault(step_id, []).append((kind, sse(kind, data)))
                continue
            out.append(sse(kind, data))
        if seen.status != self.status:
            self.status = seen.status
            out.append(sse("task_status", {"kind": "task_status", "status": self.status}))
        self.version = seen.version
        return out


class _Subscriber:
    """One stream's queue: what the feed put there and the client has not been sent yet."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.wake = asyncio.Event()
        self.ended = False
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def put(self, chunk: bytes) -> None:
        """Queue `chunk` without waiting; past `MAX_BEHIND_BYTES`, the overflow notice instead."""
        if self.ended:
            return
        if self._size + len(chunk) > MAX_BEHIND_BYTES:
            # Events dropped silently would leave the client a wrong picture of the task:
            # say so and close, so it reads the task afresh and subscribes again.
            self._chunks.clear()
            chunk, self.ended = self._overflow(), True
        self._chunks.append(chunk)
        self._size += len(chunk)
        self.wake.set()

    def take(self) -> bytes:
        """Everything queued, as one chunk (one write for a batch of events)."""
        out = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return out

    def _overflow(self) -> bytes:
        where = f"/stepwise/v1/tasks/{self.task_id}"
        return sse(
            "stream_overflow",
            {
                "kind": "stream_overflow",
                "behind_bytes": MAX_BEHIND_BYTES,
                "message": "this client read its events too slowly and fell more than "
                f"{MAX_BEHIND_BYTES:,} bytes behind; the stream is closed",
                "hint": f"read the task with GET {where}, then subscribe to {where}/events again",
            },
        )


class _RunLog:
    """A run's events as bytes, kept while it runs, so a late subscriber gets them all."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.sent = 0  # Of `chunks`, how many a fan-out has put in the subscribers' queues.
        self.ended: float | None = None


class _Feed:
    """One watched task in this process: its latest stored state, its runs, its subscribers."""

    def __init__(self, hub: EventHub, task_id: str, seen: _Seen) -> None:
        self.hub, self.task_id = hub, task_id
        self.version = seen.version  # The newest version read or told.
        self.watch = _Watch(seen)
        self.sent_version = seen.version  # The version the subscribers' queues reflect.
        self.runs: dict[StepRun, _RunLog] = {}
        self.subscribers: set[_Subscriber] = set()
        self.poke = asyncio.Event()  # This process committed to the task: read it now.
        self._loop = asyncio.get_running_loop()
        self._pending: list[bytes] = []
        self._flush: asyncio.Handle | asyncio.TimerHandle | None = None
        self._flushing = False
        self._next_flush = 0.0  # Loop time before which no fan-out starts (batching).
        self._last_sent = time.monotonic()
        self.poller = asyncio.create_task(self._poll(), name=f"events of task {task_id}")
        self.relays: set[asyncio.Task[None]] = set()
        for run in LIVE_RUNS.of_task(task_id):
            self.add_run(run)

    def join(self, subscriber: _Subscriber) -> int:
        """Add `subscriber`; the version its first events follow on.

        Its queue starts with what live runs have told so far; runs already over were told
        by the store, if at all.
        """
        for run_log in self.runs.values():
            if run_log.ended is None:
                for chunk in run_log.chunks[: run_log.sent]:
                    subscriber.put(chunk)
        self.subscribers.add(subscriber)
        return self.sent_version

    def add_run(self, run: StepRun) -> None:
        if run not in self.runs:
            self.runs[run] = _RunLog()
            self._relay(run)

    def _relay(self, run: StepRun) -> None:
        run_log = self.runs[run]

        async def relay() -> None:
            async for event in run.awatch():
                # pydantic's own JSON writer: a step's last event holds its whole conversation.
                chunk = f"event: {event.kind}\ndata: {event.model_dump_json()}\n\n".encode()
                self.watch.told.add((event.step_id, event.kind))
                run_log.chunks.append(chunk)
                self._queue(chunk)
            run_log.ended = time.monotonic()  # Done: kept a while for late subscribers.
            for chunk in self.watch.run_ended(run.step_id):
                self._queue(chunk)

        relaying = asyncio.create_task(relay(), name=f"events of step {run.step_id}")
        self.relays.add(relaying)
        relaying.add_done_callback(self.relays.discard)

    def close(self) -> None:
        """The last subscriber left: stop polling, relaying and fanning out."""
        self.poller.cancel()
        for relaying in list(self.relays):
            relaying.cancel()
        if self._flush is not None:
            self._flush.cancel()

    # -- fan-out

    def _queue(self, chunk: bytes) -> None:
        self._pending.append(chunk)
        if self._flush is None and not self._flushing:
            delay = self._next_flush - self._loop.time()
            if delay > 0:
                self._flush = self._loop.call_later(delay, self._fan_out)
            else:
                self._flush = self._loop.call_soon(self._fan_out)

    def _fan_out(self) -> None:
        """Put what is pending into every subscriber's queue: no await, whatever they do."""
        self._flush = None
        chunk = b"".join(self._pending)
        self._pending.clear()
        for run_log in self.runs.values():
            run_log.sent = len(run_log.chunks)
        self.sent_version = self.watch.version
        self._last_sent = time.monotonic()
        started = time.perf_counter()
        for subscriber in list(self.subscribers):
            subscriber.put(chunk)
            if subscriber.ended:  # Overflowed: told once it is read, and fed no more.
                self.subscribers.discard(subscriber)
        # The subscribers' writes run next, each as its stream's task: a callback queued
        # behind them sees what the whole fan-out cost the loop.
        self._flushing = True
        self._loop.call_soon(self._fanned_out, started)

    def _fanned_out(self, started: float) -> None:
        spent = time.perf_counter() - started
        self._flushing = False
        wait = min(MAX_BATCH_S, spent * (1 / FANOUT_SHARE - 1))
        self._next_flush = self._loop.time() + wait
        if self._pending and self._flush is None:
            self._flush = self._loop.call_later(wait, self._fan_out)

    # -- the store

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
            if time.monotonic() - self._last_sent > KEEPALIVE_S and not self._pending:
                self._queue(_KEEPALIVE)  # Proxies close a connection silent for long.

    def apply(self, seen: _Seen) -> None:
        """A newer state of the task (read, or committed by this process): tell what changed."""
        self.version = max(self.version, seen.version)
        if seen.version > self.watch.version:  # Versions only grow: an older one is no news.
            running = {run.step_id for run, kept in self.runs.items() if kept.ended is None}
            for chunk in self.watch.store_events(seen, running):
                self._queue(chunk)

    async def _read(self) -> None:
        version = await asyncio.to_thread(self.hub.version_of, self.task_id)
        if version is not None and version != self.version:
            self.version = version
            self.apply(_seen(await asyncio.to_thread(self.hub.load, self.task_id)))

    def _forget_old_runs(self) -> None:
        now = time.monotonic()
        for run, run_log in list(self.runs.items()):
            if run_log.ended is not None and now - run_log.ended > _RUN_KEPT_S:
                del self.runs[run]


class EventHub:
    """The event feeds of one process, and its count of subscribers.

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

    def changed(self, task_id: str, state: TaskState | None = None) -> None:
        """The task changed (from any thread): its feed reads it now, or is told `state`.

        `state` is the task as this process just committed it: what the events tell is taken
        from it on the caller's thread, and the feed need not read the whole task back.
        """
        loop = self._loop
        if loop is None or task_id not in self._feeds:
            return
        with contextlib.suppress(RuntimeError):  # The server's loop closed: nobody listens.
            if state is None:
                loop.call_soon_threadsafe(self._poke, task_id)
            else:
                loop.call_soon_threadsafe(self._apply, task_id, _seen(state))

    def watching(self, task_id: str) -> bool:
        """Whether a subscriber of this process watches the task (from any thread)."""
        return task_id in self._feeds

    def watched(self) -> list[str]:
        """The tasks a subscriber of this process watches now (from any thread)."""
        return list(self._feeds)

    def changed_all(self) -> None:
        """Every watched task may have changed (a notice may be lost): each feed reads it."""
        for task_id in list(self._feeds):
            self.changed(task_id)

    def add_run(self, run: StepRun) -> None:
        """A run to relay to the task's subscribers (from any thread): another process's."""
        self._on_run(run)

    def subscribe(
        self, task_id: str, is_disconnected: Callable[[], Any] | None = None
    ) -> AsyncGenerator[bytes, None]:
        """The task's events (SSE bytes) until the client leaves; refused past `limit`.

        `is_disconnected` is asked before each keep-alive only: the stream's server notices
        a client that left (Starlette ends the stream), so no event waits on the question.

        Raises:
            SubscriberLimitError: `limit` subscribers are streaming already.
        """
        with self._guard:
            if self._count >= self.limit:
                raise SubscriberLimitError(
                    f"this process already streams events to {self.limit:,} subscribers, its limit",
                    hint="close event streams you no longer read, or read the task instead of "
                    "watching it",
                    task_id=task_id,
                    params={"limit": self.limit},
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

    def _apply(self, task_id: str, seen: _Seen) -> None:
        feed = self._feeds.get(task_id)
        if feed is not None:
            feed.apply(seen)

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
                feed = self._feeds[task_id] = _Feed(self, task_id, _seen(state))
        return feed

    async def _stream(
        self, task_id: str, is_disconnected: Callable[[], Any] | None, slot: _Slot
    ) -> AsyncGenerator[bytes, None]:
        subscriber = _Subscriber(task_id)
        feed: _Feed | None = None
        try:
            feed = await self._feed(task_id)
            version = feed.join(subscriber)
            yield sse("subscribed", {"kind": "subscribed", "task_id": task_id, "version": version})
            while True:
                await subscriber.wake.wait()
                subscriber.wake.clear()
                chunk = subscriber.take()
                if chunk == _KEEPALIVE and is_disconnected is not None and await is_disconnected():
                    return
                yield chunk
                if subscriber.ended:  # Its last chunk said why (`stream_overflow`).
                    return
        finally:
            slot.close()
            if feed is not None:
                feed.subscribers.discard(subscriber)
                if not feed.subscribers and self._feeds.get(task_id) is feed:
                    del self._feeds[task_id]
                    feed.close()


class _Slot:
    """One subscriber's place in the count, given back once."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release: Callable[[], None] | None = release

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()
