"""What the tool-calling workers share about a `tool` step: its input, its run, its note.

A tool step's input is the call, `{"tool": name, "args": {...}, "call_id": ...}`, as the
worker proposed it or as a person edited it (possibly as JSON text). `AgentRunner.reject_step`
adds a `"rejected"` key holding the person's reason; such a call does not run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_core.errors import UserError
from agent_core.events import EventSink, ToolCallFinishedEvent, ToolCallStartedEvent
from agent_core.tools.base import BaseTool
from agent_core.types import StepInput, TaskStep, ToolOutput

__all__ = [
    "ToolStepCall",
    "call_tool",
    "edit_note",
    "run_tool_step_call",
    "tool_call_of",
    "tool_step_input",
    "unknown_tool_output",
]


@dataclass(frozen=True, slots=True)
class ToolStepCall:
    """The call a tool step asks for, after a person's edits."""

    tool: str
    args: dict[str, Any]
    call_id: str = ""
    rejected: str | None = None
    """The person's reason when they rejected the call (it then does not run)."""


def tool_step_input(tool: str, args: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    """The input of a tool step that calls `tool` with `args` (`call_id` from the model)."""
    call: dict[str, Any] = {"tool": tool, "args": args}
    if call_id is not None:
        call["call_id"] = call_id
    return call


def _as_mapping(value: StepInput) -> Mapping[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, Mapping) else None


def _parse(value: StepInput) -> ToolStepCall | None:
    call = _as_mapping(value)
    if call is None:
        return None
    tool, args, call_id = call.get("tool"), call.get("args", {}), call.get("call_id", "")
    if not isinstance(tool, str) or not isinstance(args, dict) or not isinstance(call_id, str):
        return None
    rejected = call.get("rejected")
    return ToolStepCall(
        tool=tool,
        args=args,
        call_id=call_id,
        rejected=None if rejected is None else str(rejected),
    )


def tool_call_of(step: TaskStep) -> ToolStepCall:
    """The call `step`'s input asks for; `UserError` (fix the input) when it is malformed.

    A person who edits the call may leave out `call_id`; the one the worker proposed is kept,
    since the model needs its result under the id it gave.
    """
    call = _parse(step.input)
    if call is None:
        raise UserError(
            'a tool step\'s input must be a JSON object {"tool": <name>, "args": {...}}; '
            f"got {step.input!r:.200}. Edit the step's input and run it again"
        )
    if not call.call_id and step.edited:
        proposed = _parse(step.proposed_input)
        if proposed is not None and proposed.call_id:
            call = ToolStepCall(call.tool, call.args, proposed.call_id, call.rejected)
    return call


def edit_note(step: TaskStep, call: ToolStepCall) -> str:
    """A note for the model when a person changed the call it asked for, else ""."""
    if call.rejected is not None or not step.edited:
        return ""
    proposed = _parse(step.proposed_input)
    if proposed is None or (proposed.tool, proposed.args) == (call.tool, call.args):
        return ""
    return f"(The user changed this call to {call.tool} with {json.dumps(call.args)}.) "


def _error_output(call: ToolStepCall, content: str) -> ToolOutput:
    return ToolOutput(
        tool_name=call.tool, args=call.args, content=content, is_error=True, call_id=call.call_id
    )


def unknown_tool_output(call: ToolStepCall, tools: Mapping[str, BaseTool]) -> ToolOutput:
    """The error the model reads when it called a tool that does not exist."""
    known = ", ".join(tools) or "none"
    return _error_output(
        call, f"Error: there is no tool named {call.tool!r}; the tools are: {known}."
    )


async def call_tool(
    tool: BaseTool,
    args: dict[str, Any],
    *,
    step_id: str,
    emit: EventSink | None,
    call_id: str = "",
) -> ToolOutput:
    """Run one tool call, reporting it as started and finished when streaming."""
    if emit is not None:
        emit(ToolCallStartedEvent(step_id=step_id, tool_name=tool.name, args=args))
    result = await tool.acall(args, call_id=call_id)
    if emit is not None:
        emit(ToolCallFinishedEvent(step_id=step_id, output=result))
    return result


async def run_tool_step_call(
    call: ToolStepCall,
    tools: Mapping[str, BaseTool],
    *,
    step_id: str,
    emit: EventSink | None,
) -> ToolOutput:
    """What a tool step's call gives: the rejection, an unknown-tool error, or the tool's result."""
    if call.rejected is not None:
        return _error_output(call, f"The user rejected the call of {call.tool}: {call.rejected}")
    tool = tools.get(call.tool)
    if tool is None:
        return unknown_tool_output(call, tools)
    return await call_tool(tool, call.args, step_id=step_id, emit=emit, call_id=call.call_id)
