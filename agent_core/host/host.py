"""The host every face holds: one store, a runner per agent spec, live events, stops.

`stepwise serve`, the app, `stepwise mcp` and a user's own program each hold one `Host` over
the same database (a SQLite file, or a team's PostgreSQL: `open_store`), so a task made in one
shows in the others. Nothing a face answers from lives only in its process: a runner's cached
task is checked against the stored version before each use and reloaded when another process
moved it on. A task is run by the runner of the spec it recorded; keys come from the caller
(the app's session) or the environment (the SDKs read `OPENAI_API_KEY`, ...), never from the
store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from agent_core import user_code
from agent_core.errors import UserError
from agent_core.host.change_feed import DataVersionFeed
from agent_core.host.events import SAFETY_POLL_S, EventHub
from agent_core.host.live_relay import LiveRelay
from agent_core.host.stops import StopRequests
from agent_core.runtime.claims import claim_is_stale
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.runtime.step_runs import LIVE_RUNS, StepRun
from agent_core.spec import AgentSpec
from agent_core.store.base import Store
from agent_core.store.open import open_store
from agent_core.store.sqlite import SQLiteStore
from agent_core.types import StepStatus, Task, TaskState, TaskStatus

if TYPE_CHECKING:
    from agent_core.host.notify import NotifyBridge
    from agent_core.llms.pricing import PriceTable

__all__ = ["Host"]

log = logging.getLogger("agent_core.host")

_RUNNABLE = (TaskStatus.ACTIVE, TaskStatus.FAILED)
_RUNNERS_KEPT = 64  # Specs x keys x prices: a long-lived app sees many; the latest stay.


class Host:
    """The store, runners and live events behind one face (any thread may use it).

    Args:
        db: A SQLite file's path or a `postgresql://` URL; None reads `$STEPWISE_DB`, else
            ./stepwise.db (`open_store`).
        default_spec: The agent of a task that names none (default: the scripted demo).
        store: An opened store to host instead of `db` (the host closes it).
    """

    def __init__(
        self,
        db: str | Path | None = None,
        *,
        default_spec: AgentSpec | None = None,
        store: Store | None = None,
    ) -> None:
        self.store: Store = store if store is not None else open_store(db)
        self.default_spec = default_spec or AgentSpec()
        self._runners: OrderedDict[tuple[str, ...], ParallelAgentRunner] = OrderedDict()
        # Validating a spec consults the user's code registry: done once per recorded spec.
        self._specs: dict[str, AgentSpec] = {}
        self._reading_spec = AgentSpec()
        self._guard = threading.Lock()
        # Live events for every subscriber of this process, from one feed per watched task.
        self.events = EventHub(
            load=lambda task_id: self.reader().get_task_state(task_id),
            version_of=self.store.task_version,
        )
        self._changes = threading.Condition()
        self._unlisten = self.store.add_commit_listener(self._committed)
        self.stops = StopRequests(self.store)
        # On PostgreSQL the other processes hear this one's commits and runs at once; on
        # SQLite the file's change feed tells this host of every other connection's commit.
        self._bridge: NotifyBridge | None = _bridge(self.store, self.events)
        self._feed = _feed(self.store)
        self._relay: LiveRelay | None = None
        if self._feed is not None:
            self.events.poll_s = SAFETY_POLL_S  # The feed tells; the poll is a safety net.
            # On SQLite a running step's tokens cross processes through the file.
            self._relay = _relay(self._feed.path, self.events)
            self._feed.add_listener(self._changed_elsewhere)

    @classmethod
    def open(cls, db: str | Path | None = None, **options: object) -> Host:
        """A host over `db` (the same as `Host(db, ...)`), to read as a verb at call sites."""
        return cls(db, **options)  # type: ignore[arg-type]

    def _committed(self, state: TaskState) -> None:
        # The state as committed: the event feed tells its changes without reading it back.
        self.events.changed(state.task_id, state)
        if self._bridge is not None:
            self._bridge.committed(state.task_id)
        self._wake()

    def _changed_elsewhere(self) -> None:
        """Another connection committed to the file (the change feed's thread)."""
        if self._relay is not None:
            self._relay.poll()
        self.events.changed_all()
        self.stops.honour()
        self._wake()

    def _wake(self) -> None:
        with self._changes:
            self._changes.notify_all()

    def wait_for_change(self, timeout: float) -> None:
        """Block until this host hears of a commit (its own or another process's), or `timeout`.

        On PostgreSQL other processes' commits are not heard here: callers loop with a short
        `timeout` and read the store each time.
        """
        with self._changes:
            self._changes.wait(timeout)

    # ------------------------------------------------------------------ runners

    def runner_for(
        self,
        spec: AgentSpec,
        *,
        api_key: str | None = None,
        prices: PriceTable | None = None,
        owner: str = "",
    ) -> ParallelAgentRunner:
        """The runner of `spec`, built once per key, prices and owner (again after a reload).

        Args:
            spec: The agent.
            api_key: The key for the spec's provider (None: the environment's).
            prices: Price overrides for usage costs.
            owner: Keeps runners apart that must not be shared (the app's "you are the
                model" runner holds one session's typed replies).
        """
        generation = user_code.generation() if spec.uses_user_code else 0
        key = (
            spec.model_dump_json(),
            str(generation),
            _key_id(api_key),
            _prices_key(prices),
            owner,
        )
        with self._guard:
            runner = self._runners.get(key)
            if runner is not None:
                self._runners.move_to_end(key)
                return runner
        # Built outside the lock: a user's factory may take a while.
        built = spec.build_runner(
            store=self.store,
            api_key=api_key,
            prices=prices,
            registry=user_code.default_registry(),
        )
        with self._guard:
            runner = self._runners.setdefault(key, built)
            self._runners.move_to_end(key)
            while len(self._runners) > _RUNNERS_KEPT:
                self._runners.popitem(last=False)
            return runner

    def reader(self) -> ParallelAgentRunner:
        """A runner that reads any task (the default demo spec: it needs no key)."""
        return self.runner_for(self._reading_spec)

    def spec_named(self, agent: str | None) -> AgentSpec:
        """The spec for a request naming `agent` (a registered agent), else the default.

        Both run on the default spec's model.

        Raises:
            UserError: No agent of that name is registered.
        """
        if not agent:
            return self.default_spec
        # A registered agent gets the default model too: `build_agent(llm)` receives it.
        fields = {**self.default_spec.model_dump(), "agent": agent}
        fields.pop("agent_target")  # Filled in from the registry.
        try:
            return AgentSpec.from_registry(user_code.default_registry(), **fields)
        except ValueError as exc:
            names = user_code.default_registry().names("agent")  # A hint imports no agent.
            raise UserError(
                f"no agent named {agent!r} is registered here",
                hint=f"registered agents: {', '.join(sorted(names)) or 'none'}; register one "
                "with --agent NAME=TARGET or [tool.stepwise] agents",
            ) from exc

    def spec_of(self, task_id: str) -> AgentSpec:
        """The spec `task_id` recorded (the default demo spec when it recorded none)."""
        recorded = self._current_task(task_id).spec
        return self._spec_of(recorded) if recorded else self._reading_spec

    def runner_for_task(self, task_id: str) -> ParallelAgentRunner:
        """The runner of the spec `task_id` recorded; the reader once it can no longer run.

        A finished, abandoned or imported task is read only: its agent is never rebuilt.
        """
        task = self._current_task(task_id)
        if task.status not in _RUNNABLE or task.imported or not task.spec:
            return self.reader()
        return self.runner_for(self._spec_of(task.spec))

    def runs_of(self, task_id: str) -> list[StepRun]:
        """The task's running steps: this process's, then those other processes run.

        Another process's run shows its token deltas and tool calls as they arrive (SQLite's
        relay table, PostgreSQL's NOTIFY); asking watches the task for a while, so that
        process starts telling its runs' events (a face asks again each time it draws).
        """
        local = LIVE_RUNS.of_task(task_id)
        if self._relay is not None:
            remote = self._relay.watch(task_id)
        elif self._bridge is not None:
            remote = self._bridge.watch(task_id)
        else:
            remote = []
        here = {run.step_id for run in local}
        return [*local, *(run for run in remote if run.step_id not in here)]

    # ------------------------------------------------------------------ acts

    def cancel_step(self, task_id: str, step_id: str, *, wait: float = 10.0) -> ParallelAgentRunner:
        """Stop a running step, in this process or in the one running it.

        Returns a runner to answer with the task as it is after the stop (the task's own
        when the step ran here; the reader when it ran elsewhere: stopping a step another
        process runs needs no key for the task's model).

        Raises:
            UserError: The step is not running (or runs elsewhere and no feed reaches it).
        """
        step = self.reader().get_step(task_id, step_id)
        if (
            (self._bridge is None and not self.stops.available)
            or LIVE_RUNS.get(step_id) is not None
            or step.status is not StepStatus.RUNNING
            or claim_is_stale(step.claimed_by, step_id)  # Its process is gone: nobody to tell.
        ):
            runner = self.runner_for_task(task_id)
            runner.cancel_step(task_id, step_id, wait=wait)
            return runner
        if self._bridge is not None:
            self._bridge.stop(task_id, step_id)
        self.stops.ask(task_id, step_id)
        try:
            self._wait_stopped(task_id, step_id, wait)
        finally:
            self.stops.withdraw(step_id)
        return self.reader()

    def _wait_stopped(self, task_id: str, step_id: str, wait: float) -> None:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if self.reader().get_step(task_id, step_id).status is not StepStatus.RUNNING:
                return

    # ------------------------------------------------------------------ helpers

    def _current_task(self, task_id: str) -> Task:
        """The task, from a runner that holds it at the stored version, else loaded.

        The runner that ran the last step holds it: the reader would load every step again.
        """
        version = self.store.task_version(task_id)
        with self._guard:
            runners = list(self._runners.values())
        for runner in runners:
            held = runner.state.task_dict.get(task_id)
            if held is not None and version is not None and held.version == version:
                return held.task
        return self.reader().get_task(task_id)

    def _spec_of(self, recorded: dict) -> AgentSpec:
        key = json.dumps(recorded, sort_keys=True)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specs[key] = AgentSpec.model_validate(recorded)
        return spec

    def close(self) -> None:
        """Stop the live events and close the store."""
        self._unlisten()
        self.stops.close()
        if self._feed is not None:
            self._feed.close()
        if self._relay is not None:
            self._relay.close()
        if self._bridge is not None:
            self._bridge.close()
        self.events.close()
        self.store.close()

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _key_id(key: str | None) -> str:
    # Tells keys apart in the cache without keeping the key itself as a dictionary key.
    return hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""


def _prices_key(prices: PriceTable | None) -> str:
    if prices is None:
        return ""
    return json.dumps(
        {name: p.model_dump(mode="json") for name, p in prices.prices.items()}, sort_keys=True
    )


def _feed(store: Store) -> DataVersionFeed | None:
    """The change feed of a SQLite file; None for other stores (and SQLite in memory)."""
    if not isinstance(store, SQLiteStore) or store.path in ("", ":memory:"):
        return None
    return DataVersionFeed(store.path)


def _relay(path: str, hub: EventHub) -> LiveRelay | None:
    """The relay of running steps' events through the file; None if it cannot write there."""
    try:
        return LiveRelay(path, add_run=hub.add_run, watched=hub.watched)
    except sqlite3.Error as exc:  # A read-only file: live tokens stay in their process.
        log.warning("live tokens across processes are off for %s: %s", path, exc)
        return None


def _bridge(store: Store, hub: EventHub) -> NotifyBridge | None:
    """The NOTIFY bridge of a PostgreSQL store; None for SQLite (its change feed polls)."""
    url, schema = getattr(store, "url", None), getattr(store, "schema", None)
    if not (isinstance(url, str) and isinstance(schema, str)):
        return None
    from agent_core.host.notify import NotifyBridge

    return NotifyBridge(url, schema, hub)
