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
from agent_core.types import StepKind, StepNote, Task, TaskStep, TaskStepOutput, ToolOutput
from agent_core.workers._tool_worker import DEFAULT_MAX_ITERATIONS, ToolCallingWorker
from agent_core.workers.tool_steps import (
    ToolStepCall,
    call_step,
    edit_note,
    queues_call,
    run_tool_step_call,
    tool_call_of,
    tool_step_input,
    unknown_tool_output,
)

__all__ = [
    "MAX_CALLS_PER_REPLY",
    "NO_TOOL_CALL",
    "FunctionCallingAgentWorker",
    "build_missing_tool_message",
    "build_missing_tool_output",
    "get_function_by_name",
]

NO_TOOL_CALL = "no_tool_call"
"""The `StepNote` code of a first step answered in prose although tools were offered."""

MAX_CALLS_PER_REPLY = 32
"""Tool calls of one reply that become steps; the model is told the rest did not run."""


def _too_many(limit: int) -> str:
    return (
        f"Error: this call did not run: one reply may make at most {limit} tool "
        f"call{'' if limit == 1 else 's'}. Make the remaining calls in your next reply."
    )


class FunctionCallingAgentWorker(ToolCallingWorker):
    """An agent over an `LLM` with native tool calling (OpenAI `tools`, Anthropic `tool_use`).

    Args:
        tools: The tools the model may call (names must be unique).
        llm: The model.
        tool_approval: Make every tool step wait for a person's approval.
        max_iterations: Reasoning steps allowed before the task fails with a clear error.
        system_prompt: A system message sent before the conversation, if given.
        prefix_messages: Messages sent before the conversation (after `system_prompt`).
        max_function_calls: LlamaIndex's bound; sets `max_iterations` when given.
        allow_parallel_tool_calls: False runs one call per reply; the model is told the
            others did not run, and makes them in its next reply.
        verbose: Accepted for LlamaIndex code; every step is recorded and shown instead.
    """

    _worker_name = "FunctionCallingAgentWorker"

    def __init__(
        self,
        tools: Sequence[BaseTool],
        llm: LLM,
        prefix_messages: Sequence[ChatMessage] | None = None,
        *,
        tool_approval: bool = False,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        system_prompt: str | None = None,
        max_function_calls: int | None = None,
        allow_parallel_tool_calls: bool = True,
        verbose: bool = False,
    ) -> None:
        if max_function_calls is not None:
            max_iterations = max_function_calls
        super().__init__(tools, llm, max_iterations=max_iterations, tool_approval=tool_approval)
        system = (
            [] if system_prompt is None else [ChatMessage(role="system", content=system_prompt)]
        )
        self._prefix = [*system, *(prefix_messages or [])]
        self._prefix_tokens = sum(estimate_tokens(m.content) for m in self._prefix)
        self._calls_per_reply = MAX_CALLS_PER_REPLY if allow_parallel_tool_calls else 1
        self.verbose = verbose
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
        **llamaindex_options: Any,
    ) -> FunctionCallingAgentWorker:
        """Build the worker from tools and a model, as in LlamaIndex.

        `llamaindex_options` are the constructor's LlamaIndex keywords (`prefix_messages`,
        `max_function_calls`, `allow_parallel_tool_calls`, `verbose`) and `callback_manager`,
        accepted and unused.
        """
        llm = cls._from_tools_llm(llm)
        llamaindex_options.pop("callback_manager", None)
        return cls(
            list(tools or []),
            llm,
            tool_approval=tool_approval,
            max_iterations=max_iterations,
            system_prompt=system_prompt,
            **llamaindex_options,
        )

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The system prompt, prefix messages and memory the next reasoning step would send."""
        history = _results_after_calls(task.memory.get(self._prefix_tokens))
        return [*self._prefix, *history] if self._prefix else history

    async def _run_reasoning_step(
        self, step: TaskStep, task: Task, emit: EventSink | None, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        self._start_reasoning(step, task)
        choice = kwargs.get("tool_choice")
        response = await self._chat(
            self.preview_messages(task), step, emit, tools=self._specs, tool_choice=choice
        )
        task.memory.put(response.message)
        calls = response.tool_calls
        if not calls:
            return TaskStepOutput(
                output=response.text,
                task_step=step,
                is_last=True,
                usage=response.usage,
                notes=self._prose_notes(task, choice),
            )
        calls, extra = calls[: self._calls_per_reply], calls[self._calls_per_reply :]
        for call in extra:  # Providers want every call answered: say why these did not run.
            task.memory.put(
                ChatMessage(
                    role="tool",
                    tool_call_id=call.id,
                    name=call.name,
                    content=_too_many(self._calls_per_reply),
                )
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

    def _prose_notes(self, task: Task, choice: Any) -> list[StepNote]:
        """A note when the model, offered tools on the task's first step, answered in prose.

        A server that ignores tools (llama.cpp's without `tool_choice`) or a model that cannot
        call them otherwise looks like an agent that answered by itself.
        """
        first = int(task.extra_state.get("iterations", 0)) == 1
        if not (first and self._specs) or choice == "none":
            return []
        return [
            StepNote(
                code=NO_TOOL_CALL,
                message="the model did not call a tool: it was offered "
                f"{', '.join(s.name for s in self._specs)} and answered in prose; check that "
                "the model and server support tool calls, or undo and ask again",
            )
        ]

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


def get_function_by_name(tools: Sequence[BaseTool], name: str) -> BaseTool | None:
    """The tool called `name`, or None (LlamaIndex's helper)."""
    return next((tool for tool in tools if tool.metadata.name == name), None)


def build_missing_tool_message(name: str, tools: Sequence[BaseTool] = ()) -> str:
    """What the model reads when it calls a tool that does not exist: the tools there are."""
    return build_missing_tool_output(ToolCall(name=name), tools).content


def build_missing_tool_output(call: ToolCall, tools: Sequence[BaseTool] = ()) -> ToolOutput:
    """The output of a call to a tool that does not exist, as a tool step records it."""
    known = {tool.metadata.name: tool for tool in tools}
    return unknown_tool_output(ToolStepCall(call.name, call.args, call.id), known)


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
