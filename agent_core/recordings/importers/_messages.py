"""Messages as traces record them, in any of the shapes the formats use, as `ChatMessage`s.

The shapes: the OpenTelemetry GenAI conventions' parts (`{"role", "parts": [{"type": "text" |
"tool_call" | "tool_call_response" | "blob" | "uri", ...}]}`), OpenAI's chat messages (which
Langfuse, LangSmith and OpenInference's `input.value` hold), OpenInference's flattened
`message.*` attributes (unflattened first), LangChain's serialised messages and Anthropic's
content blocks. An image is kept when the trace holds its bytes and Stepwise can store them;
one given by URL is never fetched: it becomes a line of text saying so, and a gap of the task.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pydantic import ValidationError

from agent_core.llms.base import RAW_TOOL_ARGUMENTS, ChatMessage, Role, ToolCall
from agent_core.llms.content import ImagePart, TextPart
from agent_core.recordings.importers._reading import Source, mapping, parse_embedded

__all__ = ["Reading", "text_of"]

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}
_IMAGE_TYPES = ("image_url", "image", "blob", "uri", "file", "input_image", "binary", "image-url")
_TEXT_TYPES = ("text", "input_text", "output_text", "thinking", "reasoning")


def text_of(value: Any) -> str:
    """A recorded value as text: strings as they are, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class Reading:
    """One file's reading: where embedded JSON is parsed, and what could not be read."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.gaps: list[str] = []
        """What the trace held that the task lacks, said once each."""

    def gap(self, text: str) -> None:
        """Note something that could not be read (once)."""
        if text not in self.gaps:
            self.gaps.append(text)

    def json(self, value: Any, *, span: str = "", field: str = "") -> Any:
        """`value` parsed when it is JSON text; as it is otherwise."""
        return parse_embedded(self.source, value, span=span, field=field)

    def args(self, value: Any, *, span: str = "") -> dict[str, Any]:
        """Tool call arguments as an object (text that is no JSON object is kept raw)."""
        parsed = self.json(value, span=span, field="arguments")
        if isinstance(parsed, dict):
            return parsed
        if parsed in (None, ""):
            return {}
        return {RAW_TOOL_ARGUMENTS: text_of(parsed)}

    def messages(self, value: Any, *, span: str = "") -> list[ChatMessage]:
        """A list of recorded messages in any known shape; [] when it holds none."""
        value = self.json(value, span=span, field="messages")
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            value = value["messages"]
        if not isinstance(value, list):
            return []
        if value and all(isinstance(item, list) for item in value):  # LangChain: per prompt.
            value = [m for batch in value for m in batch]
        found: list[ChatMessage] = []
        for item in value:
            found.extend(self.message(item, span=span))
        return found

    def message(self, value: Any, *, span: str = "") -> list[ChatMessage]:
        """One recorded message as one or more `ChatMessage`s (tool results split out)."""
        if isinstance(value, str):
            return [ChatMessage(role="user", content=value)]
        if not isinstance(value, dict):
            return []
        value = _unwrapped(value)
        role = _ROLES.get(str(value.get("role") or value.get("type") or "").lower(), "user")
        if isinstance(value.get("parts"), list):
            return self._from_parts(role, value["parts"], value, span)
        content = value.get("content")
        if content is None and "contents" in value:
            content = [
                c.get("message_content", c) for c in value["contents"] if isinstance(c, dict)
            ]
        texts, images, calls, results = self._content(content, span)
        calls += [self._call(c, span) for c in value.get("tool_calls") or [] if isinstance(c, dict)]
        if isinstance(value.get("function_call"), dict):  # OpenAI's legacy single call.
            calls.append(self._call({"function": value["function_call"]}, span))
        call_id = value.get("tool_call_id") or value.get("id") if role == "tool" else None
        message = _message(role, texts, images, calls, name=value.get("name"), call_id=call_id)
        return [*results, message] if message is not None else results

    def _from_parts(
        self, role: Role, parts: list[Any], value: dict[str, Any], span: str
    ) -> list[ChatMessage]:
        texts: list[str] = []
        images: list[ImagePart | str] = []
        calls: list[ToolCall] = []
        results: list[ChatMessage] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "tool_call":
                calls.append(
                    ToolCall(
                        id=str(part.get("id") or ""),
                        name=str(part.get("name") or "?"),
                        args=self.args(part.get("arguments"), span=span),
                    )
                )
            elif kind == "tool_call_response":
                answer = part.get("response", part.get("result"))
                results.append(
                    ChatMessage(role="tool", content=text_of(answer), tool_call_id=part.get("id"))
                )
            elif kind in _IMAGE_TYPES:
                images.append(self._image(part))
            else:
                texts.append(text_of(part.get("content", part.get("text", part))))
        message = _message(role, texts, images, calls, name=value.get("name"), call_id=None)
        if role == "tool" and message is not None and results:
            message = None  # A tool message of responses: each response is its message.
        return [*results, message] if message is not None else results

    def _content(
        self, content: Any, span: str
    ) -> tuple[list[str], list[ImagePart | str], list[ToolCall], list[ChatMessage]]:
        """Text, images, calls and tool results of a message's `content`."""
        if not isinstance(content, list):
            return ([text_of(content)] if content not in (None, "") else []), [], [], []
        texts: list[str] = []
        images: list[ImagePart | str] = []
        calls: list[ToolCall] = []
        results: list[ChatMessage] = []
        for block in content:
            if not isinstance(block, dict):
                texts.append(text_of(block))
                continue
            kind = block.get("type")
            if kind in _TEXT_TYPES:
                texts.append(
                    text_of(block.get("text", block.get("content", block.get("thinking"))))
                )
            elif kind == "tool_use":  # Anthropic's blocks.
                calls.append(self._call(block, span))
            elif kind == "tool_result":
                results.append(
                    ChatMessage(
                        role="tool",
                        content=text_of(block.get("content")),
                        tool_call_id=block.get("tool_use_id"),
                    )
                )
            elif kind in _IMAGE_TYPES:
                images.append(self._image(block))
            else:
                texts.append(text_of(block))
        return texts, images, calls, results

    def _call(self, call: dict[str, Any], span: str) -> ToolCall:
        """A tool call in OpenAI's, OpenInference's, LangChain's or Anthropic's shape."""
        call = mapping(call.get("tool_call", call))
        function = mapping(call.get("function")) or call
        raw = function.get("arguments", function.get("args", function.get("input")))
        return ToolCall(
            id=str(call.get("id") or ""),
            name=str(function.get("name") or "?"),
            args=self.args(raw, span=span),
        )

    def _image(self, part: dict[str, Any]) -> ImagePart | str:
        """The image, when the trace holds its bytes and they make a storable image."""
        url = _image_url(part)
        data = part.get("content") or part.get("data")
        if url.startswith("data:") and ";base64," in url:
            data = url.split(";base64,", 1)[1]
        if isinstance(data, str):
            try:
                return ImagePart.from_bytes(base64.b64decode(data, validate=True))
            except (binascii.Error, ValueError, ValidationError):
                pass
            self.gap("an image whose bytes are not a PNG, JPEG, GIF or WebP Stepwise can store")
            return "[image: not kept]"
        if url:
            self.gap("an image given by URL (never fetched; the message says where it was)")
            return f"[image at {url[:200]}, not fetched]"
        self.gap("an image the trace did not include")
        return "[image: not recorded]"


def _unwrapped(value: dict[str, Any]) -> dict[str, Any]:
    """OpenInference's `{"message": {...}}` and LangChain's `{"kwargs": {...}}`, opened."""
    if isinstance(value.get("message"), dict) and "role" not in value:
        return value["message"]
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        kwargs = dict(value["kwargs"])
        kind = str((value.get("id") or ["", "HumanMessage"])[-1])
        kwargs.setdefault("type", _LANGCHAIN_TYPES.get(kind, "human"))
        return kwargs
    return value


_LANGCHAIN_TYPES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
}


def _image_url(part: dict[str, Any]) -> str:
    for key in ("image_url", "image", "uri", "url"):
        found = part.get(key)
        while isinstance(found, dict):
            found = found.get("url", found.get("image"))
        if isinstance(found, str):
            return found
    return ""


def _message(
    role: Role,
    texts: list[str],
    images: list[ImagePart | str],
    calls: list[ToolCall],
    *,
    name: Any,
    call_id: Any,
) -> ChatMessage | None:
    if not (texts or images or calls) and role != "assistant":
        return None
    kept = [image for image in images if isinstance(image, ImagePart)]
    said = [*texts, *(image for image in images if isinstance(image, str))]
    fields: dict[str, Any] = {
        "role": role,
        "tool_calls": tuple(calls) if role == "assistant" else (),
        "tool_call_id": str(call_id) if call_id else None,
        "name": str(name) if isinstance(name, str) and name else None,
    }
    if kept:
        parts = [TextPart(text=text) for text in said if text] + kept
        return ChatMessage(**fields, parts=tuple(parts))
    return ChatMessage(**fields, content="\n".join(t for t in said if t))
