"""The demo model's tool plans: which call comes next given the results so far, and its reply.

A plan is stages of calls; each stage's calls are built from the results before it, so an
edited call's real result flows into the next call. A rejected or failed call ends the plan,
and the plan's answer is written from the results there are. The reply speaks the protocol
the request uses: native tool calls when tools are offered, else the ReAct text protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_core.llms._demo_conversation import Conversation, ToolResult
from agent_core.llms.base import ChatMessage, ChatResponse, ToolCall

__all__ = [
    "Call",
    "ToolPlan",
    "call_text",
    "clip",
    "expression",
    "operands",
    "play_plan",
    "react_action",
    "react_answer",
    "stop_text",
]

_OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_DONE_THOUGHT = "I can answer without using any more tools."


@dataclass(frozen=True, slots=True)
class Call:
    """A call the plan makes, with the thought a ReAct reply gives for it."""

    tool: str
    args: dict[str, Any]
    thought: str


Stage = Callable[[Sequence[ToolResult]], list[Call] | None]
"""The calls of a stage, from the results before it; None when they cannot be built."""


@dataclass(frozen=True, slots=True)
class ToolPlan:
    stages: tuple[Stage, ...]
    answer: Callable[[Sequence[ToolResult]], str]
    """The answer from the results (all of them, or up to the one that stopped the plan)."""


def clip(text: str, limit: int = 200) -> str:
    """`text` on one line, cut to `limit` characters (a reply quotes it, never whole)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _number(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def operands(result: ToolResult) -> tuple[str, Any, Any] | None:
    """An arithmetic call's operator and operands, or None for any other call."""
    if result.tool not in _OPERATORS or set(result.args) != {"a", "b"}:
        return None
    return _OPERATORS[result.tool], result.args["a"], result.args["b"]


def call_text(result: ToolResult) -> str:
    """The call as the model names it: `multiply(121, 4)`."""
    if operands(result) is not None:
        return f"{result.tool}({_number(result.args['a'])}, {_number(result.args['b'])})"
    return f"{result.tool}({clip(json.dumps(result.args, ensure_ascii=False))})"


def expression(result: ToolResult) -> str:
    """An arithmetic call as an expression (`121 * 4`), any other as a call."""
    found = operands(result)
    if found is None:
        return call_text(result)
    operator, a, b = found
    return f"{_number(a)} {operator} {_number(b)}"


def stop_text(result: ToolResult) -> str:
    """Why a call gave nothing to build on: the person's rejection, or the error."""
    if result.rejected is not None:
        return f'you rejected my call of {call_text(result)} ("{clip(result.rejected)}")'
    return f"{call_text(result)} failed: {clip(result.text, 300)}"


def next_calls(plan: ToolPlan, results: Sequence[ToolResult]) -> list[Call]:
    """The calls still to make; none once the plan is done or cannot go on."""
    done = 0
    for stage in plan.stages:
        calls = stage(results[:done])
        if calls is None:
            return []
        taken = results[done : done + len(calls)]
        if any(result.stopped for result in taken):
            return []
        if len(taken) < len(calls):
            return calls[len(taken) :]
        done += len(calls)
    return []


def _edit_notes(conversation: Conversation) -> list[str]:
    return [
        f"You changed my call to {call_text(r)}; it returned {clip(r.text)}."
        for r in conversation.results
        if r.fresh and r.edited and not r.stopped
    ]


def _feedback_notes(conversation: Conversation) -> list[str]:
    return [
        f'You wrote "{clip(text)}"; as the scripted demo model I cannot act on requests in '
        "words, only on my tool calls' results and your edits and rejections of those calls."
        for text in conversation.feedback
    ]


def react_action(thought: str, tool: str, args: dict[str, Any]) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(args)}"


def react_answer(text: str, thought: str = _DONE_THOUGHT) -> str:
    return f"Thought: {thought}\nAnswer: {text}"


def play_plan(
    plan: ToolPlan, conversation: Conversation, *, native: bool, model: str
) -> str | ChatResponse:
    """The next reply: the plan's next call (or calls), else its answer."""
    edits, feedback = _edit_notes(conversation), _feedback_notes(conversation)
    calls = next_calls(plan, conversation.results)
    if not calls:
        answer = "\n\n".join([plan.answer(conversation.results), *feedback])
        return answer if native else react_answer(answer, " ".join([*edits, _DONE_THOUGHT]))
    if not native:  # The ReAct protocol makes one call per reply.
        first = calls[0]
        return react_action(" ".join([*edits, *feedback, first.thought]), first.tool, first.args)
    made = conversation.calls_made
    tool_calls = tuple(
        ToolCall(id=f"c{made + n}", name=call.tool, args=call.args)
        for n, call in enumerate(calls, start=1)
    )
    text = " ".join([*edits, *feedback])
    return ChatResponse(
        message=ChatMessage(role="assistant", content=text, tool_calls=tool_calls), model=model
    )
