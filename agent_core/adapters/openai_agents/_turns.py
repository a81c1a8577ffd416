"""The adapter's state in `task.extra_state`, and the input list a turn sends, built from it.

One function (`turn_input`) builds what the next turn sends, for the run and for the preview
alike, so "What the model sees next" cannot drift from what the step sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents import Agent, RunContextWrapper

from agent_core.adapters.openai_agents._items import (
    Item,
    as_chat_messages,
    text_output_item,
    unanswered_calls,
    user_item,
)
from agent_core.adapters.openai_agents._sdk import stops_at
from agent_core.errors import UserError
from agent_core.llms.base import ChatMessage
from agent_core.runtime.loop import on_runtime_thread, run_sync
from agent_core.types import Task, TaskStep

__all__ = [
    "OUTPUT_PREFIX",
    "SKIPPED",
    "STATE_KEY",
    "TurnInput",
    "preview_turn",
    "state_of",
    "take_results",
    "turn_input",
    "turn_name",
]

STATE_KEY = "openai_agents"
"""`task.extra_state[STATE_KEY]`: `agent` (the current agent's name), `input` (the input list,
JSON), `turns` (model turns taken), `users_seen` (user messages of `task.memory` already in the
input list), `used_tools` (agents that called a tool), `started` (the agent `on_start` ran for)."""
OUTPUT_PREFIX = "openai_agents.output."
"""`task.extra_state[OUTPUT_PREFIX + call_id]`: a tool step's result until a turn takes it:
`{"item": <function_call_output item>, "tool": <name>, "value": <the tool's return, JSON>}`."""
SKIPPED = "This call did not run: the user skipped it."
"""What the model reads for a call whose step a person skipped."""


def state_of(task: Task) -> dict[str, Any]:
    """The adapter's state of `task` (the live dict: a step's changes go into it)."""
    state = task.extra_state.get(STATE_KEY)
    if not isinstance(state, dict):
        raise UserError(
            f"task {task.task_id} was not started by the Agents SDK adapter (no "
            f"extra_state[{STATE_KEY!r}]); create a new task with this agent"
        )
    return state


def turn_name(agent: str, number: int) -> str:
    """A turn's name as the Stepper shows it: the agent taking it, and which turn it is."""
    return f"{agent} turn {number}"


@dataclass
class TurnInput:
    """What a turn (or a handoff) adds to the input list before it runs."""

    items: list[Item]
    """The whole input list the turn sends."""
    results: list[dict[str, Any]] = field(default_factory=list)
    """The last turn's tool results it takes, in call order."""
    taken: list[str] = field(default_factory=list)
    """The `extra_state` keys of those results."""
    memory: list[ChatMessage] = field(default_factory=list)
    """What it puts into `task.memory` (the step's input, skipped calls' notes)."""
    users_seen: int = 0


def turn_input(
    step: TaskStep, task: Task, *, answering: str | None = None, with_users: bool = True
) -> TurnInput:
    """The input list with the tool results, a person's messages and the step's input added.

    Every call the last turn made gets its result, after the calls and before anything else,
    in the model's order (a skipped call: `SKIPPED`); `answering` is a call the step itself
    answers (a handoff's). Then user messages a person put into `task.memory` (feedback),
    then the step's own input (the task's question, or a person's edit). Nothing is changed.
    """
    state = state_of(task)
    fed = TurnInput(items=list(state["input"]), users_seen=state["users_seen"])
    for call in unanswered_calls(state["input"]):
        call_id = call["call_id"]
        if call_id == answering:
            continue
        key = OUTPUT_PREFIX + call_id
        pending = task.extra_state.get(key)
        if pending is None:
            fed.items.append(text_output_item(call_id, SKIPPED))
            fed.memory.append(
                ChatMessage(role="tool", tool_call_id=call_id, name=call["name"], content=SKIPPED)
            )
            continue
        fed.items.append(pending["item"])
        fed.results.append(pending)
        fed.taken.append(key)
    if with_users:
        _add_user_messages(step, task, fed)
    return fed


def _add_user_messages(step: TaskStep, task: Task, fed: TurnInput) -> None:
    users = [message for message in task.memory.get_all() if message.role == "user"]
    fed.items.extend(user_item(message.content) for message in users[fed.users_seen :])
    fed.users_seen = len(users)
    if step.input is None or (isinstance(step.input, str) and not step.input.strip()):
        return
    if not isinstance(step.input, str):
        raise UserError("a turn's input is the text of a user message (or empty)")
    fed.items.append(user_item(step.input))
    fed.memory.append(ChatMessage(role="user", content=step.input))
    fed.users_seen += 1


def take_results(task: Task, fed: TurnInput) -> None:
    """Make `fed` the task's input list: results taken, messages put into memory."""
    state = state_of(task)
    state["input"] = fed.items
    state["users_seen"] = fed.users_seen
    for key in fed.taken:
        task.extra_state.pop(key, None)
    for message in fed.memory:
        task.memory.put(message)


def preview_turn(agent: Agent[Any], step: TaskStep, task: Task) -> list[ChatMessage]:
    """What the turn `step` would send `agent`'s model now ([] if its tools end the run)."""
    fed = turn_input(step, task)
    if stops_at(agent, fed.results) is not None:
        return []
    return as_chat_messages(fed.items, system=_instructions_now(agent))


def _instructions_now(agent: Agent[Any]) -> str | None:
    """The agent's instructions, as `Agent.get_system_prompt` gives them, from sync code."""
    if agent.instructions is None or isinstance(agent.instructions, str):
        return agent.instructions
    if on_runtime_thread():  # A sync wait here would block the loop the answer needs.
        return "(instructions from a function: shown when the turn runs)"
    return run_sync(agent.get_system_prompt(RunContextWrapper(context=None)), name="preview")
