"""Model requests as a replay compares them: normalised, rendered as text, and diffed.

Two requests are equal when their messages, tools and recorded settings are, after the
parts that change from run to run without changing the reply are blanked: tool-call ids,
Stepwise's task and step ids (a workspace path holds the task's), UUIDs and ISO timestamps.
Both sides are redacted as a saved case is, so a key the recording lost does not differ.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

from agent_core.llms.base import ChatMessage, ToolSpec
from agent_core.recordings._secrets import redact_text
from agent_core.recordings.cases import ModelRequest

__all__ = [
    "normalise_text",
    "render_request",
    "request_diff",
    "request_of",
    "same_request",
    "text_diff",
]

_IDS = re.compile(
    r"\b[0-9a-f]{32}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
    re.IGNORECASE,
)
_TIMES = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b"
)
_CONTEXT_LINES = 2


def normalise_text(text: str) -> str:
    """`text` redacted, with ids and timestamps blanked (`<id>`, `<time>`)."""
    return _TIMES.sub("<time>", _IDS.sub("<id>", redact_text(text)))


def _message(message: ChatMessage) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": normalise_text(message.content)}
    if message.tool_calls:
        data["tool_calls"] = [
            {"name": call.name, "args": _normalised_json(call.args)} for call in message.tool_calls
        ]
    if message.name:
        data["name"] = message.name
    return data


def _normalised_json(value: Any) -> Any:
    return json.loads(normalise_text(json.dumps(value, sort_keys=True, default=str)))


def _comparable(
    request: ModelRequest, *, tools: bool, settings: Sequence[str], ignore_system: bool
) -> dict[str, Any]:
    messages = [m for m in request.messages if not (ignore_system and m.role == "system")]
    data: dict[str, Any] = {"messages": [_message(m) for m in messages]}
    if tools:
        data["tools"] = [_normalised_json(t.model_dump()) for t in request.tools or []]
    if settings:
        data["settings"] = {key: request.settings.get(key) for key in settings}
    return data


def _views(
    recorded: ModelRequest, sent: ModelRequest, *, ignore_system: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    # Only what the recording holds is compared: a store keeps no tools or settings.
    tools = recorded.tools is not None
    settings = sorted(recorded.settings)
    return (
        _comparable(recorded, tools=tools, settings=settings, ignore_system=ignore_system),
        _comparable(sent, tools=tools, settings=settings, ignore_system=ignore_system),
    )


def same_request(recorded: ModelRequest, sent: ModelRequest, *, ignore_system: bool) -> bool:
    """Whether `sent` asks the model what `recorded` asked, as far as the recording says."""
    mine, theirs = _views(recorded, sent, ignore_system=ignore_system)
    return mine == theirs


def render_request(data: dict[str, Any]) -> list[str]:
    """A normalised request as readable lines: one block per message, then tools, settings."""
    lines: list[str] = []
    for index, message in enumerate(data["messages"], 1):
        lines.append(f"[{index}] {message['role']}:")
        lines.extend(f"    {line}" for line in message["content"].splitlines() or [""])
        for call in message.get("tool_calls", ()):
            lines.append(f"    -> {call['name']}({json.dumps(call['args'], sort_keys=True)})")
    for tool in data.get("tools", ()):
        lines.append(f"tool {json.dumps(tool, sort_keys=True)}")
    for key, value in data.get("settings", {}).items():
        lines.append(f"setting {key} = {json.dumps(value, sort_keys=True)}")
    return lines


def request_diff(
    recorded: ModelRequest, sent: ModelRequest, *, ignore_system: bool, step: int
) -> str:
    """A unified diff from the recorded request to the one sent now (context: 2 lines)."""
    mine, theirs = _views(recorded, sent, ignore_system=ignore_system)
    diff = difflib.unified_diff(
        render_request(mine),
        render_request(theirs),
        fromfile=f"recorded request (step {step})",
        tofile="replayed request",
        n=_CONTEXT_LINES,
        lineterm="",
    )
    return "\n".join(diff)


def text_diff(recorded: str, replayed: str, *, what: str) -> str:
    """A unified diff of two texts (a tool's recorded and replayed results)."""
    diff = difflib.unified_diff(
        recorded.splitlines() or [""],
        replayed.splitlines() or [""],
        fromfile=f"recorded {what}",
        tofile=f"replayed {what}",
        n=_CONTEXT_LINES,
        lineterm="",
    )
    return "\n".join(diff)


def request_of(
    messages: Sequence[ChatMessage],
    tools: Sequence[ToolSpec] | None,
    settings: dict[str, Any],
) -> ModelRequest:
    """The request a model call makes, as a case records it."""
    return ModelRequest(
        messages=list(messages), tools=list(tools) if tools else None, settings=settings
    )
