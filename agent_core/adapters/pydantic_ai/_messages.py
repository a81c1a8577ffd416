"""pydantic-ai's messages in Stepwise's words, and a window on what its model is sent.

`chat_messages` turns pydantic-ai's `ModelMessage`s into `ChatMessage`s for the memory view,
the step's "messages sent" and the preview. `SentRequest` is what one request sent,
read from the `ModelRequestNode` once it ran. For a preview, `RequestCapture`, a pydantic-ai
capability, wraps whichever model serves the request (`get_wrapper_model`, called after every
other hook prepared it), notes the messages the model gets and stops the run right there,
before anything is sent. (A capability costs every request pydantic-ai's hook machinery, so
only previews use one.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryFeedbackPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestContext, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from agent_core.llms.base import ChatMessage, ToolCall, ToolSpec
from agent_core.types import ToolOutput

__all__ = [
    "PreviewStop",
    "RequestCapture",
    "SentRequest",
    "chat_messages",
    "describe_calls",
    "tool_outputs",
    "user_text",
]


def user_text(content: str | Sequence[Any]) -> str:
    """A user prompt's text (files and images it carries are named, not inlined)."""
    if isinstance(content, str):
        return content
    pieces = []
    for item in content:
        if isinstance(item, str):
            pieces.append(item)
        elif isinstance(item, TextContent):
            pieces.append(item.content)
        else:
            pieces.append(f"[{type(item).__name__}]")
    return "\n".join(pieces)


def _request_messages(request: ModelRequest, *, system: bool) -> Iterable[ChatMessage]:
    for part in request.parts:
        if isinstance(part, SystemPromptPart):
            if system:
                yield ChatMessage(role="system", content=part.content)
        elif isinstance(part, UserPromptPart):
            yield ChatMessage(role="user", content=user_text(part.content))
        elif isinstance(part, ToolReturnPart):
            yield ChatMessage(
                role="tool",
                content=part.model_response_str(),
                tool_call_id=part.tool_call_id,
                name=part.tool_name,
            )
        elif isinstance(part, RetryFeedbackPart):
            yield ChatMessage(role="user", content=part.model_response())


def _response_message(response: ModelResponse) -> ChatMessage:
    text = "".join(part.content for part in response.parts if isinstance(part, TextPart))
    calls = tuple(
        ToolCall(id=part.tool_call_id, name=part.tool_name, args=part.args_as_dict())
        for part in response.parts
        if isinstance(part, ToolCallPart)
    )
    return ChatMessage(role="assistant", content=text, tool_calls=calls)


def chat_messages(
    messages: Iterable[ModelMessage],
    *,
    system: bool = False,
    instructions: str | None = None,
) -> list[ChatMessage]:
    """`messages` as Stepwise's `ChatMessage`s.

    Args:
        messages: pydantic-ai's messages, oldest first.
        system: Keep the system prompt parts (a preview does; the memory view leaves them out,
            as the built-in workers leave their system prompt out of memory).
        instructions: The agent's instructions for this request, put first as a system message.
    """
    converted = [ChatMessage(role="system", content=instructions)] if instructions else []
    for message in messages:
        if isinstance(message, ModelRequest):
            converted.extend(_request_messages(message, system=system))
        else:
            converted.append(_response_message(message))
    return converted


def tool_outputs(parts: Iterable[ModelRequestPart], calls: dict[str, Any]) -> list[ToolOutput]:
    """The results among `parts` of the calls in `calls` (call id -> `Call`), in their order."""
    outputs = []
    for part in parts:
        if not isinstance(part, ToolReturnPart) or part.tool_call_id not in calls:
            continue
        call = calls[part.tool_call_id]
        outputs.append(
            ToolOutput(
                tool_name=part.tool_name,
                args=call.args,
                content=part.model_response_str(wrap_if_error=False),
                is_error=part.outcome != "success",
                rejected=part.outcome == "denied",
                call_id=part.tool_call_id,
            )
        )
    return outputs


class PreviewStop(BaseException):
    """Raised in place of the model's answer when only the request was wanted.

    A `BaseException`, so that no `except Exception` on the way (a fallback model, a capability's
    error hook) takes it for a failed request and tries another model.
    """


@dataclass
class SentRequest:
    """What one model request sent: pydantic-ai's messages, the instructions and tools."""

    messages: list[ModelMessage]
    instructions: str | None
    tools: list[ToolSpec] = field(default_factory=list)
    """The function tools offered, with their schemas (a case compares them in replay)."""

    @classmethod
    def of(
        cls, messages: Sequence[ModelMessage], parameters: ModelRequestParameters
    ) -> SentRequest:
        """The request a model gets as `messages` with `parameters` (which hold instructions)."""
        parts = parameters.instruction_parts
        instructions = InstructionPart.join(parts) if parts else _history_instructions(messages)
        tools = [
            ToolSpec(
                name=tool.name,
                description=tool.description or "",
                parameters=tool.parameters_json_schema,
            )
            for tool in parameters.function_tools
        ]
        return cls(list(messages), instructions, tools)

    @classmethod
    def of_context(cls, context: ModelRequestContext | None) -> SentRequest | None:
        """The request a `ModelRequestNode` sent, from its `last_request_context`.

        pydantic-ai sets it just before the model is called, with the messages as the model's
        own `prepare_messages` left them: what went to the model.
        """
        if context is None:
            return None
        return cls.of(context.messages, context.model_request_parameters)

    def as_chat(self) -> list[ChatMessage]:
        """The request as `ChatMessage`s, instructions and system prompt first."""
        return chat_messages(self.messages, system=True, instructions=self.instructions)


@dataclass(init=False)
class _CapturingModel(WrapperModel):
    """The serving model, noting the request it gets and sending none."""

    capture: RequestCapture

    def __init__(self, wrapped: Model, capture: RequestCapture) -> None:
        super().__init__(wrapped)
        self.capture = capture

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        self.capture.sent.append(SentRequest.of(messages, model_request_parameters))
        raise PreviewStop


def _history_instructions(messages: Sequence[ModelMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions:
            return message.instructions
    return None


@dataclass
class RequestCapture(AbstractCapability[Any]):
    """A run capability that records the model request about to be sent, and stops the run."""

    sent: list[SentRequest] = field(default_factory=list)

    def get_wrapper_model(self, model: Model) -> Model | None:
        """Wrap the serving model so that its requests are recorded."""
        return _CapturingModel(model, self)

    @property
    def last(self) -> SentRequest | None:
        """The last request made (or, for a preview, about to be made)."""
        return self.sent[-1] if self.sent else None


def describe_calls(calls: Iterable[Any]) -> str:
    """Calls as the step shows them when the model wrote no text: `add({"a": 1})`."""
    return "\n".join(f"{call.tool}({json.dumps(call.args)})" for call in calls)
