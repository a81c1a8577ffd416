"""Model requests as a replay compares them: normalised, rendered as text, and diffed.

Two requests are equal when their messages, tools and recorded settings are, after the
parts that change from run to run without changing the reply are blanked: tool-call ids,
Stepwise's task and step ids (a workspace path holds the task's), UUIDs and ISO timestamps.
Both sides are redacted as a saved case is, so a key the recording lost does not differ.

A replay compares the same texts again and again (each step resends the conversation so far),
so it runs inside `normalising()`: one `Normaliser` reads the environment's secrets once and
normalises each distinct text at most once, recorded or sent. Two texts equal as they are need
no normalising at all (normalising is a function of the text): most of a replayed request is
the recording's text verbatim. Outside `normalising()`, each call reads the environment afresh.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from agent_core.llms.base import ChatMessage, ToolSpec
from agent_core.recordings._secrets import environment_secrets, redact_text
from agent_core.recordings.cases import ModelRequest
from agent_core.types import REQUEST_TOOLS_KEY, TaskStep

__all__ = [
    "Normaliser",
    "normalise_text",
    "normalising",
    "render_request",
    "request_diff",
    "request_of",
    "request_tools",
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


class Normaliser:
    """Normalises texts and compares requests with one set of secrets, each text once.

    The JSON values and views it gives may be shared between calls: read them, never change
    them.

    Args:
        secrets: The values to redact (default: `environment_secrets()`, read now).
    """

    def __init__(self, secrets: Sequence[str] | None = None) -> None:
        self.secrets = list(environment_secrets() if secrets is None else secrets)
        self._texts: dict[str, str] = {}
        self._json: dict[str, Any] = {}

    def text(self, text: str) -> str:
        """`text` redacted, with ids and timestamps blanked (`<id>`, `<time>`)."""
        found = self._texts.get(text)
        if found is None:
            redacted = redact_text(text, self.secrets)
            found = self._texts[text] = _TIMES.sub("<time>", _IDS.sub("<id>", redacted))
        return found

    def json(self, value: Any) -> Any:
        """JSON `value` with each of its texts normalised (keys sorted)."""
        dumped = json.dumps(value, sort_keys=True, default=str)
        found = self._json.get(dumped)
        if found is None:
            found = self._json[dumped] = json.loads(self.text(dumped))
        return found

    def same(self, recorded: ModelRequest, sent: ModelRequest, *, ignore_system: bool) -> bool:
        """Whether the views of both requests are equal, without building them.

        Message by message, the raw texts first: equal raw texts have equal normal forms.
        """
        mine = _messages(recorded, ignore_system)
        theirs = _messages(sent, ignore_system)
        if len(mine) != len(theirs):
            return False
        if not all(map(self._same_message, mine, theirs)):
            return False
        return self._extras(recorded, recorded) == self._extras(sent, recorded)

    def views(
        self, recorded: ModelRequest, sent: ModelRequest, *, ignore_system: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both requests as compared: only what the recording holds (a store keeps no tools)."""
        return (
            self._comparable(recorded, recorded, ignore_system),
            self._comparable(sent, recorded, ignore_system),
        )

    def _comparable(
        self, request: ModelRequest, recorded: ModelRequest, ignore_system: bool
    ) -> dict[str, Any]:
        messages = [self._message(m) for m in _messages(request, ignore_system)]
        return {"messages": messages, **self._extras(request, recorded)}

    def _extras(self, request: ModelRequest, recorded: ModelRequest) -> dict[str, Any]:
        """The tools and settings of `request` that `recorded` holds."""
        data: dict[str, Any] = {}
        if recorded.tools is not None:
            data["tools"] = [self.json(t.model_dump()) for t in request.tools or []]
        if recorded.settings:
            data["settings"] = {key: request.settings.get(key) for key in sorted(recorded.settings)}
        return data

    def _same_message(self, mine: ChatMessage, theirs: ChatMessage) -> bool:
        """`_message(mine) == _message(theirs)`, normalising only texts that differ as they are."""
        if mine.role != theirs.role or (mine.name or None) != (theirs.name or None):
            return False
        if mine.content != theirs.content and self.text(mine.content) != self.text(theirs.content):
            return False
        if not (mine.tool_calls or theirs.tool_calls):
            return True
        # Arguments always go through JSON: 1 == 1.0 == True in Python, not in the request.
        return self._calls(mine) == self._calls(theirs)

    def _calls(self, message: ChatMessage) -> list[dict[str, Any]]:
        return [
            {"name": call.name, "args": self.json(call.args)} for call in message.tool_calls or ()
        ]

    def _message(self, message: ChatMessage) -> dict[str, Any]:
        data: dict[str, Any] = {"role": message.role, "content": self.text(message.content)}
        if message.tool_calls:
            data["tool_calls"] = self._calls(message)
        if message.name:
            data["name"] = message.name
        return data


def _messages(request: ModelRequest, ignore_system: bool) -> list[ChatMessage]:
    return [m for m in request.messages if not (ignore_system and m.role == "system")]


_ACTIVE: ContextVar[Normaliser | None] = ContextVar("stepwise_normaliser", default=None)


@contextlib.contextmanager
def normalising(normaliser: Normaliser | None = None) -> Iterator[Normaliser]:
    """Within: this module's functions use `normaliser` (default: a new one), as a replay does.

    The environment's secrets are those read when the normaliser was made.
    """
    active = normaliser if normaliser is not None else Normaliser()
    token = _ACTIVE.set(active)
    try:
        yield active
    finally:
        _ACTIVE.reset(token)


def _normaliser() -> Normaliser:
    return _ACTIVE.get() or Normaliser()


def normalise_text(text: str) -> str:
    """`text` redacted, with ids and timestamps blanked (`<id>`, `<time>`)."""
    return _normaliser().text(text)


def same_request(recorded: ModelRequest, sent: ModelRequest, *, ignore_system: bool) -> bool:
    """Whether `sent` asks the model what `recorded` asked, as far as the recording says."""
    return _normaliser().same(recorded, sent, ignore_system=ignore_system)


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
    mine, theirs = _normaliser().views(recorded, sent, ignore_system=ignore_system)
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


def request_tools(step: TaskStep) -> list[ToolSpec] | None:
    """The tools a framework's agent offered its model at `step`, as its adapter kept them.

    None when the adapter keeps none (the store holds a request's messages only): the replay
    then compares no tools, rather than taking "not recorded" for "no tools".
    """
    kept = step.step_state.get(REQUEST_TOOLS_KEY)
    if not isinstance(kept, list):
        return None
    return [ToolSpec.model_validate(tool) for tool in kept]
