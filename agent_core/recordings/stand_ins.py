"""The replay's stand-ins: a model answered from the recording, and recorded tools.

Both share a `ReplayLog`: the driver tells it which recorded step is being replayed, the
stand-ins check what the agent asks now against it, and the first difference is written there
as the `Divergence` (and a `ReplayDivergedError` stops the step). A lenient log (re-recording
with `--update`) notes the difference and answers from the recording anyway.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from agent_core.llms.base import ChatMessage, ChatResponse, ChatStreamEvent, ToolChoice, ToolSpec
from agent_core.recordings.cases import Case, CaseStep, ModelRequest, RecordedToolCall
from agent_core.recordings.errors import ReplayDivergedError
from agent_core.recordings.requests import normalise_text, request_diff, request_of, same_request
from agent_core.tools.base import BaseTool, ToolMetadata
from agent_core.types import ToolOutput

__all__ = ["Divergence", "DivergenceKind", "RecordedLLM", "RecordedTool", "ReplayLog"]

DivergenceKind = Literal[
    "request", "unrecorded_call", "missing_call", "tool_call", "tool_result", "step", "end", "error"
]


class Divergence(BaseModel):
    """Where a replay first differed from its recording."""

    step: int
    """The recorded step's number (from 1)."""
    step_kind: str
    """The recorded step's kind (`llm`, `tool`, ...)."""
    kind: DivergenceKind
    """What differed: the model `request`, a model call the recording lacks
    (`unrecorded_call`) or has and the replay did not make (`missing_call`), a `tool_call`
    the recording never answered, a `tool_result`, the `step` kind, the `end` of the task,
    or an `error` the recorded step did not have."""
    message: str
    """One line a person reads first."""
    diff: str = ""
    """A unified diff, recorded first (`-`) and replayed second (`+`), when there is one."""

    def __str__(self) -> str:
        return f"{self.message}\n{self.diff}" if self.diff else self.message


@dataclass
class ReplayLog:
    """What the replay is at, and what it found; shared by the driver and the stand-ins."""

    case: Case
    ignore_system_prompt: bool = False
    lenient: bool = False
    """Answer from the recording past a difference, noting it (re-recording)."""
    current: CaseStep | None = None
    calls_this_step: int = 0
    divergence: Divergence | None = None
    noted: list[Divergence] = field(default_factory=list)
    """Differences a lenient log answered past."""
    requests: dict[int, ModelRequest] = field(default_factory=dict)
    """The request each replayed step sent, by recorded step number (tools included)."""
    client_calls: int = 0
    """Model calls answered at a framework's model client (`client_replay`), all steps."""
    _used_calls: set[tuple[int, int]] = field(default_factory=set)

    def begin(self, step: CaseStep) -> None:
        """The driver is about to replay recorded `step`."""
        self.current = step
        self.calls_this_step = 0

    def diverge(self, divergence: Divergence) -> None:
        """Record `divergence`, the first one wins; raise to stop the step unless lenient."""
        if self.lenient:
            self.noted.append(divergence)
            return
        if self.divergence is None:
            self.divergence = divergence
        raise ReplayDivergedError(divergence.message, params={"step": divergence.step})

    def here(self, kind: DivergenceKind, message: str, diff: str = "") -> Divergence:
        """A divergence at the current step."""
        step = self.current
        number, step_kind = (step.number, step.kind) if step else (0, "?")
        return Divergence(step=number, step_kind=step_kind, kind=kind, message=message, diff=diff)

    def recorded_call(self, tool: str, args: dict[str, Any]) -> RecordedToolCall | None:
        """The recorded call of `tool` with `args`: this step's first, then any step's, unused.

        A repeated call keeps its occurrence: the second identical call gets the second
        recorded result.
        """
        wanted = _key(tool, args)
        steps = [self.current] if self.current else []
        steps += [s for s in self.case.steps if s is not self.current]
        for step in steps:
            for index, call in enumerate(step.tool_calls):
                slot = (step.number, index)
                if slot not in self._used_calls and _key(call.tool, call.args) == wanted:
                    self._used_calls.add(slot)
                    return call
        return None


def _key(tool: str, args: dict[str, Any]) -> str:
    return tool + normalise_text(json.dumps(args, sort_keys=True, default=str))


class RecordedLLM:
    """A model that answers each request from the recording while it equals the recorded one.

    It implements the one LLM protocol (`agent_core.llms.base.LLM`): the agent under replay
    gets it wherever it would get the model Stepwise builds.
    """

    def __init__(self, log: ReplayLog, *, model: str = "recorded") -> None:
        self.log = log
        self.model = model

    async def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> ChatResponse:
        """The recorded reply, when `messages` (and tools) equal the recorded request."""
        log = self.log
        settings = {} if tool_choice is None else {"tool_choice": tool_choice}
        sent = request_of(messages, tools, settings)
        step = log.current
        log.calls_this_step += 1
        if step is not None:
            log.requests.setdefault(step.number, sent)
        if step is None or step.request is None or step.reply is None or log.calls_this_step > 1:
            log.diverge(
                log.here(
                    "unrecorded_call",
                    f"step {step.number if step else 0}: the agent called its model where the "
                    "recording has no model call",
                )
            )
            raise ReplayDivergedError("no recorded reply")  # Lenient: nothing to answer with.
        ignore = log.ignore_system_prompt
        if not same_request(step.request, sent, ignore_system=ignore):
            diff = request_diff(step.request, sent, ignore_system=ignore, step=step.number)
            log.diverge(
                log.here(
                    "request",
                    f"step {step.number} ({step.kind}): the model request differs from the "
                    "recording",
                    diff,
                )
            )
        return ChatResponse(message=step.reply.message, usage=step.reply.usage, model=self.model)

    async def stream_chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: ToolChoice | None = None,
    ) -> AsyncIterator[ChatStreamEvent]:
        """The recorded reply as one event (a replay shows no typing)."""
        response = await self.chat(messages, tools=tools, tool_choice=tool_choice)
        yield ChatStreamEvent(delta=response.text, response=response)


class RecordedTool(BaseTool):
    """A tool answered from the recording: the call must be one the recording made."""

    def __init__(self, tool: BaseTool, log: ReplayLog) -> None:
        self._tool = tool
        self._log = log

    @property
    def metadata(self) -> ToolMetadata:
        """The real tool's name, description and schema: the model is told the same."""
        return self._tool.metadata

    async def acall(self, args: dict[str, Any], *, call_id: str = "") -> ToolOutput:
        """The recorded result of this call; a call the recording lacks is a divergence."""
        call = self._log.recorded_call(self.name, args or {})
        if call is None:
            shown = json.dumps(args, sort_keys=True, default=str)
            self._log.diverge(
                self._log.here(
                    "tool_call",
                    f"the agent called {self.name}({shown}), a call the recording never made "
                    "(the tool is answered from the recording: it touches the outside)",
                )
            )
            return await self._tool.acall(args, call_id=call_id)  # Lenient: run it.
        return ToolOutput(
            tool_name=self.name,
            args=dict(args or {}),
            content=call.result,
            is_error=call.is_error,
            call_id=call_id,
        )
