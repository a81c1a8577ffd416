"""ParallelAgentRunner: ready steps run together, dependencies are honoured, input= works."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agent_core import ParallelAgentRunner, StepKind, StepStatus, Task, TaskStep, TaskStepOutput
from agent_core.errors import NotReadyError, StepError, UserError
from agent_core.workers import BaseAgentWorker


class FanOutWorker(BaseAgentWorker):
    """A `plan` step queues N `delegate` steps that each sleep, and a join that waits for all."""

    def __init__(self, width: int = 4, delay: float = 0.2, fail: set[int] | None = None) -> None:
        self.width, self.delay, self.fail = width, delay, fail or set()
        self.in_flight = 0
        self.peak = 0
        self.spans: list[tuple[float, float]] = []
        self.inputs: list[Any] = []

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        return TaskStep(task_id=task.task_id, input=task.input, kind=StepKind.PLAN)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        if step.kind is StepKind.PLAN:
            items = [
                step.get_next_step(kind=StepKind.DELEGATE, input=f"item {i}")
                for i in range(self.width)
            ]
            join = step.get_next_step(kind=StepKind.FINALIZE, depends_on=[s.step_id for s in items])
            return TaskStepOutput(output="plan", task_step=step, next_steps=[*items, join])
        if step.kind is StepKind.DELEGATE:
            return await self._delegate(step, task)
        return TaskStepOutput(output=sorted(task.extra_state), task_step=step, is_last=True)

    async def _delegate(self, step: TaskStep, task: Task) -> TaskStepOutput:
        self.inputs.append(step.input)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        start = time.perf_counter()
        await asyncio.sleep(self.delay)
        self.in_flight -= 1
        self.spans.append((start, time.perf_counter()))
        if step.input in {f"item {i}" for i in self.fail}:
            raise RuntimeError(f"{step.input} broke")
        task.extra_state[str(step.input)] = True
        task.memory.put_messages([])
        return TaskStepOutput(output=f"done {step.input}", task_step=step)


def test_four_independent_steps_of_0_2_s_finish_together():
    worker = FanOutWorker(width=4, delay=0.2)
    agent = ParallelAgentRunner(worker)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    started = time.perf_counter()
    outputs = agent.run_steps_in_queue(task.task_id)
    elapsed = time.perf_counter() - started
    assert [o.output for o in outputs] == [f"done item {i}" for i in range(4)]
    # Every step started before any finished: they truly overlapped.
    assert max(s for s, _ in worker.spans) < min(e for _, e in worker.spans)
    assert elapsed < 0.8  # One at a time would take at least 0.8 s.
    # Each step's writes to worker state were merged, none lost.
    assert len(agent.get_task(task.task_id).extra_state) == 4


def test_max_concurrency_bounds_steps_in_flight():
    worker = FanOutWorker(width=6, delay=0.05)
    agent = ParallelAgentRunner(worker, max_concurrency=2)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    agent.run_steps_in_queue(task.task_id)
    assert worker.peak == 2


def test_a_step_waits_for_everything_it_depends_on():
    worker = FanOutWorker(width=3, delay=0.01)
    agent = ParallelAgentRunner(worker)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    join = agent.get_upcoming_steps(task.task_id)[-1]
    with pytest.raises(NotReadyError, match="waits for steps"):
        agent.run_step(task.task_id, step_id=join.step_id)
    first_wave = agent.run_steps_in_queue(task.task_id)
    assert len(first_wave) == 3 and all(o.task_step.kind is StepKind.DELEGATE for o in first_wave)
    (final,) = agent.run_steps_in_queue(task.task_id)
    assert final.is_last and final.output == ["item 0", "item 1", "item 2"]


def test_run_step_honours_input_in_the_parallel_runner():
    worker = FanOutWorker(width=2, delay=0.0)
    agent = ParallelAgentRunner(worker)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    out = agent.run_step(task.task_id, input="item 9")
    assert worker.inputs == ["item 9"]
    assert out.task_step.proposed_input == "item 0" and out.task_step.edited


def test_one_failure_keeps_the_others_and_names_itself():
    worker = FanOutWorker(width=3, delay=0.01, fail={1})
    agent = ParallelAgentRunner(worker)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    with pytest.raises(StepError, match=r"1 of 3 steps failed .*item 1 broke"):
        agent.run_steps_in_queue(task.task_id)
    statuses = sorted(
        s.status.value for s in agent.get_steps(task.task_id) if s.kind is StepKind.DELEGATE
    )
    assert statuses == ["completed", "completed", "failed"]
    assert len(agent.get_task(task.task_id).extra_state) == 2
    worker.fail.clear()
    (retried,) = agent.run_steps_in_queue(task.task_id)
    assert retried.task_step.status is StepStatus.COMPLETED and retried.task_step.attempts == 2


def test_undo_of_one_parallel_step_restores_only_its_writes():
    worker = FanOutWorker(width=3, delay=0.0)
    agent = ParallelAgentRunner(worker)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    agent.run_steps_in_queue(task.task_id)
    last = agent.get_completed_steps(task.task_id)[-1].task_step
    agent.undo_step(task.task_id)
    state = agent.get_task(task.task_id).extra_state
    assert str(last.input) not in state and len(state) == 2
    # The undone step is next again, ahead of the join that waits for it.
    upcoming = agent.get_upcoming_steps(task.task_id)
    assert [s.kind for s in upcoming] == [StepKind.DELEGATE, StepKind.FINALIZE]
    assert upcoming[0].input == last.input and upcoming[0].step_id in upcoming[1].depends_on


def test_a_skipped_step_never_runs_and_lets_its_dependents_go_on():
    worker = FanOutWorker(width=2, delay=0.0)
    agent = ParallelAgentRunner(worker)
    task = agent.create_task("fan out")
    agent.run_step(task.task_id)
    first = agent.get_upcoming_steps(task.task_id)[0]
    skipped = agent.skip_step(task.task_id, first.step_id)
    assert skipped.status is StepStatus.SKIPPED
    agent.run_steps_in_queue(task.task_id)
    (final,) = agent.run_steps_in_queue(task.task_id)
    assert worker.inputs == ["item 1"] and final.output == ["item 1"]
    with pytest.raises(UserError, match="only upcoming or failed"):
        agent.skip_step(task.task_id, first.step_id)
