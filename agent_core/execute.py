"""Execute Agent: one stateless agent inference step.

The caller keeps the conversation and runs the tools; this turns the conversation into one
model call and reads the reply as one agent message: a final answer, or a request that the
caller run one or more tools. Nothing is stored. `stepwise serve` offers it over HTTP
(`POST /v1/agent/execute`) and the app's Playground page calls it in process.

Messages have four roles: `user`, `system` (guidance, neither user nor agent), `agent` (an
answer as `content`, or `tool_requests`) and `tool` (the output of a tool the caller ran,
answering one request by its id). Models with native tool calling get the tools natively;
for others (`protocol="react"`) the conversation is written in the ReAct text protocol and
the reply parsed by the same parser as the ReAct worker.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_core._nesting import MAX_NESTING, too_deep
from agent_core.errors import LLMError, UserError
from agent_core.llms.base import LLM, ChatMessage, ChatResponse, ToolCall, ToolSpec, Usage
from agent_core.runtime.loop import run_sync
from agent_core.workers.react_format import (
    FORMAT_REMINDER,
    ReActAction,
    ReActParseError,
    parse_react_output,
    system_prompt,
)

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "AgentMessage",
    "ContextTooLongError",
    "ConversationError",
    "ExecuteDelta",
    "ExecuteRequest",
    "ExecuteResult",
    "Message",
    "SystemMessage",
    "ToolDefinition",
    "ToolMessage",
    "ToolRequest",
    "UserMessage",
    "execute",
    "execute_stream",
    "execute_sync",
]

DEFAULT_INSTRUCTIONS = (
    "You are a helpful agent. Answer the user directly, or use the attached tools when they "
    "help. When asked what tools you have or what you can do, list each tool's name and "
    "description. Never use a tool you were not given."
)
_REACT_RETRIES = 1  # A reply in neither ReAct form is shown its mistake once, then refused.
_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class ConversationError(UserError):
    """The messages or tools cannot make a conversation a model can read."""

    default_code = "invalid_conversation"


class ContextTooLongError(LLMError):
    """The conversation is longer than the model's context: condense the history."""

    default_code = "context_too_long"


class UserMessage(BaseModel):
    """What the user says."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user"] = "user"
    content: str = Field(description="The user's text.")


class SystemMessage(BaseModel):
    """Guidance from the system: neither the user nor the agent speaks it."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["system"] = "system"
    content: str = Field(description="The guidance.")


class ToolRequest(BaseModel):
    """The agent asks the caller to run a tool and send back its output."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=200, description="Answer it with this id.")
    name: str = Field(description="The tool to run: one of the request's tools.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The arguments, matching the tool's JSON schema."
    )


class AgentMessage(BaseModel):
    """The agent's turn: a final answer (`content`) or `tool_requests`, never both."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["agent"] = "agent"
    content: str | None = Field(default=None, description="The agent's answer.")
    tool_requests: list[ToolRequest] | None = Field(
        default=None, description="Tools the agent asks the caller to run, in order."
    )

    @model_validator(mode="after")
    def _answer_or_requests(self) -> AgentMessage:
        if (self.content is None) == (not self.tool_requests):
            raise ValueError("an agent message has either content or tool_requests (one or more)")
        return self


class ToolMessage(BaseModel):
    """The output of a tool the caller ran for one of the agent's requests."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["tool"] = "tool"
    tool_request_id: str = Field(description="The id of the request this answers.")
    content: str = Field(description="The tool's output (or its error), as text.")


Message = Annotated[
    UserMessage | SystemMessage | AgentMessage | ToolMessage, Field(discriminator="role")
]


class ToolDefinition(BaseModel):
    """A tool the agent may ask for; the caller runs it."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=_TOOL_NAME, description="Letters, digits, '_' or '-'; unique.")
    description: str = Field(default="", description="What it does, for the model.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description='A JSON Schema of an object, e.g. {"type": "object", "properties": '
        '{"a": {"type": "number"}}, "required": ["a"]}.',
    )


class ExecuteRequest(BaseModel):
    """One inference step: the conversation so far, the tools, the instructions."""

    model_config = ConfigDict(extra="forbid")
    messages: list[Message] = Field(min_length=1, description="The conversation, oldest first.")
    tools: list[ToolDefinition] = Field(default_factory=list, description="Tools on offer.")
    instructions: str | None = Field(
        default=None, description="Guides the agent; a sensible default when omitted."
    )
    protocol: Literal["native", "react"] | None = Field(
        default=None,
        description="How tools reach the model: its native tool calling, or the ReAct text "
        "protocol for models without it. Default: native (ReAct for the scripted demo).",
    )


class ExecuteResult(BaseModel):
    """The agent's message, what the call cost, and how long it took."""

    message: AgentMessage
    usage: Usage = Field(description="Tokens of the model call(s), and cost when known.")
    latency_ms: float = Field(description="Wall time of the step, in milliseconds.")


class ExecuteDelta(BaseModel):
    """A piece of the reply's text as it streams."""

    delta: str


# ----------------------------------------------------------------------------- checks


def check_request(request: ExecuteRequest, *, max_messages: int = 1_000) -> None:
    """Refuse what no model could read, with what to change.

    Raises:
        ConversationError: Too many messages, duplicate or invalid tools, a tool message
            answering no request, requests left unanswered, or nesting too deep.
    """
    if len(request.messages) > max_messages:
        raise ConversationError(
            f"the request has {len(request.messages):,} messages; at most {max_messages:,}",
            hint="condense the history: summarise older turns into one message",
            remedy="shorten",
        )
    _check_tools(request.tools)
    _check_turns(request.messages)
    if too_deep([m.model_dump() for m in request.messages]):
        raise ConversationError(f"a message nests more than {MAX_NESTING} levels deep")


def _check_tools(tools: Sequence[ToolDefinition]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise ConversationError(f"two tools are named {tool.name!r}: give each a unique name")
        seen.add(tool.name)
        problem = _schema_problem(tool.parameters)
        if problem:
            raise ConversationError(
                f"the parameters of tool {tool.name!r} are not a JSON Schema of an object: "
                f"{problem}",
                hint='e.g. {"type": "object", "properties": {"a": {"type": "number"}}}',
            )
    if too_deep([t.parameters for t in tools]):
        raise ConversationError(f"a tool's parameters nest more than {MAX_NESTING} levels")


_SCHEMA_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def _schema_problem(schema: dict[str, Any]) -> str:
    if schema.get("type") != "object":
        return f'its "type" is {schema.get("type")!r}, not "object"'
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return '"properties" is not an object'
    for name, sub in properties.items():
        if not isinstance(sub, dict):
            return f"property {name!r} is not a schema (an object)"
        kind = sub.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
        unknown = [k for k in kinds if k not in _SCHEMA_TYPES]
        if unknown:
            return f"property {name!r} has an unknown type {unknown[0]!r}"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return '"required" is not a list of names'
    return ""


def _check_turns(messages: Sequence[Message]) -> None:
    """Every tool message answers an open request; requests are answered before moving on."""
    open_requests: dict[str, str] = {}
    answered: set[str] = set()
    for index, message in enumerate(messages, start=1):
        if isinstance(message, ToolMessage):
            if message.tool_request_id not in open_requests:
                why = (
                    "was already answered"
                    if message.tool_request_id in answered
                    else ("is not the id of any earlier tool request")
                )
                raise ConversationError(
                    f"message {index} (tool) answers tool_request_id "
                    f"{message.tool_request_id!r}, which {why}"
                )
            answered.add(message.tool_request_id)
            del open_requests[message.tool_request_id]
            continue
        if open_requests:
            raise ConversationError(
                f"message {index} ({message.role}) comes before the tool requests "
                f"{', '.join(sorted(open_requests))} were answered",
                hint="send a tool message for each request right after the agent message",
            )
        if isinstance(message, AgentMessage) and message.tool_requests:
            open_requests = {r.id: r.name for r in message.tool_requests}
    if open_requests:
        raise ConversationError(
            f"the tool requests {', '.join(sorted(open_requests))} are not answered yet",
            hint="run the tools and send their output as tool messages",
        )
    if isinstance(messages[-1], AgentMessage):
        raise ConversationError(
            "the last message is the agent's answer: there is nothing for it to reply to",
            hint="add a user message (or system guidance) after it",
        )


# ------------------------------------------------------------------ the conversation


def _tool_specs(request: ExecuteRequest) -> list[ToolSpec]:
    return [
        ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
        for t in request.tools
    ]


def native_messages(request: ExecuteRequest) -> list[ChatMessage]:
    """The conversation as chat messages for a model with native tool calling."""
    names = _request_names(request.messages)
    chat = [ChatMessage(role="system", content=request.instructions or DEFAULT_INSTRUCTIONS)]
    for message in request.messages:
        if isinstance(message, AgentMessage):
            calls = tuple(
                ToolCall(id=r.id, name=r.name, args=r.arguments)
                for r in message.tool_requests or ()
            )
            chat.append(
                ChatMessage(role="assistant", content=message.content or "", tool_calls=calls)
            )
        elif isinstance(message, ToolMessage):
            chat.append(
                ChatMessage(
                    role="tool",
                    content=message.content,
                    tool_call_id=message.tool_request_id,
                    name=names.get(message.tool_request_id),
                )
            )
        else:
            chat.append(ChatMessage(role=message.role, content=message.content))
    return chat


def react_messages(request: ExecuteRequest) -> list[ChatMessage]:
    """The conversation in the ReAct text protocol, as the ReAct worker writes it."""
    instructions = request.instructions or DEFAULT_INSTRUCTIONS
    chat = [
        ChatMessage(
            role="system", content=system_prompt(_tool_specs(request), instructions=instructions)
        )
    ]
    for message in request.messages:
        if isinstance(message, AgentMessage) and message.tool_requests:
            for r in message.tool_requests:
                text = f"Thought: I need {r.name}.\nAction: {r.name}\nAction Input: "
                chat.append(ChatMessage(role="assistant", content=text + _json(r.arguments)))
        elif isinstance(message, AgentMessage):
            chat.append(ChatMessage(role="assistant", content=f"Answer: {message.content}"))
        elif isinstance(message, ToolMessage):
            chat.append(ChatMessage(role="user", content=f"Observation: {message.content}"))
        else:
            chat.append(ChatMessage(role=message.role, content=message.content))
    return chat


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _request_names(messages: Sequence[Message]) -> dict[str, str]:
    return {
        r.id: r.name for m in messages if isinstance(m, AgentMessage) for r in m.tool_requests or ()
    }


# ------------------------------------------------------------------------ the step


Protocol = Literal["native", "react"]


async def execute(
    request: ExecuteRequest,
    llm: LLM,
    *,
    max_messages: int = 1_000,
    default_protocol: Protocol = "native",
) -> ExecuteResult:
    """Run one inference step: the agent's next message.

    `default_protocol` applies when the request names none ("react" for a model without
    native tool calling, such as the scripted demo).

    Raises:
        ConversationError: The request cannot be read as a conversation.
        ContextTooLongError: The model's context cannot hold it.
        LLMError: The model call failed, or its reply followed no form.
    """
    check_request(request, max_messages=max_messages)
    started = time.perf_counter()
    protocol = request.protocol or default_protocol
    tools = _tool_specs(request)
    messages = react_messages(request) if protocol == "react" else native_messages(request)
    usage = Usage()
    for attempt in range(_REACT_RETRIES + 1):
        response = await _call(llm, messages, tools if protocol == "native" else None)
        usage = usage + response.usage
        try:
            message = agent_message(response, protocol, tools)
        except ReActParseError as exc:
            if attempt == _REACT_RETRIES:
                raise LLMError(
                    f"the model's reply follows neither ReAct form: {exc}",
                    hint="try again, or use a model with native tool calling",
                ) from None
            messages = [
                *messages,
                response.message,
                ChatMessage(role="user", content=f"Observation: {exc}"),
            ]
            continue
        return ExecuteResult(message=message, usage=usage, latency_ms=_ms_since(started))
    raise AssertionError("unreachable")


def execute_sync(request: ExecuteRequest, llm: LLM, **options: Any) -> ExecuteResult:
    """Sync twin of `execute` (run on the runtime loop; refused inside a running loop)."""
    return run_sync(execute(request, llm, **options), name="execute_sync")


async def execute_stream(
    request: ExecuteRequest,
    llm: LLM,
    *,
    max_messages: int = 1_000,
    default_protocol: Protocol = "native",
) -> AsyncIterator[ExecuteDelta | ExecuteResult]:
    """`execute`, yielding the reply's text as it arrives, then the result.

    In the ReAct protocol the deltas are the model's raw text (its Thought and Action lines).
    """
    check_request(request, max_messages=max_messages)
    started = time.perf_counter()
    protocol = request.protocol or default_protocol
    tools = _tool_specs(request)
    messages = react_messages(request) if protocol == "react" else native_messages(request)
    response: ChatResponse | None = None
    try:
        async for event in llm.stream_chat(messages, tools=tools if protocol == "native" else None):
            if event.delta:
                yield ExecuteDelta(delta=event.delta)
            if event.response is not None:
                response = event.response
    except LLMError as exc:
        raise _context_error(exc) or exc from None
    if response is None:
        raise LLMError("the model's stream ended without a reply", hint="try again")
    try:
        message = agent_message(response, protocol, tools)
    except ReActParseError as exc:
        raise LLMError(f"the model's reply follows neither ReAct form: {exc}") from None
    yield ExecuteResult(message=message, usage=response.usage, latency_ms=_ms_since(started))


async def _call(
    llm: LLM, messages: list[ChatMessage], tools: list[ToolSpec] | None
) -> ChatResponse:
    try:
        return await llm.chat(messages, tools=tools)
    except LLMError as exc:
        raise _context_error(exc) or exc from None


def _context_error(exc: LLMError) -> ContextTooLongError | None:
    if "context window" not in exc.message:
        return None
    return ContextTooLongError(
        "the conversation is longer than the model's context window",
        hint="condense the history: summarise older turns into one message, drop tool "
        "outputs the agent no longer needs, or use a model with a larger context",
        remedy="shorten",
        status=exc.status,
    )


def agent_message(
    response: ChatResponse, protocol: Protocol, tools: Sequence[ToolSpec]
) -> AgentMessage:
    """The model's reply as an agent message (native tool calls win over text).

    Raises:
        ReActParseError: In the ReAct protocol, a reply in neither form or naming no tool
            on offer.
    """
    calls = response.message.tool_calls
    if calls:
        requests = [
            ToolRequest(id=call.id or _new_id(), name=call.name, arguments=call.args)
            for call in calls
        ]
        return AgentMessage(tool_requests=requests)
    text = response.message.content
    if protocol == "native":
        return AgentMessage(content=text)
    parsed = parse_react_output(text)
    if isinstance(parsed, ReActAction):
        if parsed.tool not in {t.name for t in tools}:
            offered = ", ".join(t.name for t in tools) or "none"
            raise ReActParseError(
                f"There is no tool {parsed.tool!r}; the tools are: {offered}. {FORMAT_REMINDER}"
            )
        return AgentMessage(
            tool_requests=[ToolRequest(id=_new_id(), name=parsed.tool, arguments=parsed.args)]
        )
    return AgentMessage(content=parsed.answer)


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
