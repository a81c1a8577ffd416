"""Live events between processes on one PostgreSQL database: LISTEN/NOTIFY.

Several processes (the app, `stepwise serve --workers N`, a user's program; one machine or
many) share one database; a step runs in the process that started it, and a watcher may be
connected to another one.
PostgreSQL's NOTIFY carries what the watcher's process needs, with nothing beside the database:
Redis is the services' (a team running only `stepwise serve` has none), and the store's
PostgreSQL is already shared by every process. A notice reaches every session LISTENing on its
channel once the sender's statement commits, in the order each sender sent them; it is not
kept, so a process not listening at that moment misses it. The feeds therefore keep reading
the store, slowly (`events.SAFETY_POLL_S`), for a lost notice.

Bounded: one channel per schema (the task id in the payload), so each process LISTENs once, on
one connection, however many tasks and subscribers it serves; and it publishes on one more.
A notice for a task no subscriber here watches is dropped once its JSON is read.

What is sent (each payload well under PostgreSQL's 8000 bytes):
- `{"o": origin, "t": task}` after this process commits to a task: the receiver's feed reads
  the task from the store (steps started, completed, failed, undone; the task's status);
- `{"o", "t", "s": step, "e": [events], "end": bool}` a running step's token deltas and tool
  calls, batched; an event past `MAX_EVENT_BYTES` (a tool's long output) is not sent, its
  step's output is in the store. Start and end are the store's, told by the commit notice;
- `{"o", "t", "s": step, "stop": true}` a cancel that reached a process not running the step:
  the one running it stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

from agent_core.events import step_event_adapter
from agent_core.extras import require
from agent_core.host.events import POLL_S, SAFETY_POLL_S, EventHub
from agent_core.runtime.step_runs import LIVE_RUNS, StepRun

__all__ = ["MAX_EVENT_BYTES", "MAX_PAYLOAD_BYTES", "NotifyBridge", "channel_of"]

log = logging.getLogger("agent_core.host")

MAX_PAYLOAD_BYTES = 7000
"""One NOTIFY's payload at most (PostgreSQL refuses past 8000 bytes by default)."""
MAX_EVENT_BYTES = 2000
"""A run's event larger than this is not relayed (its step's output is read from the store)."""
_RELAYED = frozenset({"token_delta", "tool_call_started", "tool_call_finished"})
_QUEUE_SIZE = 10_000  # Notices waiting to be sent; past it they are dropped (the poll remains).
_REMOTE_RUNS_KEPT = 1_000  # Other processes' runs relayed here at once.
_REMOTE_RUN_IDLE_S = 60.0  # A relayed run silent this long ended unseen (its process died).
_RETRY_S = 1.0
_FACE_WATCH_S = 30.0  # A face's `watch(task)` keeps the task's notices this long.


def channel_of(schema: str) -> str:
    """The channel of the store's schema (a plain SQL name: `PostgresStore` checks it)."""
    return f"stepwise_events_{schema}"[:63]


class NotifyBridge:
    """This process's commits and runs, told to the others; theirs, told to `hub`.

    Args:
        url: The store's database (libpq's URL, without `schema=`).
        schema: The store's schema: processes on one schema hear each other.
        hub: This process's event feeds.
    """

    def __init__(self, url: str, schema: str, hub: EventHub) -> None:
        require("postgres", feature="live events between server processes")
        import psycopg

        self._psycopg = psycopg
        self.url, self.channel, self.hub = url, channel_of(schema), hub
        self.origin = uuid.uuid4().hex[:12]
        self._outbox: queue.Queue[dict[str, Any]] = queue.Queue(_QUEUE_SIZE)
        self._remote: OrderedDict[tuple[str, str], tuple[StepRun, float]] = OrderedDict()
        self._relays: set[asyncio.Task[None]] = set()
        self._watches: dict[str, float] = {}  # Task -> until when a face (the app) watches it.
        self._stopping = threading.Event()
        self.dropped = 0
        self.sent = 0
        self.received = 0
        self._unsubscribe = LIVE_RUNS.subscribe(self._on_run)
        self._threads = [
            threading.Thread(target=self._publish, name="notify-publish", daemon=True),
            threading.Thread(target=self._listen, name="notify-listen", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------ this process tells

    def committed(self, task_id: str) -> None:
        """This process committed to the task (any thread; never blocks)."""
        self._put({"o": self.origin, "t": task_id})

    def stop(self, task_id: str, step_id: str) -> None:
        """Ask the process running the step to stop it (a cancel that reached another one)."""
        self._put({"o": self.origin, "t": task_id, "s": step_id, "stop": True})

    def _on_run(self, run: StepRun) -> None:
        # On the runtime loop, as a run starts: relay its events from there.
        try:
            relay = asyncio.get_running_loop().create_task(self._relay(run))
        except RuntimeError:  # No loop runs here: the run's commits are still told.
            return
        self._relays.add(relay)
        relay.add_done_callback(self._relays.discard)

    async def _relay(self, run: StepRun) -> None:
        told = False
        async for event in run.awatch():
            if event.kind in _RELAYED:
                data = event.model_dump(mode="json")
                if len(json.dumps(data, ensure_ascii=False).encode()) <= MAX_EVENT_BYTES:
                    self._put({"o": self.origin, "t": run.task_id, "s": run.step_id, "e": [data]})
                    told = True
        if told:  # Nothing told, nothing to end: the receivers made no run of it.
            self._put({"o": self.origin, "t": run.task_id, "s": run.step_id, "e": [], "end": True})

    def _put(self, notice: dict[str, Any]) -> None:
        try:
            self._outbox.put_nowait(notice)
        except queue.Full:
            self.dropped += 1  # The receivers' poll reads the store instead.

    def _publish(self) -> None:
        conn = None
        while not self._stopping.is_set():
            try:
                first = self._outbox.get(timeout=0.5)
            except queue.Empty:
                continue
            notices = [first, *_drain(self._outbox)]
            try:
                conn = conn if conn is not None and not conn.closed else self._connect()
                for payload in _payloads(notices):
                    conn.execute("SELECT pg_notify(%s, %s)", (self.channel, payload))
                    self.sent += 1
            except Exception as exc:  # The database is away: these notices are lost.
                log.warning("live events: cannot publish to the database: %s", exc)
                conn = _closed(conn)
                self._stopping.wait(_RETRY_S)
        _closed(conn)

    # ------------------------------------------------------------------ the others tell

    def watch(self, task_id: str) -> list[StepRun]:
        """Hear the task's runs in other processes for a while (a face drawing it); those now.

        Every process tells its runs' events on the channel: watching only keeps them here.
        """
        self._watches[task_id] = time.monotonic() + _FACE_WATCH_S
        return [
            run for run, _ in list(self._remote.values()) if run.task_id == task_id and not run.done
        ]

    def _watched(self, task_id: str) -> bool:
        if self.hub.watching(task_id):
            return True
        until = self._watches.get(task_id)
        alive = any(run.task_id == task_id for run, _ in list(self._remote.values()))
        return alive or (until is not None and until > time.monotonic())

    def _listen(self) -> None:
        while not self._stopping.is_set():
            conn = None
            try:
                conn = self._connect()
                conn.execute(f'LISTEN "{self.channel}"')
                self.hub.poll_s = SAFETY_POLL_S
                self.hub.changed_all()  # What changed while nobody listened.
                while not self._stopping.is_set():
                    for notice in conn.notifies(timeout=1.0):
                        self._heard(notice.payload)
                    self._forget_idle_runs()
            except Exception as exc:
                if not self._stopping.is_set():
                    log.warning("live events: not listening to the database: %s", exc)
                self.hub.poll_s = POLL_S
                self.hub.changed_all()
                self._stopping.wait(_RETRY_S)
            finally:
                _closed(conn)

    def _heard(self, payload: str) -> None:
        try:
            notice = json.loads(payload)
            origin, task_id = notice["o"], notice["t"]
        except (ValueError, KeyError, TypeError):
            return  # Not ours (another program on the channel).
        if origin == self.origin:
            return
        if notice.get("stop"):
            _stop_here(task_id, notice.get("s"))
            return
        if not self._watched(task_id):
            return
        self.received += 1
        step_id = notice.get("s")
        if step_id is None:
            self.hub.changed(task_id)
            return
        run = self._remote_run(origin, task_id, step_id)
        for data in notice.get("e", ()):
            with contextlib.suppress(ValueError):
                run.record(step_event_adapter.validate_python(data))
        if notice.get("end"):
            self._remote.pop((origin, step_id), None)
            run.finish(None, None)

    def _remote_run(self, origin: str, task_id: str, step_id: str) -> StepRun:
        """The run of another process, as this process's feeds relay runs."""
        key = (origin, step_id)
        found = self._remote.get(key)
        if found is not None:
            self._remote[key] = (found[0], time.monotonic())
            self._remote.move_to_end(key)
            return found[0]
        run = StepRun(task_id, step_id, None)
        self._remote[key] = (run, time.monotonic())
        while len(self._remote) > _REMOTE_RUNS_KEPT:
            _, (oldest, _) = self._remote.popitem(last=False)
            oldest.finish(None, None)
        self.hub.add_run(run)
        return run

    def _forget_idle_runs(self) -> None:
        now = time.monotonic()
        for key, (run, heard) in list(self._remote.items()):
            if now - heard > _REMOTE_RUN_IDLE_S:
                del self._remote[key]
                run.finish(None, None)

    # ------------------------------------------------------------------ both

    def _connect(self) -> Any:
        return self._psycopg.connect(self.url, autocommit=True, connect_timeout=10)

    def close(self) -> None:
        """Stop telling and listening (the server stops)."""
        self._unsubscribe()
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=5)


def _stop_here(task_id: str, step_id: object) -> None:
    """Stop the step if it runs in this process (recorded as failed, "stopped by you")."""
    run = LIVE_RUNS.get(step_id) if isinstance(step_id, str) else None
    if run is not None and run.task_id == task_id:
        run.cancel()


def _drain(outbox: queue.Queue[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    with contextlib.suppress(queue.Empty):
        while len(out) < 1000:
            out.append(outbox.get_nowait())
    return out


def _payloads(notices: list[dict[str, Any]]) -> list[str]:
    """The notices as few payloads as fit: one commit notice per task, a run's events together."""
    merged: dict[tuple[str, str | None, bool], dict[str, Any]] = {}
    for notice in notices:
        key = (notice["t"], notice.get("s"), notice.get("stop", False))
        held = merged.get(key)
        if held is None or "e" not in notice:
            merged.setdefault(key, dict(notice))
            continue
        held["e"] = [*held["e"], *notice["e"]]
        held["end"] = held.get("end", False) or notice.get("end", False)
    out: list[str] = []
    for notice in merged.values():
        out.extend(_split(notice))
    return out


def _split(notice: dict[str, Any]) -> list[str]:
    """One notice's payloads: its events cut into parts under `MAX_PAYLOAD_BYTES`."""
    text = json.dumps(notice, ensure_ascii=False)
    if len(text.encode()) <= MAX_PAYLOAD_BYTES or not notice.get("e"):
        return [text]
    events, parts, part = notice["e"], [], []
    size = 0
    for event in events:
        length = len(json.dumps(event, ensure_ascii=False).encode()) + 2
        if part and size + length > MAX_PAYLOAD_BYTES - 200:
            parts.append(part)
            part, size = [], 0
        part.append(event)
        size += length
    parts.append(part)
    last = len(parts) - 1
    return [
        json.dumps(
            {**notice, "e": p, "end": notice.get("end", False) and i == last}, ensure_ascii=False
        )
        for i, p in enumerate(parts)
    ]


def _closed(conn: Any) -> None:
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.close()
