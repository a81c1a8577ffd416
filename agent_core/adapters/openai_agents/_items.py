"""The Agents SDK's input list as JSON, and as the `ChatMessage`s Stepwise shows.

The input list is what `RunResult.to_input_list()` gives: the SDK's Responses-shaped items
(`{"role": "user", ...}`, `{"type": "message", ...}`, `{"type": "function_call", ...}`,
`{"type": "function_call_output", ...}`, ...), kept as JSON so a task stores and reloads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, cast

from agents import ItemHelpers, TResponseInputItem
from agents.exceptions import UserError as AgentsUserError
from agents.models.chatcmpl_converter import Converter
from openai.types.responses import ResponseFunctionToolCall
from pydantic_core import to_jsonable_python

from agent_core.llms.base import ChatMessage, ToolCall

__all__ = [
    "Item",
    "as_chat_messages",
    "function_call",
    "history_items",
    "jsonable",
    "output_item",
    "output_text",
    "sdk_items",
    "text_output_item",
    "unanswered_calls",
    "user_item",
]

Item = dict[str, Any]
"""One item of the input list, as JSON."""


def jsonable(value: Any) -> Any:
    """`value` (SDK items, pydantic models, tool outputs) as plain JSON data."""
    return to_jsonable_python(value, fallback=repr, exclude_none=True)


def sdk_items(items: Iterable[Item]) -> list[TResponseInputItem]:
    """The JSON items as the SDK's type for them (its TypedDicts are JSON objects too)."""
    return cast("list[TResponseInputItem]", list(items))


def user_item(text: str) -> Item:
    """A user message, as the SDK makes one from a `Runner.run` input string."""
    return {"role": "user", "content": text}


def function_call(call_id: str, name: str, args: dict[str, Any]) -> ResponseFunctionToolCall:
    """The SDK's object for a call of `name` (what its tool context and output items take)."""
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(args)
    )


def output_item(call: ResponseFunctionToolCall, output: Any) -> Item:
    """The `function_call_output` item the SDK replays to the model for `output`."""
    return jsonable(ItemHelpers.tool_call_output_item(call, output))


def output_text(item: Item) -> str:
    """The text of a `function_call_output` item's output (its text parts, else its JSON)."""
    output = item.get("output")
    if isinstance(output, str):
        return output
    parts = output if isinstance(output, list) else [output]
    texts = [p.get("text") if isinstance(p, dict) else None for p in parts]
    if all(isinstance(text, str) for text in texts):
        return "".join(str(text) for text in texts)
    return json.dumps(output)


def text_output_item(call_id: str, text: str) -> Item:
    """A `function_call_output` item whose output is `text` (a refusal, a note)."""
    return {"call_id": call_id, "output": text, "type": "function_call_output"}


def unanswered_calls(items: Sequence[Item]) -> list[Item]:
    """The `function_call` items no `function_call_output` answers yet, in order."""
    answered = {i.get("call_id") for i in items if i.get("type") == "function_call_output"}
    return [i for i in items if i.get("type") == "function_call" and i["call_id"] not in answered]


def history_items(messages: Iterable[ChatMessage]) -> list[Item]:
    """Earlier turns of the conversation (user and assistant text) as input items."""
    return [
        {"role": message.role, "content": message.content}
        for message in messages
        if message.role in ("user", "assistant") and message.content and not message.tool_calls
    ]


def as_chat_messages(items: Sequence[Item], *, system: str | None = None) -> list[ChatMessage]:
    """The items as chat messages, grouped as the SDK's chat-completions converter sends them.

    Items that converter refuses (a hosted tool's call, which only the Responses API carries)
    are shown as their JSON, so nothing the model gets is hidden.
    """
    shown = [ChatMessage(role="system", content=system)] if system else []
    try:
        converted = Converter.items_to_messages(sdk_items(items))
    except (AgentsUserError, ValueError, TypeError, KeyError):
        return shown + [_raw_message(item) for item in items]
    return shown + [_chat_message(message) for message in converted]


def _chat_message(message: Any) -> ChatMessage:
    role = message.get("role", "assistant")
    calls = tuple(
        ToolCall(
            id=call.get("id", ""),
            name=call["function"]["name"],
            args=_args_of(call["function"].get("arguments")),
        )
        for call in message.get("tool_calls") or ()
        if call.get("type") == "function"
    )
    return ChatMessage(
        role=role if role in ("system", "user", "assistant", "tool") else "system",
        content=_text_of(message.get("content")),
        tool_calls=calls,
        tool_call_id=message.get("tool_call_id"),
    )


def _raw_message(item: Item) -> ChatMessage:
    role = item.get("role")
    if role in ("user", "assistant", "system") and isinstance(item.get("content"), str):
        return ChatMessage(role=role, content=item["content"])
    return ChatMessage(role="assistant", content=json.dumps(item, default=str))


def _args_of(arguments: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        return "".join(
            str(part.get("text") or part.get("refusal") or "")
            for part in content
            if isinstance(part, dict)
        )
    return str(content)
