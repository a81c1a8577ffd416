"""The one LLM protocol every adapter implements, and the messages it speaks.

Messages are frozen so that a memory snapshot can share them instead of copying them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_core._nesting import MAX_NESTING, too_deep
from agent_core.errors import UserError
from agent_core.llms.content import ContentPart, ImagePart, with_parts_text

__all__ = [
    "LLM",
    "RAW_TOOL_ARGUMENTS",
    "ChatMessage",
    "ChatResponse",
    "ChatStreamEvent",
    "MessageRole",
    "Role",
    "ToolCall",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "resolve_tool_choice",
]

Role = Literal["system", "user", "assistant", "tool"]


class MessageRole(StrEnum):
    """A message's role by name, as LlamaIndex spells it; each member equals its `Role` string."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


RAW_TOOL_ARGUMENTS = "__raw_arguments__"
_TOO_DEEP = (
    f"(arguments nested more than {MAX_NESTING} levels deep were refused; send them flatter)"
)
"""The args key under which an adapter keeps tool-call arguments that were not valid JSON."""


class ToolCall(BaseModel):
    """One call of a tool requested by the model."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("args")
    @classmethod
    def _bounded(cls, args: dict[str, Any]) -> dict[str, Any]:
        # Arguments nested too deep to store and load again reach the tool as unreadable,
        # and the model reads why, rather than poisoning the task that records them.
        if too_deep(args):
            return {RAW_TOOL_ARGUMENTS: _TOO_DEEP}
        return args


class ChatMessage(BaseModel):
    """One message of a conversation, as a model sees it."""

    model_config = ConfigDict(frozen=True)

    role: Role
    content: str = ""
    """The message's text (with `parts`, their text)."""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    parts: tuple[ContentPart, ...] = ()
    """The content in order when it holds more than text (images); empty for plain text."""

    _parts_text = model_validator(mode="before")(with_parts_text)

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The images the message shows the model, in order."""
        return tuple(part for part in self.parts if isinstance(part, ImagePart))

    def __str__(self) -> str:
        return f"{self.role}: {self.content}"


class Usage(BaseModel):
    """Tokens a call used and, when the price is known, what it cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    estimated: bool = False
    """The counts are Stepwise's own estimate: the server sent none (show them as "≈")."""
    cached_tokens: int | None = None
    """Of the prompt tokens, those the server read from its prompt cache (when it says)."""
    reasoning_tokens: int | None = None
    """Of the completion tokens, those spent reasoning (when the server says)."""

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=sum(costs) if costs else None,
            # A sum with any estimated part is itself an estimate.
            estimated=self.estimated or other.estimated,
            cached_tokens=_combined(self.cached_tokens, other.cached_tokens, 1),
            reasoning_tokens=_combined(self.reasoning_tokens, other.reasoning_tokens, 1),
        )

    def __sub__(self, other: Usage) -> Usage:
        cost = None
        if self.cost_usd is not None:
            cost = max(0.0, self.cost_usd - (other.cost_usd or 0.0))
        return Usage(
            prompt_tokens=max(0, self.prompt_tokens - other.prompt_tokens),
            completion_tokens=max(0, self.completion_tokens - other.completion_tokens),
            cost_usd=cost,
            estimated=self.estimated or other.estimated,
            cached_tokens=_combined(self.cached_tokens, other.cached_tokens, -1),
            reasoning_tokens=_combined(self.reasoning_tokens, other.reasoning_tokens, -1),
        )


def _combined(mine: int | None, theirs: int | None, sign: int) -> int | None:
    """A sum (sign 1) or difference (-1) of counts a server may not report (None)."""
    if mine is None and theirs is None:
        return None
    return max(0, (mine or 0) + sign * (theirs or 0))


class ChatResponse(BaseModel):
    """A model's reply to one `chat` call."""

    message: ChatMessage
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    finish_reason: str | None = None
    """Why the model stopped, in its server's words ("stop", "tool_calls", "end_turn"...)."""

    @property
    def text(self) -> str:
        """The reply's text content."""
        return self.message.content

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model asked for, if any."""
        return self.message.tool_calls


class ToolSpec(BaseModel):
    """What a model is told about a tool: its name, purpose and JSON schema of arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


ToolChoice = str | dict[str, Any]
"""Whether and which tool the model must call, as LlamaIndex and OpenAI spell it: "auto",
"none", "required", a tool's name, or `{"type": "function", "function": {"name": ...}}`."""


def resolve_tool_choice(choice: ToolChoice) -> tuple[str, str | None]:
    """`choice` as (mode, tool name): ("auto" | "none" | "required", None) or ("tool", name).

    Anthropic's own forms (`{"type": "any"}`, `{"type": "tool", "name": ...}`) are read too.

    Raises:
        UserError: `choice` is none of the forms above.
    """
    if isinstance(choice, str):
        if choice in ("auto", "none", "required"):
            return choice, None
        if choice == "any":
            return "required", None
        return "tool", choice
    kind = choice.get("type")
    function = choice.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return "tool", function["name"]
    if kind == "tool" and isinstance(choice.get("name"), str):
        return "tool", choice["name"]
    if isinstance(kind, str) and kind in ("auto", "none", "required", "any"):
        return resolve_tool_choice(kind)
    raise UserError(
        f'tool_choice {choice!r} is not understood: use "auto", "none", "required", a '
        'tool\'s name, or {"type": "function", "function": {"name": "..."}}'
    )


class ChatStreamEvent(BaseModel):
    """One item of a streamed reply: a text delta, and on the last item the whole response."""

    delta: str = ""
    response: ChatResponse | None = None


@runtime_checkable
class LLM(Protocol):
    """An async chat model. Adapters wrap a provider SDK; scripted models serve tests and demos."""

    model: str

    async def chat(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] | None = None
    ) -> ChatResponse:
        """Return the model's reply to `messages`, possibly with tool calls.

        Adapters over a provider also take `tool_choice: ToolChoice | None` (whether and which
        tool to call; "auto" when tools are offered and None is given). Steps pass it only to
        models whose `chat` names it, so a model of one's own need not.
        """
        ...

    def stream_chat(
        self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] | None = None
    ) -> AsyncIterator[ChatStreamEvent]:
        """Yield the reply as text deltas; the last event carries the whole `ChatResponse`."""
        ...
