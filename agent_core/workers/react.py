"""`ReActAgentWorker`: reason and act in the text format any chat model can follow.

Each reasoning step sends the system prompt plus the task's memory, records the model's reply
in memory, and either answers (the last step) or calls a tool. The tool's result goes back
into memory as `Observation: ...`, so what the UI shows is exactly what the model saw.

With `tool_approval=True`, a tool call is not run inside the reasoning step: it becomes the
next step, a `tool` step whose input is the call (`{"tool": ..., "args": {...}}`), for a
person to approve (run), edit, or reject with a message the model then reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_core._tokens import estimate_tokens
from agent_core.events import EventSink
from agent_core.llms.base import LLM, ChatMessage, ChatResponse
from agent_core.tools.base import BaseTool
from agent_core.types import Task, TaskStep, TaskStepOutput, ToolOutput
from agent_core.workers._react_format import (
    ReActAnswer,
    ReActParseError,
    parse_react_output,
    system_prompt,
)
from agent_core.workers._tool_steps import (
    ToolStepCall,
    call_step,
    call_tool,
    edit_note,
    queues_call,
    run_tool_step_call,
    tool_call_of,
    unknown_tool_output,
)
from agent_core.workers._tool_worker import DEFAULT_MAX_ITERATIONS, ToolCallingWorker

__all__ = ["ReActAgentWorker"]


class ReActAgentWorker(ToolCallingWorker):
    """A ReAct agent over any `LLM`.

    Args:
        tools: The tools the model may call (names must be unique).
        llm: The model.
        max_iterations: Reasoning steps allowed before the task fails with a clear error.
        tool_approval: Make every tool call its own step, awaiting a person's approval.
        instructions: Replaces the first paragraph of the system prompt.
    """

    _worker_name = "ReActAgentWorker"

    def __init__(
        self,
        tools: Sequence[BaseTool],
        llm: LLM,
        *,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        tool_approval: bool = False,
        instructions: str = "",
    ) -> None:
        super().__init__(tools, llm, max_iterations=max_iterations, tool_approval=tool_approval)
        self._system = ChatMessage(
            role="system",
            content=system_prompt(
                [tool.metadata.to_spec() for tool in tools], instructions=instructions
            ),
        )

    @classmethod
    def from_tools(
        cls,
        tools: Sequence[BaseTool] | None = None,
        llm: LLM | None = None,
        *,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        tool_approval: bool = False,
        instructions: str = "",
    ) -> ReActAgentWorker:
        """Build the worker from tools and a model, as in LlamaIndex."""
        llm = cls._from_tools_llm(llm)
        return cls(
            list(tools or []),
            llm,
            max_iterations=max_iterations,
            tool_approval=tool_approval,
            instructions=instructions,
        )

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The system prompt and the memory the next reasoning step would send."""
        return [self._system, *task.memory.get(estimate_tokens(self._system.content))]

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question and the final answer join the conversation; the reasoning does not."""
        replies = [m for m in task.memory.get_all() if m.role == "assistant"]
        answer = parse_react_output(replies[-1].content) if replies else None
        text = answer.answer if isinstance(answer, ReActAnswer) else ""
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=text),
        ]

    async def _run_reasoning_step(
        self, step: TaskStep, task: Task, emit: EventSink | None, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        self._start_reasoning(step, task)
        response = await self._chat(self.preview_messages(task), step, emit)
        task.memory.put(ChatMessage(role="assistant", content=response.text))
        try:
            parsed = parse_react_output(response.text)
        except ReActParseError as exc:
            return self._observe(step, task, response, f"Error: {exc}", calls=[])
        if isinstance(parsed, ReActAnswer):
            return TaskStepOutput(
                output=parsed.answer,
                task_step=step,
                is_last=True,
                thought=parsed.thought,
                usage=response.usage,
            )
        tool = self.tools.get(parsed.tool)
        if tool is None:
            error = unknown_tool_output(ToolStepCall(parsed.tool, parsed.args), self.tools)
            return self._observe(
                step, task, response, error.content, calls=[error], thought=parsed.thought
            )
        if queues_call(parsed.tool, approval=self.tool_approval, kwargs=kwargs):
            proposed = call_step(step, parsed.tool, parsed.args, approval=self.tool_approval)
            return TaskStepOutput(
                output=response.text,
                task_step=step,
                next_steps=[proposed],
                thought=parsed.thought,
                usage=response.usage,
            )
        result = await call_tool(tool, parsed.args, step_id=step.step_id, emit=emit)
        return self._observe(
            step, task, response, result.content, calls=[result], thought=parsed.thought
        )

    def _observe(
        self,
        step: TaskStep,
        task: Task,
        response: ChatResponse,
        observation: str,
        *,
        calls: list[ToolOutput],
        thought: str | None = None,
    ) -> TaskStepOutput:
        task.memory.put(ChatMessage(role="user", content=f"Observation: {observation}"))
        return TaskStepOutput(
            output=response.text,
            task_step=step,
            next_steps=[step.get_next_step()],
            thought=thought,
            tool_calls=calls,
            usage=response.usage,
        )

    async def _run_tool_step(
        self, step: TaskStep, task: Task, emit: EventSink | None
    ) -> TaskStepOutput:
        call = tool_call_of(step)
        result = await run_tool_step_call(call, self.tools, step_id=step.step_id, emit=emit)
        note = edit_note(step, call)
        task.memory.put(ChatMessage(role="user", content=f"Observation: {note}{result.content}"))
        return TaskStepOutput(
            output=result.content,
            task_step=step,
            next_steps=[step.get_next_step()],
            tool_calls=[result],
        )
