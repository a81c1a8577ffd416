"""Stop from any process: a request written to the database, heard by the process running the step.

A step runs in the process that started it (its runtime loop holds the model call or the
tool). Another face's Stop cannot reach that loop, so it writes a request where every process
looks: the store's settings (a small table every store has), under `stepwise.stop/STEP`. The
host running the step hears the write through its change feed (SQLite's `data_version`, or the
NOTIFY bridge on PostgreSQL, which also carries stops directly), cancels the run, and removes
the request. The step is then recorded as failed, "stopped by you", as a local Stop records it.

A request older than the run it finds is stale (a step stopped before, now run again): it is
removed and the run goes on. The asker removes its request once the step stopped or its wait
ran out, so none lingers.
"""

from __future__ import annotations

import logging
import threading
import time

from agent_core.runtime.step_runs import LIVE_RUNS, StepRun
from agent_core.store.base import SettingsStore, Store

__all__ = ["PREFIX", "StopRequests"]

log = logging.getLogger("agent_core.host")

PREFIX = "stepwise.stop/"
"""The settings key of a stop request: this, then the step's id."""
_SKEW_S = 1.0  # A request this much older than the run it finds is still for that run.


class StopRequests:
    """Writes stop requests for steps running elsewhere; honours those for steps running here."""

    def __init__(self, store: Store) -> None:
        self._settings = store if isinstance(store, SettingsStore) else None
        self._started: dict[str, float] = {}  # Step id -> when this host saw its run start.
        self._guard = threading.Lock()
        self._unsubscribe = LIVE_RUNS.subscribe(self._on_run)

    @property
    def available(self) -> bool:
        """Whether the store keeps settings, where the requests are written."""
        return self._settings is not None

    def _on_run(self, run: StepRun) -> None:
        with self._guard:
            self._started[run.step_id] = time.time()

    def ask(self, task_id: str, step_id: str) -> None:
        """Ask whichever process runs the step to stop it."""
        if self._settings is not None:
            self._settings.put_setting(PREFIX + step_id, {"task_id": task_id, "at": time.time()})

    def withdraw(self, step_id: str) -> None:
        """Remove the request (the step stopped, or the asker gave up waiting)."""
        if self._settings is not None:
            self._settings.put_setting(PREFIX + step_id, None)

    def honour(self) -> None:
        """Stop each run of this process that a request names (the change feed calls this)."""
        if self._settings is None:
            return
        runs = LIVE_RUNS.all()
        with self._guard:  # Forget runs that ended.
            live = {run.step_id for run in runs}
            for step_id in [s for s in self._started if s not in live]:
                del self._started[step_id]
        for run in runs:
            if not run.stop_requested:
                self._honour_one(run)

    def _honour_one(self, run: StepRun) -> None:
        request = self._settings.get_setting(PREFIX + run.step_id) if self._settings else None
        if not isinstance(request, dict) or request.get("task_id") != run.task_id:
            return
        started = self._started.get(run.step_id, 0.0)
        if float(request.get("at", 0.0)) + _SKEW_S < started:
            log.info("a stale stop request for step %s was removed", run.step_id)
        else:
            run.cancel()
        self.withdraw(run.step_id)

    def close(self) -> None:
        """Stop hearing of runs."""
        self._unsubscribe()
