"""The LangGraph adapter's tool-call steps and `interrupt()` answers.

Before a `ToolNode` runs, each call of the model's latest reply is a `tool` step of its own
(input `{"tool", "args", "call_id"}`, as the built-in workers' tool steps), one after the
other: a person may edit it, or, when it waits for approval or a tool breakpoint holds it,
approve or reject it. Each step records its call as decided in the task's record (under
"calls"); the step that records the last one runs the tools node on them all (`run_calls`).
A reply with one call is then one step, the tools node's super-step.

An `interrupt()` is a `human` step (`answer_step`) whose input is the person's answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from agent_core.adapters.langgraph._messages import json_safe, rejection_message
from agent_core.adapters.langgraph._run import GraphThread, as_nodes
from agent_core.errors import UserError
from agent_core.types import (
    INTERRUPT_KEY,
    StepAction,
    StepInput,
    StepKind,
    TaskStep,
    TaskStepOutput,
)
from agent_core.workers.tool_steps import call_step, queues_call, tool_call_of, tool_step_input

__all__ = [
    "ANSWER",
    "CALL",
    "CALLS_FIRST",
    "ROLE",
    "SUPERSTEP",
    "answer_of",
    "answer_step",
    "call_steps",
    "decide",
    "latest_reply",
    "run_calls",
]

ROLE = "langgraph"
"""The `step_state` key saying which of the adapter's steps a step is."""
SUPERSTEP, CALL, ANSWER = "superstep", "call", "answer"

CALLS_FIRST = (
    "The tools node answers the model's tool calls first: add feedback before the model's "
    "next turn."
)
_CALL_NO_SKIP = (
    "The tools node answers every call the model made: approve it, edit it, or reject it "
    "(the model reads your reason)."
)
_ANSWER_NEEDED = "The node waits for your answer: LangGraph resumes it only with one."


def latest_reply(messages: list[Any]) -> AIMessage | None:
    """The model's latest reply: the one whose tool calls a `ToolNode` runs."""
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _id(call: Mapping[str, Any]) -> str:
    return call.get("id") or ""


def call_steps(
    step: TaskStep,
    reply: AIMessage,
    record: dict[str, Any],
    *,
    node: str,
    approval: bool,
    kwargs: dict[str, Any],
) -> list[TaskStep]:
    """One `tool` step per call of `reply`, each after the one before, named for the `node`.

    A call waits for approval (`approval`), or is held by a tool breakpoint (`HOLD_TOOL` in
    `kwargs`), as `tool_steps.call_step` proposes it; the others are plain tool steps.
    """
    record["calls"] = {_id(call): None for call in reply.tool_calls}
    record["proposed"] = {
        _id(call): {"tool": call["name"], "args": call["args"]} for call in reply.tool_calls
    }
    steps: list[TaskStep] = []
    for call in reply.tool_calls:
        args = dict(call["args"])
        if queues_call(call["name"], approval=approval, kwargs=kwargs):
            proposed = call_step(step, call["name"], args, _id(call), approval=approval)
        else:
            proposed = step.get_next_step(
                kind=StepKind.TOOL, input=tool_step_input(call["name"], args, _id(call))
            )
        proposed.name = node
        proposed.step_state.update({ROLE: CALL, "call_id": _id(call), "nodes": [node]})
        proposed.cannot = {StepAction.SKIP: _CALL_NO_SKIP, StepAction.FEEDBACK: CALLS_FIRST}
        if steps:  # One at a time, so that the last decision is the one that runs the node.
            proposed.depends_on = [steps[-1].step_id]
        steps.append(proposed)
    return steps


def decide(step: TaskStep, record: dict[str, Any]) -> TaskStepOutput | None:
    """Record a person's decision on a call; its output while other calls still wait."""
    call = tool_call_of(step)
    decided = record.setdefault("calls", {})
    decided[step.step_state.get("call_id", call.call_id)] = {
        "tool": call.tool,
        "args": call.args,
        "rejected": call.rejected,
    }
    if all(decision is not None for decision in decided.values()):
        return None
    verdict = "to run" if call.rejected is None else f"rejected ({call.rejected})"
    return TaskStepOutput(
        output=f"{call.tool}({json.dumps(call.args)}) {verdict}: the tools node runs the "
        "reply's calls once each is decided",
        task_step=step,
    )


def _as_proposed(record: dict[str, Any]) -> bool:
    """Whether every call was decided as the model proposed it (none edited or rejected)."""
    proposed = record.get("proposed") or {}
    return all(
        decision is not None
        and decision.get("rejected") is None
        and {"tool": decision["tool"], "args": decision["args"]} == proposed.get(call_id)
        for call_id, decision in (record.get("calls") or {}).items()
    )


async def run_calls(
    run: GraphThread, record: dict[str, Any], *, key: str, tool_nodes: set[str]
) -> list[tuple[str, Any]]:
    """Run the tools node on the latest reply's calls as the person decided them.

    Edited calls rewrite the reply's `tool_calls` (as the nodes that wrote it) before the
    node runs. Rejected calls are left out of its run; then the reply gets them back and
    each is answered with a `ToolMessage` holding the reason (as the tools node), so every
    call the model made has its answer. With every call rejected, nothing runs.
    """
    if _as_proposed(record):
        return await run.superstep(None)
    state = await run.state()
    reply = latest_reply(state.values.get(key) or [])
    if reply is None:
        raise UserError("the tools node has no model reply with tool calls to run")
    decided = record.get("calls") or {}
    edited, approved, rejections = [], [], []
    for call in reply.tool_calls:
        decision = decided.get(_id(call)) or {}
        call = {
            **call,
            "name": decision.get("tool", call["name"]),
            "args": decision.get("args", call["args"]),
        }
        edited.append(call)
        if decision.get("rejected") is None:
            approved.append(call)
        else:
            rejections.append(rejection_message(call, decision["rejected"]))
    tools = [node for node in state.next if node in tool_nodes]
    if not approved:
        await run.update([as_nodes({key: rejections}, tools)])
        return [(tools[0], {key: rejections})]
    if approved != reply.tool_calls:
        rewritten = reply.model_copy(update={"tool_calls": approved})
        await run.update([as_nodes({key: [rewritten]}, record.get("ran") or [])])
    updates = await run.superstep(None)
    if rejections:
        restored = reply.model_copy(update={"tool_calls": edited})
        await run.update([as_nodes({key: [restored, *rejections]}, tools)])
        updates.append((tools[0], {key: rejections}))
    return updates


def answer_step(step: TaskStep, state: Any) -> TaskStep:
    """The `human` step that answers the first pending `interrupt()` of `state`."""
    interrupt = state.interrupts[0]
    node = next(
        (task.name for task in state.tasks if any(i.id == interrupt.id for i in task.interrupts)),
        None,
    )
    return step.get_next_step(
        kind=StepKind.HUMAN,
        name=node,
        step_state={
            ROLE: ANSWER,
            "nodes": [node] if node else [],
            INTERRUPT_KEY: json_safe(interrupt.value),
            "interrupt_id": interrupt.id,
        },
        cannot={StepAction.SKIP: _ANSWER_NEEDED, StepAction.FEEDBACK: _ANSWER_NEEDED},
    )


def answer_of(value: StepInput) -> Any:
    """A person's answer to an interrupt: their text, or JSON when it starts with { or [."""
    if isinstance(value, dict):
        return value
    text = (value or "").strip()
    if not text:
        raise UserError("the node asks you something: type your answer as this step's input")
    if text[0] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text
