"""What the tool-calling workers share about a `tool` step: its input, its run, its note.

A tool step's input is the call, `{"tool": name, "args": {...}, "call_id": ...}`, as the
worker proposed it or as a person edited it (possibly as JSON text). A call a person refused
(`AgentRunner.reject_step`) has their reason in `TaskStep.rejection` and does not run. Traces
written before that field existed carry the reason as a `"rejected"` key of the input.

A tool step is queued, rather than run inside the reasoning step, when the worker was built
with `tool_approval=True` (`needs_approval`) or when a tool breakpoint of `run_until` holds the
call (`step_state["held"]`): either way the call waits, proposed and not executed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_core.errors import UserError
from agent_core.events import EventSink, ToolCallFinishedEvent, ToolCallStartedEvent
from agent_core.runtime.breakpoints import HOLD_TOOL
from agent_core.telemetry.hooks import traced_tool_call
from agent_core.tools.base import BaseTool
from agent_core.types import StepInput, StepKind, TaskStep, ToolOutput

__all__ = [
    "ToolStepCall",
    "call_step",
    "call_tool",
    "edit_note",
    "queues_call",
    "run_tool_step_call",
    "tool_call_of",
    "tool_step_input",
    "unknown_tool_output",
]


def queues_call(tool: str, *, approval: bool, kwargs: Mapping[str, Any]) -> bool:
    """Whether a call of `tool` waits as its own step instead of running now."""
    hold = kwargs.get(HOLD_TOOL)
    return approval or bool(hold is not None and hold(tool))


def call_step(
    step: TaskStep,
    tool: str,
    args: dict[str, Any],
    call_id: str | None = None,
    *,
    approval: bool,
) -> TaskStep:
    """The `tool` step that proposes a call: awaiting approval, or held by a breakpoint."""
    return step.get_next_step(
        kind=StepKind.TOOL,
        input=tool_step_input(tool, args, call_id),
        needs_approval=approval,
        step_state={} if approval else {"held": True},
    )


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
    """The call `step`'s input asks for, refused if a person rejected it.

    Raises `UserError` (fix the input) when the input is malformed.

    A person who edits the call may leave out `call_id`; the one the worker proposed is kept,
    since the model needs its result under the id it gave.
    """
    call = _parse(step.input)
    if call is None:
        raise UserError(
            'a tool step\'s input must be a JSON object {"tool": <name>, "args": {...}}; '
            f"got {step.input!r:.200}. Edit the step's input and run it again"
        )
    call_id, rejected = call.call_id, call.rejected
    if step.rejection is not None:
        rejected = step.rejection
    if not call_id and step.edited:
        proposed = _parse(step.proposed_input)
        if proposed is not None and proposed.call_id:
            call_id = proposed.call_id
    return ToolStepCall(call.tool, call.args, call_id, rejected)


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
        tool_name=call.tool,
        args=call.args,
        content=content,
        is_error=True,
        call_id=call.call_id,
        rejected=call.rejected is not None,
    )


def unknown_tool_output(call: ToolStepCall, tools: Mapping[str, BaseTool]) -> ToolOutput:
    """The error the model reads when it called a tool that does not exist."""
    known = ", ".join(tools) or "none"
    return _error_output(
        call, f"Error: there is no tool named {call.tool!r}; the tools are: {known}."
    )


@traced_tool_call
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
