"""A planner sub-agent's task, carried across the outer task's steps.

A delegate step runs its sub-agent in a private runner. When the sub-agent proposes a tool
call that must wait (its worker asks for approval, or a `run_until` breakpoint holds it), the
delegate step cannot wait inside itself: the outer task must stop where a person sees the
call. So the delegate step pauses: it saves the sub-task into the outer task's state and
queues an outer `tool` step holding the proposed call (approved, edited or rejected like any
other) and a continuation of itself that waits for it. The tool step runs the call in the
restored sub-task; the continuation drives the sub-agent on. The sub-task lives in the outer
task's `extra_state`, so undoing any of these steps restores it exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_core.runtime.fork import new_task_change
from agent_core.runtime.worker_state import dump_state
from agent_core.types import StepKind, Task, TaskState, TaskStep
from agent_core.workers.base import BaseAgentWorker

if TYPE_CHECKING:
    from agent_core.runtime.runner import AgentRunner

__all__ = ["SubTask", "sub_task_key", "waits_for_a_person"]


def sub_task_key(item_id: str) -> str:
    """The outer task's `extra_state` key holding plan item `item_id`'s paused sub-task."""
    return f"sub:{item_id}"


def waits_for_a_person(step: TaskStep) -> bool:
    """A proposed tool call that must not run before a person sees it."""
    return step.kind is StepKind.TOOL and (step.needs_approval or bool(step.step_state.get("held")))


@dataclass(frozen=True)
class SubTask:
    """A sub-agent's task in a private runner of its own."""

    runner: AgentRunner
    task_id: str

    @classmethod
    def start(cls, worker: BaseAgentWorker, text: str) -> SubTask:
        """A new sub-task asking `worker` for `text`."""
        runner = _private_runner(worker)
        return cls(runner, runner.create_task(text).task_id)

    @classmethod
    def resume(cls, worker: BaseAgentWorker, task: Task, item_id: str) -> SubTask | None:
        """The sub-task a paused delegate step of `item_id` saved in `task`, if any."""
        data: Any = task.extra_state.get(sub_task_key(item_id))
        if not data:
            return None
        state = TaskState.model_validate(data)
        state.set_extra_state_json(
            dump_state(state.task.extra_state, task_id=state.task_id, step_id="")
        )
        runner = _private_runner(worker)
        runner.store.commit(new_task_change(state))
        return cls(runner, state.task_id)

    def save(self, task: Task, item_id: str) -> None:
        """Keep the sub-task in `task`'s state, to resume at the outer task's next step."""
        state = self.runner.get_task_state(self.task_id)
        task.extra_state[sub_task_key(item_id)] = state.model_dump(mode="json")

    @staticmethod
    def forget(task: Task, item_id: str) -> None:
        """Drop a finished sub-task from `task`'s state (None: parallel merges keep keys)."""
        if sub_task_key(item_id) in task.extra_state:
            task.extra_state[sub_task_key(item_id)] = None

    @property
    def state(self) -> TaskState:
        """The sub-task's state."""
        return self.runner.get_task_state(self.task_id)

    def next_step(self) -> TaskStep | None:
        """The sub-task's first ready step, if any."""
        state = self.state
        return next((s for s in state.step_queue if state.is_ready(s)), None)


def _private_runner(worker: BaseAgentWorker) -> AgentRunner:
    from agent_core.runtime.runner import AgentRunner  # The runner imports the workers package.

    return AgentRunner(worker, conversation_id=None)
