"""`FunctionCallingAgentWorker`: an agent on the model's native tool calls.

A reasoning (`llm`) step sends the memory and the tools' specs to the model and records its
reply exactly as returned. A reply without tool calls is the answer. A reply with tool calls
fans out: each call becomes its own `tool` step (so `ParallelAgentRunner` runs them together,
and with `tool_approval=True` a person approves, edits or rejects each one), and the next
reasoning step waits on all of them (`depends_on`), fanning back in.

A tool step puts one `tool` message, answering its call id, into memory. Providers want every
call answered right after the assistant message that made it; tool steps commit in completion
order and a person may add feedback while calls wait for approval, so the request puts each
call's result back right after its call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_core._tokens import estimate_tokens
from agent_core.events import EventSink
from agent_core.llms.base import LLM, ChatMessage, ToolCall, ToolSpec
from agent_core.tools.base import BaseTool
from agent_core.types import StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers._tool_steps import (
    call_step,
    edit_note,
    queues_call,
    run_tool_step_call,
    tool_call_of,
    tool_step_input,
)
from agent_core.workers._tool_worker import DEFAULT_MAX_ITERATIONS, ToolCallingWorker

__all__ = ["MAX_CALLS_PER_REPLY", "FunctionCallingAgentWorker"]

MAX_CALLS_PER_REPLY = 32
"""Tool calls of one reply that become steps; the model is told the rest did not run."""
_TOO_MANY = (
    f"Error: this call did not run: one reply may make at most {MAX_CALLS_PER_REPLY} tool "
    "calls. Make the remaining calls in your next reply."
)


class FunctionCallingAgentWorker(ToolCallingWorker):
    """An agent over an `LLM` with native tool calling (OpenAI `tools`, Anthropic `tool_use`).

    Args:
        tools: The tools the model may call (names must be unique).
        llm: The model.
        tool_approval: Make every tool step wait for a person's approval.
        max_iterations: Reasoning steps allowed before the task fails with a clear error.
        system_prompt: A system message sent before the conversation, if given.
    """

    _worker_name = "FunctionCallingAgentWorker"

    def __init__(
        self,
        tools: Sequence[BaseTool],
        llm: LLM,
        *,
        tool_approval: bool = False,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        system_prompt: str | None = None,
    ) -> None:
        super().__init__(tools, llm, max_iterations=max_iterations, tool_approval=tool_approval)
        self._system = (
            None if system_prompt is None else ChatMessage(role="system", content=system_prompt)
        )
        self._specs: list[ToolSpec] = [tool.metadata.to_spec() for tool in tools]

    @classmethod
    def from_tools(
        cls,
        tools: Sequence[BaseTool] | None = None,
        llm: LLM | None = None,
        *,
        tool_approval: bool = False,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        system_prompt: str | None = None,
    ) -> FunctionCallingAgentWorker:
        """Build the worker from tools and a model, as in LlamaIndex."""
        llm = cls._from_tools_llm(llm)
        return cls(
            list(tools or []),
            llm,
            tool_approval=tool_approval,
            max_iterations=max_iterations,
            system_prompt=system_prompt,
        )

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The system prompt and the memory the next reasoning step would send."""
        if self._system is None:
            return _results_after_calls(task.memory.get())
        used = estimate_tokens(self._system.content)
        return [self._system, *_results_after_calls(task.memory.get(used))]

    async def _run_reasoning_step(
        self, step: TaskStep, task: Task, emit: EventSink | None, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        self._start_reasoning(step, task)
        response = await self._chat(self.preview_messages(task), step, emit, tools=self._specs)
        task.memory.put(response.message)
        calls = response.tool_calls
        if not calls:
            return TaskStepOutput(
                output=response.text, task_step=step, is_last=True, usage=response.usage
            )
        calls, extra = calls[:MAX_CALLS_PER_REPLY], calls[MAX_CALLS_PER_REPLY:]
        for call in extra:  # Providers want every call answered: say why these did not run.
            task.memory.put(
                ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=_TOO_MANY)
            )
        tool_steps = [
            call_step(
                step,
                call.name,
                call.args,
                call.id,
                approval=self.tool_approval,
            )
            if queues_call(call.name, approval=self.tool_approval, kwargs=kwargs)
            else step.get_next_step(
                kind=StepKind.TOOL, input=tool_step_input(call.name, call.args, call.id)
            )
            for call in calls
        ]
        # The next reasoning step follows this one and waits on every call: undoing this step
        # drops it with the calls, and undoing one call re-points it at the call's re-run.
        follow_up = step.get_next_step(depends_on=[s.step_id for s in tool_steps])
        return TaskStepOutput(
            output=response.text or _describe(calls),
            task_step=step,
            next_steps=[*tool_steps, follow_up],
            thought=response.text or None,
            usage=response.usage,
        )

    async def _run_tool_step(
        self, step: TaskStep, task: Task, emit: EventSink | None
    ) -> TaskStepOutput:
        call = tool_call_of(step)
        result = await run_tool_step_call(call, self.tools, step_id=step.step_id, emit=emit)
        content = edit_note(step, call) + result.content
        task.memory.put(
            ChatMessage(role="tool", tool_call_id=call.call_id, name=call.tool, content=content)
        )
        return TaskStepOutput(output=content, task_step=step, tool_calls=[result])


def _describe(calls: Sequence[ToolCall]) -> str:
    # A reply made only of calls has no text; this is what the step shows instead.
    return "\n".join(f"{call.name}({json.dumps(call.args)})" for call in calls)


def _results_after_calls(messages: list[ChatMessage]) -> list[ChatMessage]:
    """`messages` with each tool result moved up to just after the assistant call it answers.

    Only results found before the next assistant message are moved, so call ids a model reuses
    across turns still pair with the right call.
    """
    ordered: list[ChatMessage] = []
    moved: set[int] = set()
    for index, message in enumerate(messages):
        if index in moved:
            continue
        ordered.append(message)
        if message.role != "assistant" or not message.tool_calls:
            continue
        waiting = [call.id for call in message.tool_calls]
        for later in range(index + 1, len(messages)):
            result = messages[later]
            if result.role == "assistant":
                break
            if result.role == "tool" and result.tool_call_id in waiting:
                waiting.remove(result.tool_call_id)
                ordered.append(result)
                moved.add(later)
    return ordered
