"""`BaseAgentWorker`: the step logic of an agent, with no task state of its own.

A worker turns one `TaskStep` into a `TaskStepOutput` (and the steps that follow). The runner
owns everything else: queues, status, snapshots, storage, undo. The `task` a worker receives
is a per-step view: writes to `task.memory` and `task.extra_state` are committed by the runner
only if the step succeeds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from agent_core.events import StepCompletedEvent, StepEvent
from agent_core.llms.base import ChatMessage
from agent_core.runtime.contracts import new_messages
from agent_core.runtime.loop import iterate_sync, run_sync
from agent_core.runtime.streaming import Finished, relay_events
from agent_core.types import Task, TaskStep, TaskStepOutput

if TYPE_CHECKING:
    from agent_core.runtime.runner import AgentRunner

__all__ = ["BaseAgentWorker"]


class BaseAgentWorker(ABC):
    """Base of every worker; subclasses implement `initialize_step` and `arun_step`.

    It is an `agent_core.runtime.contracts.AgentWorker`, all the runner asks of a worker.
    """

    @property
    def own_model(self) -> str | None:
        """The model this worker brings itself, named for a person, else None.

        None: it runs on the model it was built with (the spec's). A framework's agent keeps
        its own model, which the faces show instead of the spec's.
        """
        return None

    @property
    def keeps_own_conversation(self) -> str | None:
        """Why this worker does not read `Task.memory`, else None (it does).

        A framework's agent keeps its conversation in its own state, so Stepwise cannot
        start it from a finished task's conversation or edit what the model reads next.
        """
        return None

    @property
    def cannot_sample(self) -> str | None:
        """Why a model step of this worker cannot be sampled (`AgentRunner.sample_step`).

        None: its model calls go through `agent_core.workers._chat.step_chat`, so a sample
        can send the step's request again without running the step. A worker that calls its
        model in code of its own cannot be stopped at the call.
        """
        return (
            "this agent calls its model in code of its own, so Stepwise cannot send the step's "
            "request again without running the whole step"
        )

    @abstractmethod
    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The task's first step (called once, when the task is created)."""

    @abstractmethod
    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run one step. `kwargs` may hold `emit`, an `EventSink` for streaming events."""

    def run_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Sync twin of `arun_step` (outside a running event loop only)."""
        return run_sync(self.arun_step(step, task, **kwargs), name="run_step")

    async def astream_step(
        self, step: TaskStep, task: Task, **kwargs: Any
    ) -> AsyncIterator[StepEvent]:
        """Run one step, yielding its events; the last is `StepCompletedEvent`."""
        async for item in relay_events(
            lambda emit: self.arun_step(step, task, emit=emit, **kwargs)
        ):
            if isinstance(item, Finished):
                yield StepCompletedEvent(step_id=step.step_id, output=item.result)
            else:
                yield item

    def stream_step(self, step: TaskStep, task: Task, **kwargs: Any) -> Iterator[StepEvent]:
        """Sync twin of `astream_step`."""
        return iterate_sync(self.astream_step(step, task, **kwargs), name="stream_step")

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The messages this finished task adds to the runner's shared conversation.

        LlamaIndex's `finalize_task` merged memory itself; here the runner does the merge, so
        that storage and undo stay in one place. The default keeps every new message.
        """
        return new_messages(task)

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The messages the model would be sent if the next step ran now."""
        return task.memory.get()

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """The messages `step` would send to the model if it ran now; [] if it calls none.

        `task` is a view whose memory and state may be written: nothing is kept. Override it
        with the code your step runs, so that the preview cannot drift from the run.
        """
        return self.preview_messages(task)

    def as_agent(self, **kwargs: Any) -> AgentRunner:
        """An `AgentRunner` driving this worker (`kwargs` go to the runner)."""
        from agent_core.runtime.runner import AgentRunner

        return AgentRunner(self, **kwargs)
