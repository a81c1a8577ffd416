"""Live tokens between processes on one SQLite file: a small table of running steps' events.

SQLite has no NOTIFY. A step's token deltas and tool calls live in the runtime of the process
running it (`LIVE_RUNS`); another process (the app beside `stepwise serve`, or beside a user's
attached program) can only see what is in the file. So the host running a step writes its
run's events to `stepwise_live_events`, batched every `FLUSH_S` (the deltas of a batch merged
into one), and the other hosts read them when their change feed says the file changed (each
batch is a commit, so `data_version` moves): they present them as runs of their own, the same
`StepRun`s the PostgreSQL bridge makes, so the server's event streams and the app's live view
show them as they show local runs.

Cheap when nobody watches: a host that watches a task (a server's event stream, the app's
running-step view) writes a lease for it to `stepwise_live_watchers`, renewed while it
watches; a running step's events are written only while another process holds a lease on its
task, from its first event (a late watcher gets the text so far). Bounded: at most
`MAX_ROWS_PER_STEP` batches per step (past it the step's result arrives from the store when it
ends); an event past `MAX_EVENT_BYTES` (a tool's long output) is not written. A step's rows
are deleted `ENDED_KEPT_S` after it ends; rows an ended process left are deleted after
`STALE_S`.

The tables are the relay's own: created on first use beside the store's, never read by it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agent_core.events import StepEvent, TokenDeltaEvent, step_event_adapter
from agent_core.runtime.step_runs import LIVE_RUNS, StepRun

__all__ = [
    "ENDED_KEPT_S",
    "FLUSH_S",
    "LEASE_S",
    "MAX_EVENT_BYTES",
    "MAX_ROWS_PER_STEP",
    "LiveRelay",
]

log = logging.getLogger("agent_core.host")

FLUSH_S = 0.1
"""How often a running step's new events are written (one row per step per flush at most)."""
MAX_ROWS_PER_STEP = 1200
"""Batches written per step at most: two minutes of streaming at one batch per `FLUSH_S`."""
MAX_EVENT_BYTES = 2000
"""An event larger than this is not written (its step's output is read from the store)."""
LEASE_S = 30.0
"""How long a watcher's lease on a task lasts; it is renewed at half of it while it watches."""
ENDED_KEPT_S = 5.0
"""How long an ended step's rows stay, for watchers reading a tick behind."""
STALE_S = 3600.0
"""Rows and leases older than this were left by a process that ended without cleaning up."""
_REMOTE_IDLE_S = 60.0  # A relayed run silent this long ended unseen (its process died).
_APP_WATCH_S = 30.0  # A face's `watch(task)` keeps the task watched this long.
_RELAYED = frozenset({"token_delta", "tool_call_started", "tool_call_finished"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS stepwise_live_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    step_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    at REAL NOT NULL,
    events TEXT NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS stepwise_live_events_by_task ON stepwise_live_events (task_id, id);
CREATE TABLE IF NOT EXISTS stepwise_live_watchers (
    task_id TEXT NOT NULL,
    origin TEXT NOT NULL,
    until REAL NOT NULL,
    PRIMARY KEY (task_id, origin)
);
"""

# The relays of this process: their rows are this process's runs, already in LIVE_RUNS; and
# the files one of them writes to (two hosts on one file in one process write its runs once).
_ORIGINS: set[str] = set()
_WRITING: dict[str, str] = {}  # File -> the origin of the relay writing this process's runs.
_REGISTRY = threading.Lock()


@dataclass
class _Written:
    """What was written of one local run: its events so far, its batches, its end."""

    run: StepRun
    count: int = 0  # Of the run's events, how many were written (or skipped as too large).
    rows: int = 0
    ended: float | None = None  # When its end row was written.


@dataclass
class RelayStats:
    """What a relay did (for tests and `bench.host_latency`)."""

    flushes: int = 0
    rows_written: int = 0
    write_seconds: list[float] = field(default_factory=list)
    rows_read: int = 0


class LiveRelay:
    """Writes this process's watched runs to the file; presents other processes' as runs here.

    Args:
        path: The SQLite file (the store's `path`).
        add_run: Called with each run of another process as it is first heard (the host's
            `EventHub.add_run`: its feeds relay it to their subscribers).
        watched: The tasks this process's faces watch now (the event hub's feeds).
        flush_s: How often to write.

    Raises:
        sqlite3.Error: The file cannot be opened or its tables made.
    """

    def __init__(
        self,
        path: str,
        *,
        add_run: Callable[[StepRun], None],
        watched: Callable[[], Iterable[str]],
        flush_s: float = FLUSH_S,
    ) -> None:
        self.path, self.flush_s = path, flush_s
        self._add_run, self._hub_watched = add_run, watched
        self.origin = uuid.uuid4().hex[:12]
        self.stats = RelayStats()
        self._db = _connect(path)
        self._lock = threading.Lock()  # One connection, used by the feed, the writer, faces.
        self._cursors: dict[str, int] = {}  # Task -> the last row id read of it.
        self._remote: dict[tuple[str, str], tuple[StepRun, float]] = {}  # (origin, step)
        self._watches: dict[str, float] = {}  # Task -> until when a face watches it.
        self._leases: dict[str, float] = {}  # Task -> until when this relay's lease holds.
        self._written: dict[str, _Written] = {}  # Step id -> what was written of its run.
        self._stopping = threading.Event()
        with _REGISTRY:
            _ORIGINS.add(self.origin)
        self._thread = threading.Thread(target=self._write_loop, name="live-relay", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the watching side

    def watch(self, task_id: str) -> list[StepRun]:
        """Watch `task_id` for a while (a face drawing it); its runs in other processes now.

        Reads what was written already, so a face drawing a running step shows its text so
        far; later events arrive on the change feed (`poll`).
        """
        self._watches[task_id] = time.monotonic() + _APP_WATCH_S
        self.poll()
        return self.runs_of(task_id)

    def runs_of(self, task_id: str) -> list[StepRun]:
        """The task's runs in other processes, as heard so far (ended ones are dropped)."""
        return [
            run for run, _ in list(self._remote.values()) if run.task_id == task_id and not run.done
        ]

    def poll(self) -> None:
        """Read the new events of every watched task (the change feed calls this)."""
        tasks = self._tasks_watched()
        try:
            with self._lock:
                self._renew_leases(tasks)
                rows = [row for task_id in tasks for row in self._rows_of(task_id)]
        except sqlite3.Error as exc:  # Busy a moment, or the file went away: next change.
            log.debug("live relay: cannot read %s: %s", self.path, exc)
            return
        for row in rows:
            self._heard(*row)
        self._forget_idle_runs()

    def _tasks_watched(self) -> set[str]:
        now = time.monotonic()
        for task_id, until in list(self._watches.items()):
            if until < now:
                self._watches.pop(task_id, None)
        alive = {run.task_id for run, _ in list(self._remote.values())}
        return {*self._hub_watched(), *self._watches, *alive}

    def _keep_leases(self) -> None:
        tasks = self._tasks_watched()
        with self._lock:
            self._renew_leases(tasks)

    def _renew_leases(self, tasks: set[str]) -> None:
        now = time.time()
        due = [t for t in tasks if self._leases.get(t, 0.0) - now < LEASE_S / 2]
        if not due:
            return
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO stepwise_live_watchers VALUES (?, ?, ?)",
                [(task_id, self.origin, now + LEASE_S) for task_id in due],
            )
        for task_id in due:
            self._leases[task_id] = now + LEASE_S
        for task_id in [t for t in self._leases if t not in tasks]:
            del self._leases[task_id]  # Lapses on its own: no write to give it up.

    def _rows_of(self, task_id: str) -> list[tuple[str, str, str, str, int]]:
        rows = self._db.execute(
            "SELECT id, step_id, origin, events, ended FROM stepwise_live_events"
            " WHERE task_id = ? AND id > ? ORDER BY id",
            (task_id, self._cursors.get(task_id, 0)),
        ).fetchall()
        if rows:
            self._cursors[task_id] = rows[-1][0]
        return [(task_id, step, origin, events, ended) for _, step, origin, events, ended in rows]

    def _heard(self, task_id: str, step_id: str, origin: str, events: str, ended: int) -> None:
        if origin in _ORIGINS:
            return  # This process's run: its watchers have it from LIVE_RUNS.
        self.stats.rows_read += 1
        key = (origin, step_id)
        found = self._remote.get(key)
        if found is None and ended:
            return  # The end of a run never heard (read from its end): nothing to close.
        run = found[0] if found is not None else StepRun(task_id, step_id, None)
        self._remote[key] = (run, time.monotonic())
        for data in json.loads(events):
            with contextlib.suppress(ValueError):
                run.record(step_event_adapter.validate_python(data))
        if found is None:
            self._add_run(run)
        if ended:
            del self._remote[key]
            run.finish(None, None)

    def _forget_idle_runs(self) -> None:
        now = time.monotonic()
        for key, (run, heard) in list(self._remote.items()):
            if now - heard > _REMOTE_IDLE_S:
                self._remote.pop(key, None)
                run.finish(None, None)

    # ------------------------------------------------------------------ the running side

    def _write_loop(self) -> None:
        last_prune = 0.0
        while not self._stopping.wait(self.flush_s):
            try:
                self._keep_leases()  # A new watcher (a server's stream) is told at once.
                if not self._may_write():
                    continue
                self.flush()
                if time.monotonic() - last_prune > 60:
                    self._prune_stale()
                    last_prune = time.monotonic()
            except sqlite3.Error as exc:  # Busy: the events wait for the next flush.
                log.debug("live relay: cannot write %s: %s", self.path, exc)

    def _may_write(self) -> bool:
        with _REGISTRY:
            return _WRITING.setdefault(self.path, self.origin) == self.origin

    def flush(self) -> None:
        """Write the new events of this process's runs that another process watches."""
        runs = LIVE_RUNS.all()
        if not runs and not self._written:
            return
        watched = self._watched_elsewhere() if runs else set()
        for run in runs:
            if run.task_id in watched and run.step_id not in self._written:
                self._written[run.step_id] = _Written(run)
        rows, ends = self._batches()
        started = time.perf_counter()
        with self._lock, self._db:
            self._db.executemany(
                "INSERT INTO stepwise_live_events (task_id, step_id, origin, at, events, ended)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            gone = self._ended_long_ago()
            self._db.executemany(
                "DELETE FROM stepwise_live_events WHERE step_id = ? AND origin = ?",
                [(step_id, self.origin) for step_id in gone],
            )
        self._record(rows, ends, gone, started)

    def _record(self, rows: list, ends: list[_Written], gone: list[str], started: float) -> None:
        if rows:
            self.stats.flushes += 1
            self.stats.rows_written += len(rows)
            self.stats.write_seconds.append(time.perf_counter() - started)
            del self.stats.write_seconds[:-1000]
        now = time.monotonic()
        for written in ends:
            written.ended = now
        for step_id in gone:
            self._written.pop(step_id, None)

    def _watched_elsewhere(self) -> set[str]:
        rows = self._db_read(
            "SELECT task_id, origin FROM stepwise_live_watchers WHERE until > ?", (time.time(),)
        )
        return {task_id for task_id, origin in rows if origin not in _ORIGINS}

    def _db_read(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _batches(self) -> tuple[list[tuple[Any, ...]], list[_Written]]:
        """A row per run with new events (their deltas merged), and an end row per ended run."""
        rows, ends, now = [], [], time.time()
        for written in self._written.values():
            if written.ended is not None:
                continue
            run = written.run
            done = run.done  # Before reading: an event after it is still read this time.
            events = run.events_since(written.count, timeout=0)
            written.count += len(events)
            batch = _merged(events) if written.rows < MAX_ROWS_PER_STEP else []
            if batch or (done and written.rows):
                rows.append((run.task_id, run.step_id, self.origin, now, _json(batch), int(done)))
                written.rows += 1
            if done:
                ends.append(written)
        return rows, ends

    def _ended_long_ago(self) -> list[str]:
        now = time.monotonic()
        return [
            step_id
            for step_id, written in self._written.items()
            if written.ended is not None and now - written.ended > ENDED_KEPT_S
        ]

    def _prune_stale(self) -> None:
        """Delete what processes that ended without cleaning up left (one write a minute)."""
        before = time.time() - STALE_S
        with self._lock, self._db:
            self._db.execute("DELETE FROM stepwise_live_events WHERE at < ?", (before,))
            self._db.execute("DELETE FROM stepwise_live_watchers WHERE until < ?", (before,))

    # ------------------------------------------------------------------ both

    def close(self) -> None:
        """Stop writing (the ends of runs that ended first); finish the runs heard from others."""
        self._stopping.set()
        self._thread.join(timeout=2)
        if self._may_write():  # A program that exits right after its step: tell its end.
            with contextlib.suppress(sqlite3.Error):
                self.flush()
        with _REGISTRY:
            _ORIGINS.discard(self.origin)
            if _WRITING.get(self.path) == self.origin:
                del _WRITING[self.path]
        for run, _ in list(self._remote.values()):
            run.finish(None, None)
        self._remote.clear()
        with self._lock:
            self._db.close()


def _connect(path: str) -> sqlite3.Connection:
    # A connection of its own: the store's is guarded by its own lock and transactions.
    db = sqlite3.connect(path, timeout=1.0, check_same_thread=False)
    try:
        db.executescript(_SCHEMA)
    except sqlite3.Error:
        db.close()
        raise
    return db


def _merged(events: list[StepEvent]) -> list[dict[str, Any]]:
    """The events to relay, as JSON data: consecutive deltas as one, large ones left out."""
    out: list[dict[str, Any]] = []
    for event in events:
        if event.kind not in _RELAYED:
            continue
        if isinstance(event, TokenDeltaEvent) and out and out[-1]["kind"] == "token_delta":
            out[-1]["delta"] += event.delta
            continue
        data = event.model_dump(mode="json")
        if event.kind == "token_delta" or len(_json([data]).encode()) <= MAX_EVENT_BYTES:
            out.append(data)
    return out


def _json(data: list[dict[str, Any]]) -> str:
    return json.dumps(data, ensure_ascii=False)
