"""`CustomSimpleAgentWorker`: write an agent's logic as one method; the runtime does the rest.

Subclass it and implement `_run_step` (or `_arun_step`): given your state dict, the task and
this step's input, return the reply and whether the task is done. Your state lives in
`task.extra_state["state"]`, so it is stored, snapshotted and undone like any worker's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from agent_core.llms.base import LLM, ChatMessage
from agent_core.tools.base import BaseTool
from agent_core.types import StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers.base import BaseAgentWorker

__all__ = ["CustomSimpleAgentWorker"]

_STATE_KEY = "state"
_LAST_REPLY_KEY = "last_reply"


class CustomSimpleAgentWorker(BaseAgentWorker):
    """Base for users' own agent logic, as LlamaIndex's class of the same name.

    Args:
        tools: Tools your logic may call (`self.tools[name]`).
        llm: A model your logic may call (`self.llm`).
    """

    def __init__(self, tools: Sequence[BaseTool] = (), llm: LLM | None = None) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.llm = llm

    @classmethod
    def from_tools(
        cls, tools: Sequence[BaseTool] | None = None, llm: LLM | None = None, **kwargs: Any
    ) -> CustomSimpleAgentWorker:
        """Build the worker; extra keyword arguments go to the subclass's constructor."""
        return cls(tools=list(tools or []), llm=llm, **kwargs)

    def _initialize_state(self, task: Task, **kwargs: Any) -> dict[str, Any]:
        """The state your logic starts a task with (JSON-serialisable)."""
        return {}

    def _run_step(
        self,
        state: dict[str, Any],
        task: Task,
        input: str | None,
    ) -> tuple[str, bool]:
        """One step of your logic: return (reply, is_done). Mutate `state` freely."""
        raise NotImplementedError(f"{type(self).__name__} must implement _run_step or _arun_step")

    async def _arun_step(
        self,
        state: dict[str, Any],
        task: Task,
        input: str | None,
    ) -> tuple[str, bool]:
        """Async version of `_run_step`; by default runs `_run_step` in a worker thread."""
        return await asyncio.to_thread(self._run_step, state, task, input)

    def _finalize_task(self, state: dict[str, Any], task: Task) -> None:
        """Called once when the task is finalized."""

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """Set up your state and queue the first step with the task's input."""
        task.extra_state[_STATE_KEY] = self._initialize_state(task, **kwargs)
        return TaskStep(task_id=task.task_id, input=task.input, kind=StepKind.CUSTOM)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run your logic once; queue another step unless it says it is done."""
        state = task.extra_state.setdefault(_STATE_KEY, {})
        text = step.input if isinstance(step.input, str) or step.input is None else str(step.input)
        reply, is_done = await self._arun_step(state, task, text)
        task.extra_state[_LAST_REPLY_KEY] = str(reply)
        return TaskStepOutput(
            output=str(reply),
            task_step=step,
            is_last=is_done,
            next_steps=[] if is_done else [step.get_next_step(kind=StepKind.CUSTOM)],
        )

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """Call your `_finalize_task`; the question and the last reply join the conversation."""
        self._finalize_task(task.extra_state.get(_STATE_KEY, {}), task)
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=task.extra_state.get(_LAST_REPLY_KEY, "")),
        ]
