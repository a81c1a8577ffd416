"""A task's events, live, for `GET /stepwise/v1/tasks/{id}/events` (server-sent events).

Two sources, merged in order of arrival:
- step runs of this process (the server's own routes run steps recording their events):
  step started, token deltas, tool calls, step completed or failed, as they happen;
- the store, polled for a new task version: what changed elsewhere (the app, another
  process, a run that records no events) — steps completed, failed, undone, skipped, new
  upcoming steps, the task's status. A change already told by a run is not told twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from agent_core.runtime.step_runs import LIVE_RUNS, StepRun
from agent_core.types import StepStatus, TaskState

__all__ = ["task_events"]

POLL_S = 0.05
KEEPALIVE_S = 15.0
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


async def task_events(
    task_id: str, load: Any, version_of: Any, is_disconnected: Any
) -> AsyncIterator[bytes]:
    """The task's events until the client leaves.

    Args:
        task_id: The task.
        load: `load(task_id) -> TaskState` (blocking: run in a thread).
        version_of: `version_of(task_id) -> int | None` (blocking).
        is_disconnected: An async callable: whether the client has left.
    """
    loop = asyncio.get_running_loop()
    started: asyncio.Queue[StepRun] = asyncio.Queue()

    def on_run(run: StepRun) -> None:
        if run.task_id == task_id:
            loop.call_soon_threadsafe(started.put_nowait, run)

    unsubscribe = LIVE_RUNS.subscribe(on_run)
    try:
        watch = _Watch(await asyncio.to_thread(load, task_id))
        yield sse(
            "subscribed", {"kind": "subscribed", "task_id": task_id, "version": watch.version}
        )
        runs: dict[StepRun, int] = dict.fromkeys(LIVE_RUNS.of_task(task_id), 0)
        idle = 0.0
        while not await is_disconnected():
            while not started.empty():
                runs.setdefault(started.get_nowait(), 0)
            sent = []
            for run in list(runs):
                events, runs[run] = watch.run_events(run, runs[run])
                sent += events
                if run.done and not run.events_since(runs[run], timeout=0):
                    del runs[run]
            version = await asyncio.to_thread(version_of, task_id)
            if version is not None and version != watch.version:
                sent += watch.store_events(await asyncio.to_thread(load, task_id))
            for chunk in sent:
                yield chunk
            idle = 0.0 if sent else idle + POLL_S
            if idle >= KEEPALIVE_S:
                idle = 0.0
                yield b": keep-alive\n\n"
            await asyncio.sleep(POLL_S)
    finally:
        unsubscribe()
