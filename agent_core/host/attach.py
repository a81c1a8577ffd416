"""Attach from your program: run your agent on a Stepwise database, pausing for a person.

    import stepwise

    with stepwise.session(db="stepwise.db") as s:
        result = s.run(agent, "Refund order 42", pause_before=["tool:refund"])

The program runs the steps itself, on the database the app (or `stepwise serve`) opens, so the
app shows the run as it goes. At a breakpoint the program blocks until a person decides in
the app: runs the held step (as is, or with edited arguments), rejects it, undoes, or
abandons the task. The decision arrives through the store (the step or the task changes; the
host's change feed wakes the wait); the program then carries on from the task as the person
left it. A Stop in the app stops the step the program is running (`StopRequests`).

A program that exits mid-run leaves an active task. Its agent is recorded where it can be
(an `AgentSpec`, or a registered target), so the app rebuilds it and carries on; an agent
object nothing names is recorded as such (`ATTACHED`), and the app says it cannot rebuild it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from agent_core.errors import UserError
from agent_core.host.host import Host
from agent_core.runtime.breakpoints import AtStep, Breakpoint, OnTool, RunUntilResult
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.spec import AgentSpec
from agent_core.store.base import Store
from agent_core.types import StepStatus, TaskStatus
from agent_core.workers.base import BaseAgentWorker

__all__ = [
    "ATTACHED",
    "Session",
    "SessionResult",
    "attach",
    "attached_program",
    "breakpoints_of",
    "check_rebuildable",
]

ATTACHED = "stepwise.attached/"
"""The settings key (then the task id) naming the program and agent of an attached task."""
_WAIT_TICK_S = 0.25  # On PostgreSQL no change feed wakes the wait: the store is read this often.
_PAUSING = ("breakpoint", "tool_approval", "question")


class SessionResult(BaseModel):
    """How a `Session.run` ended."""

    task_id: str
    reason: Literal["answered", "abandoned", "error", "max_steps", "no_step"]
    response: str | None = None
    """The final answer, when the task finished."""
    detail: str = ""


def breakpoints_of(pause_before: Iterable[str]) -> list[Breakpoint]:
    """`"tool:NAME"`, `"tool:*"` and `"step:N"` (before the Nth step runs) as breakpoints.

    Raises:
        UserError: A spelling none of these.
    """
    out: list[Breakpoint] = []
    for spec in pause_before:
        kind, _, value = spec.partition(":")
        if kind == "tool" and value:
            out.append(OnTool(None if value == "*" else value))
        elif kind == "step" and value.isdigit() and int(value) >= 1:
            out.append(AtStep(int(value) - 1))
        else:
            raise UserError(
                f"pause_before holds {spec!r}, which names no breakpoint",
                hint='write "tool:NAME" (before a call of that tool), "tool:*" (before any '
                'tool call) or "step:N" (before the Nth step runs)',
            )
    return out


class Session:
    """Your program, attached to a Stepwise database (see the module's docstring).

    Args:
        db: A SQLite file's path or a `postgresql://` URL (None: `$STEPWISE_DB`, else
            ./stepwise.db): the one the app opens.
        host: A host to run on instead (it stays open after the session).
        wait_timeout: Seconds a breakpoint waits for a person before `run` returns with the
            task left active (None: as long as it takes).
    """

    def __init__(
        self,
        db: str | Path | None = None,
        *,
        host: Host | None = None,
        wait_timeout: float | None = None,
    ) -> None:
        self._owns_host = host is None
        self.host = host if host is not None else Host(db)
        self.wait_timeout = wait_timeout

    def run(
        self,
        agent: Any,
        input: str,
        *,
        pause_before: Iterable[str] = (),
        max_steps: int = 100,
    ) -> SessionResult:
        """Run `agent` on `input` as a new task, pausing before the steps `pause_before` names.

        Args:
            agent: An `AgentSpec`, a Stepwise worker, or a pydantic-ai `Agent`, an OpenAI
                Agents SDK `Agent` or a compiled LangGraph graph.
            input: The task's input.
            pause_before: Breakpoints (`breakpoints_of`).
            max_steps: The most steps this call runs, the person's included.
        """
        runner = self.runner_for(agent)
        task_id = runner.create_task(input).task_id
        self._record(task_id, agent)
        return self.resume(runner, task_id, pause_before=pause_before, max_steps=max_steps)

    def resume(
        self,
        runner: ParallelAgentRunner,
        task_id: str,
        *,
        pause_before: Iterable[str] = (),
        max_steps: int = 100,
    ) -> SessionResult:
        """Carry on `task_id` with `runner`, pausing as `run` does."""
        stops = breakpoints_of(pause_before)
        for _ in range(max_steps):
            result = runner.run_until(task_id, stop=stops, max_steps=max_steps)
            if result.reason == "last_step":
                response = runner.finalize_response(task_id).response
                return SessionResult(task_id=task_id, reason="answered", response=str(response))
            if result.reason not in _PAUSING:
                return _ended(task_id, result)
            if not self._wait_for_person(runner, task_id):
                return SessionResult(task_id=task_id, reason="abandoned", detail=result.detail)
        return SessionResult(task_id=task_id, reason="max_steps")

    def runner_for(self, agent: Any) -> ParallelAgentRunner:
        """The runner of `agent` on the session's store."""
        if isinstance(agent, AgentSpec):
            return self.host.runner_for(agent)
        if isinstance(agent, ParallelAgentRunner):
            return agent
        worker = agent if isinstance(agent, BaseAgentWorker) else _adapt(agent)
        return ParallelAgentRunner(worker, store=self.host.store)

    def _record(self, task_id: str, agent: Any) -> None:
        """Name the program and agent, so the app can say what runs the task (or cannot)."""
        put = getattr(self.host.store, "put_setting", None)
        if put is None:
            return
        put(
            ATTACHED + task_id,
            {
                "program": " ".join(sys.argv) or "python",
                "pid": os.getpid(),
                "agent": type(agent).__name__,
                "rebuildable": isinstance(agent, AgentSpec),
            },
        )

    def _wait_for_person(self, runner: ParallelAgentRunner, task_id: str) -> bool:
        """Block until a person acts on the paused task; False once it is abandoned or done.

        The act is whatever moves the task on: the held step run (edited or not), rejected
        or skipped, a step undone, feedback added. A wait that times out leaves the task
        active for the app, and ends the run as abandoned by the program.
        """
        before = self.host.store.task_version(task_id)
        waited = 0.0
        while self.wait_timeout is None or waited < self.wait_timeout:
            self.host.wait_for_change(_WAIT_TICK_S)
            waited += _WAIT_TICK_S
            if self.host.store.task_version(task_id) == before:
                continue
            state = runner.get_task_state(task_id)
            if state.task.status not in (TaskStatus.ACTIVE, TaskStatus.FAILED):
                return False
            if any(step.status is StepStatus.RUNNING for step in state.steps.values()):
                continue  # The person runs the step in their process: wait for its end.
            return True
        return False

    def close(self) -> None:
        """Close the session's host (unless it was handed in)."""
        if self._owns_host:
            self.host.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def attach(db: str | Path | None = None, **options: Any) -> Session:
    """A `Session` on `db` (use it in a `with` block); `stepwise.session` is this."""
    return Session(db, **options)


def attached_program(store: Store, task_id: str) -> dict[str, Any] | None:
    """What `Session.run` recorded of the program that started `task_id`; None if none did."""
    get = getattr(store, "get_setting", None)
    found = get(ATTACHED + task_id) if get is not None else None
    return found if isinstance(found, dict) else None


def check_rebuildable(store: Store, task_id: str) -> None:
    """Refuse to run a task whose agent lives only in the program that started it.

    Such a task records no spec: another face would run its next step with the default
    (demo) agent instead of the program's.

    Raises:
        UserError: `agent_not_rebuildable`, naming the program and its agent.
    """
    program = attached_program(store, task_id)
    if program is None or program.get("rebuildable", True):
        return
    agent, command = str(program.get("agent", "agent")), str(program.get("program", ""))
    raise UserError(
        f"task {task_id} was started by a program ({command}) with a {agent} object that no "
        "importable target names; only that program can run its next step",
        hint="run the program again and carry the task on with Session.resume, or register "
        "a function that builds the agent (--agent NAME=FILE:FUNCTION) and fork the task "
        "with that agent",
        code="agent_not_rebuildable",
        task_id=task_id,
        params={"agent": agent, "program": command},
    )


def _adapt(agent: Any) -> BaseAgentWorker:
    from agent_core.adapters import adapt  # Only for a framework's agent: it may load its SDK.

    return adapt(agent)


def _ended(task_id: str, result: RunUntilResult) -> SessionResult:
    reason = result.reason if result.reason in ("error", "max_steps", "no_step") else "error"
    return SessionResult(task_id=task_id, reason=reason, detail=result.detail)  # type: ignore[arg-type]
