"""`AgentOrchestrator`: an LLM picks each task's next service through tool calling.

As in llama-agents: each service that takes tasks is a tool named after it, described by
the service's description, with one string argument `input`. A tool call is the next hop;
the service's result comes back into the conversation as the tool's output and the LLM is
asked again; a reply with no tool call is the task's final answer. The conversation is the
task's orchestrator state, stored by the control plane, so the Services page shows exactly
what the model saw.
"""

from __future__ import annotations

from typing import Any

from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ToolCall, ToolSpec
from stepwise.services.errors import UnknownServiceError
from stepwise.services.messages import TaskDefinition, TaskResult
from stepwise.services.orchestrators.base import BaseOrchestrator, Decision, FinalAnswer, NextHop
from stepwise.services.records import HopRecord, ServiceRecord

__all__ = ["DEFAULT_SYSTEM_PROMPT", "AgentOrchestrator"]

DEFAULT_SYSTEM_PROMPT = (
    "You coordinate services to complete the user's task. Each tool is a service: call the "
    "one that should act next, with the input it needs. You will see its answer. When the "
    "task is done, reply without calling a tool: that reply is the final answer."
)

_MESSAGES = "messages"


class AgentOrchestrator(BaseOrchestrator):
    """Lets `llm` choose each hop by calling one tool per service.

    Args:
        llm: Any `agent_core` LLM with tool calling (`ScriptedLLM`, `FunctionLLM` in tests).
        system_prompt: The orchestrator's instructions; None sends no system message.
        max_bad_calls: Calls of unknown services (or without a text `input`) the model may
            make in a row, each answered with an error it reads, before the task fails.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        max_bad_calls: int = 2,
    ) -> None:
        self.llm = llm
        self.system_prompt = system_prompt
        self.max_bad_calls = max_bad_calls

    async def get_next_hop(
        self, task: TaskDefinition, services: list[ServiceRecord], state: dict[str, Any]
    ) -> tuple[Decision, dict[str, Any]]:
        """Ask the LLM which service acts next, or for the final answer."""
        messages = _load(state) or self._opening(task)
        tools = [_tool_of(service) for service in services]
        names = {service.service_name for service in services}
        for _ in range(self.max_bad_calls + 1):
            response = await self.llm.chat(messages, tools=tools)
            if not response.tool_calls:
                messages.append(response.message)
                return FinalAnswer(result=response.text), _dump(messages)
            call = response.tool_calls[0]
            # One hop at a time: the model is shown the one call that was made.
            messages.append(_only_call(response, call))
            problem = _problem(call, names)
            if problem is None:
                hop = NextHop(service_name=call.name, input=call.args["input"])
                return hop, _dump(messages)
            messages.append(_tool_reply(call, problem))
        raise UnknownServiceError(
            f"the orchestrator's model called no usable service {self.max_bad_calls + 1} times "
            f"in a row (last: {call.name!r} with {call.args!r}); the services are "
            f"{', '.join(sorted(names)) or 'none'}",
            hint="check the services' names and descriptions, or the orchestrator's model",
            task_id=task.task_id,
        )

    async def add_result_to_state(
        self, hop: HopRecord, result: TaskResult, state: dict[str, Any]
    ) -> dict[str, Any]:
        """Put the service's answer into the conversation as the tool call's output.

        When a person edited the hop, the conversation shows the call that ran, and the
        answer says it was changed, so the model reasons from what really happened.
        """
        messages = _load(state)
        last = messages[-1] if messages else None
        if last is None or last.role != "assistant" or not last.tool_calls:
            return state  # Not our conversation (the task began under another orchestrator).
        call = last.tool_calls[0]
        content = result.result
        if hop.edited and hop.service_name is not None and hop.input is not None:
            ran = ToolCall(id=call.id, name=hop.service_name, args={"input": hop.input})
            messages[-1] = last.model_copy(update={"tool_calls": (ran,)})
            content = (
                f"(A person changed this call from {hop.proposed_service} with input "
                f"{hop.proposed_input!r} to {hop.service_name} with input {hop.input!r}.)\n"
                f"{content}"
            )
            call = ran
        messages.append(_tool_reply(call, content))
        return _dump(messages)

    def _opening(self, task: TaskDefinition) -> list[ChatMessage]:
        opening = [ChatMessage(role="user", content=task.input)]
        if self.system_prompt:
            opening.insert(0, ChatMessage(role="system", content=self.system_prompt))
        return opening


def _tool_of(service: ServiceRecord) -> ToolSpec:
    return ToolSpec(
        name=service.service_name,
        description=service.description,
        parameters={
            "type": "object",
            "properties": {"input": {"type": "string", "description": "What to ask this service."}},
            "required": ["input"],
        },
    )


def _problem(call: ToolCall, names: set[str]) -> str | None:
    if call.name not in names:
        known = ", ".join(sorted(names)) or "none"
        return f"Error: there is no service named {call.name!r}. The services are: {known}."
    if not isinstance(call.args.get("input"), str):
        return f"Error: call {call.name} with one string argument, `input`."
    return None


def _only_call(response: ChatResponse, call: ToolCall) -> ChatMessage:
    return response.message.model_copy(update={"tool_calls": (call,)})


def _tool_reply(call: ToolCall, content: str) -> ChatMessage:
    return ChatMessage(role="tool", content=content, tool_call_id=call.id, name=call.name)


def _load(state: dict[str, Any]) -> list[ChatMessage]:
    return [ChatMessage.model_validate(item) for item in state.get(_MESSAGES, [])]


def _dump(messages: list[ChatMessage]) -> dict[str, Any]:
    return {_MESSAGES: [message.model_dump(mode="json") for message in messages]}
