"""What the core loop needs of the code around it, as protocols, so it imports none of it.

`AgentWorker` is all the runner asks of a worker (`agent_core.workers.BaseAgentWorker` is
one; any object with these methods is one too): the runtime sits below the workers and never
imports them. `StepHost` is what one step's transaction (`transaction.py`) needs of the runner
that claimed it, so that the transaction need not import the runner that imports it.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from agent_core.llms.base import ChatMessage
from agent_core.store.base import TaskChange
from agent_core.types import AgentState, Task, TaskState, TaskStep, TaskStepOutput

__all__ = ["AgentWorker", "StepHost", "new_messages"]


class AgentWorker(Protocol):
    """The step logic of an agent: turns one `TaskStep` into a `TaskStepOutput`.

    A worker holds no task state: the `task` it is handed is a per-step view, committed by
    the runner only if the step succeeds.
    """

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The task's first step (called once, when the task is created)."""
        ...

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run one step. `kwargs` may hold `emit`, an `EventSink` for streaming events."""
        ...

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage] | None:
        """The messages the finished task adds to the conversation; None: `new_messages`."""
        ...

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The messages the model would be sent if the next step ran now."""
        ...

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """The messages `step` would send to the model if it ran now; [] if it calls none."""
        ...


def new_messages(task: Task) -> list[ChatMessage]:
    """The messages a task added to its memory: what finalizing it keeps by default."""
    return task.memory.get_all()[task.history_length :]


class StepHost(Protocol):
    """The runner, as one claimed step's transaction sees it.

    These are the runner's own internals (a per-task lock, its claim owner, the commit that
    drops a refused in-memory copy), shared within the runtime package only.
    """

    agent_worker: AgentWorker
    state: AgentState
    _owner: str

    def _lock(self, task_id: str) -> threading.RLock:
        """The lock every change to the task's in-memory state is made under."""
        ...

    def _task_state(self, task_id: str) -> TaskState:
        """The task's state, reloaded from the store when another runner moved it on."""
        ...

    def _commit(self, state: TaskState, change: TaskChange) -> None:
        """Write `change` to the store; on refusal drop the in-memory copy and raise."""
        ...
