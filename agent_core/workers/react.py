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
from agent_core.runtime.limits import iteration_limit
from agent_core.tools.base import BaseTool
from agent_core.types import Task, TaskStep, TaskStepOutput, ToolOutput
from agent_core.workers._react_compat import FailureHandler, failure_answer, iterations_used
from agent_core.workers._tool_worker import DEFAULT_MAX_ITERATIONS, ToolCallingWorker
from agent_core.workers.react_format import (
    ReActAnswer,
    ReActParseError,
    parse_react_output,
    system_prompt,
)
from agent_core.workers.react_formatter import ReActChatFormatter
from agent_core.workers.react_output_parser import ReActOutputParser, from_reasoning_step
from agent_core.workers.tool_steps import (
    ToolStepCall,
    call_step,
    call_tool,
    edit_note,
    queues_call,
    run_tool_step_call,
    tool_call_of,
    unknown_tool_output,
)

__all__ = ["ReActAgentWorker"]


class ReActAgentWorker(ToolCallingWorker):
    """A ReAct agent over any `LLM`.

    Args:
        tools: The tools the model may call (names must be unique).
        llm: The model.
        max_iterations: Reasoning steps allowed before the task fails with a clear error.
        tool_approval: Make every tool call its own step, awaiting a person's approval.
        instructions: Replaces the first paragraph of the system prompt.
        react_chat_formatter: Builds the messages instead (LlamaIndex's formatter).
        output_parser: Parses the replies instead (LlamaIndex's parser, or a subclass).
        handle_reasoning_failure_fn: Called as `fn(None, error)` when `max_iterations` is
            reached; what it returns (a `ToolOutput` or text) is the task's answer, where
            without it the step fails.
        verbose: Accepted for LlamaIndex code; every step is recorded and shown instead.
        tool_retriever: Accepted for LlamaIndex code and not used: every tool is offered.
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
        react_chat_formatter: ReActChatFormatter | None = None,
        output_parser: ReActOutputParser | None = None,
        handle_reasoning_failure_fn: FailureHandler | None = None,
        verbose: bool = False,
        tool_retriever: object = None,
    ) -> None:
        super().__init__(tools, llm, max_iterations=max_iterations, tool_approval=tool_approval)
        self.formatter = react_chat_formatter or ReActChatFormatter()
        self.output_parser = output_parser
        self.handle_reasoning_failure_fn = handle_reasoning_failure_fn
        self.verbose, self.tool_retriever = verbose, tool_retriever
        if react_chat_formatter is None:
            specs = [tool.metadata.to_spec() for tool in tools]
            self._system = ChatMessage(
                role="system", content=system_prompt(specs, instructions=instructions)
            )
        else:
            self._system = react_chat_formatter.system_message(tools)
        # A subclass's own `format` builds every request; the default one is this prompt.
        self._custom_format = type(self.formatter).format is not ReActChatFormatter.format

    @classmethod
    def from_tools(
        cls,
        tools: Sequence[BaseTool] | None = None,
        llm: LLM | None = None,
        *,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        tool_approval: bool = False,
        instructions: str = "",
        **llamaindex_options: Any,
    ) -> ReActAgentWorker:
        """Build the worker from tools and a model, as in LlamaIndex.

        `llamaindex_options` are the constructor's LlamaIndex keywords (`verbose`,
        `react_chat_formatter`, `output_parser`, `handle_reasoning_failure_fn`,
        `tool_retriever`) and `callback_manager`, accepted and unused.
        """
        llm = cls._from_tools_llm(llm)
        llamaindex_options.pop("callback_manager", None)
        return cls(
            list(tools or []),
            llm,
            max_iterations=max_iterations,
            tool_approval=tool_approval,
            instructions=instructions,
            **llamaindex_options,
        )

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The system prompt and the memory the next reasoning step would send."""
        history = task.memory.get(estimate_tokens(self._system.content))
        if self._custom_format:
            return self.formatter.format(list(self.tools.values()), history, [])
        return [self._system, *history]

    def _parse(self, text: str) -> Any:
        if self.output_parser is None:
            return parse_react_output(text)
        try:
            return from_reasoning_step(self.output_parser.parse(text))
        except ReActParseError:
            raise
        except ValueError as exc:  # A custom parser's complaint is for the model to read.
            raise ReActParseError(str(exc)) from exc

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question and the final answer join the conversation; the reasoning does not."""
        replies = [m for m in task.memory.get_all() if m.role == "assistant"]
        answer = self._parse(replies[-1].content) if replies else None
        text = answer.answer if isinstance(answer, ReActAnswer) else ""
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=text),
        ]

    async def _run_reasoning_step(
        self, step: TaskStep, task: Task, emit: EventSink | None, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        give_up = self.handle_reasoning_failure_fn
        limit = iteration_limit(task.limits, self.max_iterations)
        if give_up and iterations_used(task) >= limit:
            return failure_answer(give_up, limit, step, task)
        self._start_reasoning(step, task)
        response = await self._chat(self.preview_messages(task), step, emit)
        task.memory.put(ChatMessage(role="assistant", content=response.text))
        try:
            parsed = self._parse(response.text)
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
