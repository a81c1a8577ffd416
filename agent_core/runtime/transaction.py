"""One step run as a transaction: claim the step, run the worker, then commit, fail or release.

Kept apart from `AgentRunner` (which holds the API, the cache and the store), as pydantic-ai
keeps a step's logic in its graph nodes apart from `Agent`. The worker computes on a view of
the task (staged memory, a copy of its state); only `_complete` touches the live task, in one
`TaskChange` under the task's lock, so a failed step never changes it.

It uses the runner's protected API only: `_lock`, `_commit`, `_task_state`, `_owner` (the
`StepHost` protocol), so it never imports the runner that imports it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import functools
import json
import logging
import time
from typing import Any, cast

from agent_core.effects import revert_effects, step_context
from agent_core.errors import (
    AgentCoreError,
    ConflictError,
    Remedy,
    StepConflictError,
    StepError,
)
from agent_core.runtime import claims
from agent_core.runtime.claims import (
    CLAIM_PERSIST_DELAY_S,
    IN_FLIGHT,
    claim_owner,
    claim_stamp,
    judged_by,
)
from agent_core.runtime.contracts import StepHost
from agent_core.runtime.limits import check_spending
from agent_core.runtime.queue import (
    adopt_next_steps,
    check_active,
    check_can,
    hand_over,
    is_claimable,
    mark_completed,
    pick_step,
)
from agent_core.runtime.step_runs import STOPPED_BY_YOU, StepRun
from agent_core.runtime.tracebacks import foreign_traceback
from agent_core.runtime.undo import memory_write
from agent_core.runtime.worker_state import dump_state, merge_state
from agent_core.store.base import TaskChange, store_now
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.types import (
    StepAction,
    StepInput,
    StepSnapshot,
    StepStatus,
    Task,
    TaskState,
    TaskStatus,
    TaskStep,
    TaskStepOutput,
    short_id,
    utcnow,
)

__all__ = ["claim", "run_claimed"]

_FAIL_COMMIT_TRIES = 3
_STEP_FAILED_HINT = (
    "nothing completed was lost; edit the step's input and run it again, or undo_step()"
)

logger = logging.getLogger(__name__)

_LEASE_IO = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="stepwise-claim-lease")
"""Where claims are written and renewed: off the runtime loop, which a slow store must not
stall, and apart from its default executor, whose threads sync tools may all hold."""


def claim(
    runner: StepHost,
    state: TaskState,
    step_id: str | None,
    input: StepInput,
    rejection: str | None = None,
) -> TaskStep:
    """Mark the step running here; the store hears of it from `_store_claim`, if at all."""
    with runner._lock(state.task_id), judged_by(lambda: _store_time(runner)):
        check_active(state, "run")
        check_spending(state)
        step = pick_step(state, step_id)
        if input is not None and input != step.input:
            check_can(step, StepAction.EDIT)
        if rejection is not None:
            check_can(step, StepAction.REJECT)
        if input is not None:
            step.set_input(input)
        step.rejection = rejection
        step.status = StepStatus.RUNNING
        step.attempts += 1
        step.claimed_by = claim_stamp(runner._owner, time.time() + claims.CLAIM_LEASE_S)
        step.started_at = utcnow()
        step.error, step.error_code, step.error_params = None, None, {}
        IN_FLIGHT.start(runner._owner, step.step_id)
    return step


@telemetry_hooks.traced_step
async def run_claimed(
    runner: StepHost, state: TaskState, step: TaskStep, kwargs: dict[str, Any], run: StepRun
) -> TaskStepOutput:
    """Run a claimed step's worker and commit its output, or record why it did not complete.

    A step that fails is recorded `failed` and raises `StepError`; one interrupted (not
    stopped by a person) goes back to upcoming, untouched.
    """
    return await _Transaction(runner, state, step).run(kwargs, run)


class _Transaction:
    """The claimed `step` of `state`, from its worker call to its commit."""

    def __init__(self, runner: StepHost, state: TaskState, step: TaskStep) -> None:
        self.runner, self.state, self.step = runner, state, step

    async def run(self, kwargs: dict[str, Any], run: StepRun) -> TaskStepOutput:
        lease = asyncio.create_task(self._hold_lease(), name=f"claim lease {self.step.step_id}")
        state, step = self.state, self.step
        base_json = state.extra_state_json
        view = state.task.model_copy(
            update={"memory": state.task.memory.staged(), "extra_state": json.loads(base_json)}
        )
        started = time.perf_counter()
        with step_context(state.task_id, step.step_id) as context:
            try:
                output = await self.runner.agent_worker.arun_step(step, view, **kwargs)
                latency_ms = (time.perf_counter() - started) * 1000
                if isinstance(output, TaskStepOutput):
                    output.effects = [*output.effects, *context.effects]
                    if not output.messages_sent and context.messages_sent:
                        output.messages_sent = context.messages_sent
                return self._complete(view, base_json, output, latency_ms)
            except Exception as exc:
                revert_effects(context.effects)
                raise self._fail(exc) from exc
            except asyncio.CancelledError:
                revert_effects(context.effects)
                if not run.stop_requested:  # Interrupted: the step goes back, untouched.
                    self._release()
                    raise
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                raise self._fail(StepError(STOPPED_BY_YOU, code="step_stopped")) from None
            except BaseException:
                revert_effects(context.effects)
                self._release()
                raise
            finally:
                lease.cancel()  # Whichever way the step ended: no renewal runs after it.
                IN_FLIGHT.finish(self.runner._owner, step.step_id)

    async def _hold_lease(self) -> None:
        """Store the claim once the step has run a moment, then renew it every third of its lease.

        A task on the loop beside the step's; `run` cancels it when the step ends. A write
        still in its thread then finds the step ended and writes nothing.
        """
        loop = asyncio.get_running_loop()
        await asyncio.sleep(CLAIM_PERSIST_DELAY_S)
        renewal = False
        while await loop.run_in_executor(
            _LEASE_IO, functools.partial(self._store_claim, renewal=renewal)
        ):
            renewal = True
            await asyncio.sleep(claims.CLAIM_LEASE_S / 3)

    def _store_claim(self, *, renewal: bool) -> bool:
        """Write a still-running step's claim, its lease from now; False when it is not held.

        A version-only commit: one the store refuses means another runner moved the task on
        (or took the step over once the lease lapsed), and the step's own commit will be
        refused too.
        """
        runner, state, step = self.runner, self.state, self.step
        until = _store_time(runner) + claims.CLAIM_LEASE_S  # Read before the lock: a round trip.
        with runner._lock(state.task_id):
            current = runner.state.task_dict.get(state.task_id) is state
            if not current or step.status is not StepStatus.RUNNING:
                return False
            step.claimed_by = claim_stamp(runner._owner, until)
            change = TaskChange(
                state=state, base_version=state.version, steps=[step], task_row=False
            )
            try:
                runner._commit(state, change)
            except AgentCoreError as exc:  # The step's own commit meets it and reports it.
                if renewal:
                    logger.warning(
                        "step %s of task %s: its claim could not be renewed (%s); another "
                        "runner may take the step over once its lease lapses",
                        step.step_id,
                        short_id(state.task_id),
                        exc.code,
                    )
                return False
        return True

    def _complete(
        self, view: Task, base_json: str, output: TaskStepOutput, latency_ms: float
    ) -> TaskStepOutput:
        state, step = self.state, self.step
        if not isinstance(output, TaskStepOutput):
            raise StepError(
                f"the worker returned {type(output).__name__}, not a TaskStepOutput",
                task_id=state.task_id,
                step_id=step.step_id,
            )
        with self.runner._lock(state.task_id):
            committed_json = state.extra_state_json
            written = merge_state(base_json, committed_json, view.extra_state)
            new_json = dump_state(written, task_id=state.task_id, step_id=step.step_id)
            next_steps = adopt_next_steps(state, step, output.next_steps)
            task = state.task
            snapshot = StepSnapshot(
                step_id=step.step_id,
                memory=task.memory.apply(view.memory),  # type: ignore[arg-type]
                extra_state_json=committed_json,
            )
            write = memory_write(snapshot, task.memory)
            task.extra_state = written
            state.set_extra_state_json(new_json)
            task.usage = task.usage + output.usage
            if task.status is TaskStatus.FAILED:
                task.status = TaskStatus.ACTIVE
            output.task_step, output.next_steps, output.latency_ms = step, next_steps, latency_ms
            mark_completed(state, step, next_steps)
            waiting = hand_over(state, step, next_steps)
            state.outputs[step.step_id] = output
            state.snapshots[step.step_id] = snapshot
            change = TaskChange(
                state=state,
                base_version=state.version,
                steps=[step, *next_steps, *waiting],
                outputs=[output],
                snapshots=[snapshot],
                memory=write,
            )
            self.runner._commit(state, change)
            # The prompt is stored apart: the state keeps the output without it, as a load
            # would; the caller gets it whole.
            state.outputs[step.step_id] = output.model_copy(update={"messages_sent": []})
        return output

    def _fail(self, exc: BaseException) -> StepError:
        state, step = self.state, self.step
        message = str(exc) if isinstance(exc, AgentCoreError) else f"{type(exc).__name__}: {exc}"
        # Model text can hold lone surrogates, which no store can encode.
        message = message.encode("utf-8", "replace").decode("utf-8")
        cause = exc.cause if isinstance(exc, StepError) else message
        why = _cause_of(exc)
        text = f"step {step.step_id} of task {short_id(state.task_id)} failed: {message}"
        # A worker's own StepError (a PlanError with its raw text...) keeps its type and fields.
        if isinstance(exc, StepError):
            error = copy.copy(exc)
        elif isinstance(exc, ConflictError):
            error = StepConflictError(text)
        else:
            error = StepError(text)
        error.args = (text,)
        error.message, error.cause = text, cause
        error.hint = _STEP_FAILED_HINT
        error.remedy = error.remedy or _remedy_of(exc)
        error.task_id, error.step_id = state.task_id, step.step_id
        # The failure keeps its class's code (what the HTTP faces answer); why it failed is
        # the cause's code, which the step records too.
        error.code = type(error).default_code if isinstance(error, ConflictError) else "step_failed"
        error.params = why
        where = why["cause_params"].get("traceback")
        if where:  # The terminal shows the user's frames too, not only the app.
            number = len(state.completed) + 1  # The number it would have had.
            logger.warning(
                "step %d of task %s failed in your code:\n%s",
                number,
                short_id(state.task_id),
                where.rstrip(),
            )
        for _ in range(_FAIL_COMMIT_TRIES):
            try:
                holder = self._record_failure(message, why["cause_code"], why["cause_params"])
            except ConflictError:
                continue  # Another tab committed meanwhile: reload and record it again.
            if holder and isinstance(exc, ConflictError):
                logger.warning(
                    "step %s of task %s: this run's result is dropped, %s",
                    step.step_id,
                    short_id(state.task_id),
                    holder,
                )
            break
        return error

    def _record_failure(self, message: str, code: str, params: dict[str, Any]) -> str | None:
        """Record the step failed; when another runner settled or holds it, say so instead."""
        runner, task_id, ran = self.runner, self.state.task_id, self.step
        with runner._lock(task_id), judged_by(lambda: _store_time(runner)):
            state = runner._task_state(task_id)  # Reloads if a refused commit dropped it.
            step = state.steps.get(ran.step_id)
            if step is None or ran.step_id not in state.queue:
                return "another runner settled the step"  # Leave its record alone.
            holder = claim_owner(step.claimed_by)
            if holder not in (None, runner._owner) and not is_claimable(step):
                return f"{holder} runs the step now"  # A live run holds it: leave it alone.
            if step is not ran:  # Reloaded: our claim may never have reached the store.
                step.input, step.proposed_input, step.edited = (
                    ran.input,
                    ran.proposed_input,
                    ran.edited,
                )
                step.attempts, step.started_at = ran.attempts, ran.started_at
            step.status = StepStatus.FAILED
            step.error, step.error_code, step.error_params = message, code, params
            step.claimed_by = None
            step.finished_at = utcnow()
            if state.task.status is TaskStatus.ACTIVE:
                state.task.status = TaskStatus.FAILED
            change = TaskChange(state=state, base_version=state.version, steps=[step])
            runner._commit(state, change)
        return None

    def _release(self) -> None:
        runner, state, step = self.runner, self.state, self.step
        with runner._lock(state.task_id):
            if state.task_id not in runner.state.task_dict:
                return
            step.status = StepStatus.UPCOMING
            step.claimed_by = None
            runner._commit(state, TaskChange(state=state, base_version=state.version, steps=[step]))


def _store_time(runner: StepHost) -> float:
    """The runner's store's clock (`store_now`), which claims' leases are judged by."""
    return store_now(getattr(runner, "store", None))  # `StepHost` does not name the store.


def _cause_of(exc: BaseException) -> dict[str, Any]:
    """What failed a step, as the failure's params (see `StepError`).

    The code, params and message (without the hint) of `exc`, or of the failure it wraps.
    An exception that is not the runtime's (a bug in a worker) is "error", with its type and,
    when code outside the runtime raised it, that code's `traceback`.
    """
    if isinstance(exc, StepError) and "cause_code" in exc.params:  # A sub-task's failure.
        params = cast(dict[str, Any], exc.params.get("cause_params") or {})
        code, message = str(exc.params["cause_code"]), str(exc.params.get("cause_message", ""))
    elif isinstance(exc, AgentCoreError):
        code, params, message = exc.code, exc.params, exc.message
    else:
        code, params = "error", {"exception": type(exc).__name__}
        message = f"{type(exc).__name__}: {exc}"
        where = foreign_traceback(exc)
        if where:  # The user's worker or a framework raised it: record where, as they read it.
            params["traceback"] = where
    message = message.encode("utf-8", "replace").decode("utf-8")  # As the step's error.
    return {"cause_code": code, "cause_params": dict(params), "cause_message": message}


def _remedy_of(exc: BaseException) -> Remedy:
    """How a person fixes a step that failed with `exc`: the cause's own remedy, else edit it."""
    remedy = exc.remedy if isinstance(exc, AgentCoreError) else None
    return remedy or "edit_step"
