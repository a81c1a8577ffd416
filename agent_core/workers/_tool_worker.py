"""`ToolCallingWorker`: what the ReAct and function-calling workers share.

Both hold their tools by unique name, a model, an iteration bound and the approval switch, and
both run two kinds of step: reasoning (`llm`) steps, which ask the model what to do next, and
`tool` steps, which run one call. A subclass says how each kind of step runs.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from agent_core.errors import StepError, UserError
from agent_core.events import EventSink
from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ToolChoice, ToolSpec
from agent_core.runtime.limits import iteration_limit
from agent_core.tools.base import BaseTool
from agent_core.types import StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers._chat import step_chat
from agent_core.workers.base import BaseAgentWorker

__all__ = ["DEFAULT_MAX_ITERATIONS", "ToolCallingWorker"]

DEFAULT_MAX_ITERATIONS = 10


class ToolCallingWorker(BaseAgentWorker):
    """Base of the workers that reason with a model and call tools.

    It holds `tools` (by unique name), `llm`, `max_iterations` and `tool_approval`, as the
    subclasses' constructors document them.
    """

    # The public class the error messages name, so a user's subclass still reads as the
    # worker it is built on.
    _worker_name: ClassVar[str]

    def __init__(
        self,
        tools: Sequence[BaseTool],
        llm: LLM,
        *,
        max_iterations: int,
        tool_approval: bool,
    ) -> None:
        if llm is None:
            raise UserError(f"{self._worker_name} needs an llm, e.g. llm=ScriptedLLM([...])")
        self.tools = {tool.name: tool for tool in tools}
        if len(self.tools) != len(tools):
            names = [tool.name for tool in tools]
            duplicates = sorted({n for n in names if names.count(n) > 1})
            raise UserError(f"tool names must be unique; repeated: {duplicates}")
        self.llm = llm
        self.max_iterations = max_iterations
        self.tool_approval = tool_approval

    @classmethod
    def _from_tools_llm(cls, llm: LLM | None) -> LLM:
        """`llm`, checked for `from_tools`, which takes it as an optional keyword."""
        if llm is None:
            raise UserError(f"{cls._worker_name}.from_tools needs llm=..., e.g. ScriptedLLM([...])")
        return llm

    @property
    def cannot_sample(self) -> str | None:
        """None: a reasoning step makes its one model call through `step_chat`."""
        return None

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The first reasoning step; its input is the task's question."""
        return TaskStep(task_id=task.task_id, input=task.input, kind=StepKind.LLM)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run a reasoning step, or a `tool` step's call."""
        emit: EventSink | None = kwargs.get("emit")
        if step.kind is StepKind.TOOL:
            return await self._run_tool_step(step, task, emit)
        return await self._run_reasoning_step(step, task, emit, kwargs)

    @abstractmethod
    async def _run_reasoning_step(
        self, step: TaskStep, task: Task, emit: EventSink | None, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        """Ask the model what to do next; answer, or queue or run its tool calls.

        `kwargs` are `arun_step`'s; with `HOLD_TOOL` (`agent_core.runtime.breakpoints`) among them,
        matching calls wait as their own steps.
        """

    @abstractmethod
    async def _run_tool_step(
        self, step: TaskStep, task: Task, emit: EventSink | None
    ) -> TaskStepOutput:
        """Run the call a `tool` step holds and put its result where the model will read it."""

    def _start_reasoning(self, step: TaskStep, task: Task) -> None:
        """Count a reasoning step against `max_iterations` and put its input into memory."""
        iterations = int(task.extra_state.get("iterations", 0))
        limit = iteration_limit(task.limits, self.max_iterations)
        if iterations >= limit:
            raise StepError(
                f"the agent reached max_iterations={limit} without an answer; raise the task's "
                "limit (set_limits(task_id, max_iterations=...)) and run the step again, or "
                "undo and steer it",
                remedy="raise_limits",
                code="max_iterations",
                params={"limit": limit},
            )
        self._put_input(step, task)
        task.extra_state["iterations"] = iterations + 1

    @staticmethod
    def _put_input(step: TaskStep, task: Task) -> None:
        """A reasoning step's input joins memory as the user's message, before the call."""
        if step.input is not None:
            if not isinstance(step.input, str):
                raise UserError("a reasoning step's input must be text (or empty)")
            task.memory.put(ChatMessage(role="user", content=step.input))

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """What a reasoning step would send; a tool step calls no model."""
        if step.kind is StepKind.TOOL:
            return []
        self._put_input(step, task)
        return self.preview_messages(task)

    async def _chat(
        self,
        messages: list[ChatMessage],
        step: TaskStep,
        emit: EventSink | None,
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> ChatResponse:
        """The model's reply, streamed as token deltas when there is an `emit` to stream to."""
        return await step_chat(self.llm, messages, step, emit, tools=tools, tool_choice=tool_choice)
