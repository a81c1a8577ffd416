"""One Stepwise step of a LlamaIndex agent workflow: re-enter from its Context, run to a gate.

A LlamaIndex agent (`FunctionAgent`, `ReActAgent`, `AgentWorkflow`) is a Workflow whose steps
pass events: `AgentSetup` to `run_agent_step` (one model call), `ToolCall` to `call_tool` (one
tool call). Stepwise runs the user's workflow as a copy whose class overrides those two steps
with a *gate* in front: the step waits (`ctx.wait_for_event`, the Workflows runtime's own way to
park a step) for a `StepwiseGo` naming it, and announces itself with a `StepwiseGate` event.

When every step is parked the runtime says so (`WorkflowIdleEvent`), and the run is saved
with `Context.to_dict()` and cancelled: a parked step is saved as a waiter and replayed from
its start on the next run, so nothing past a gate ran. The next Stepwise step restores the
Context, waits for the run to settle (the waiters re-registered), opens one gate (or answers
the question an `InputRequiredEvent` asked) and runs to the next idle. So a step is exactly one
model call or one tool call, and the saved Context is the whole state: undo, fork and restart
go back to it.

`Context.to_dict()` leaves out the chat memory (LlamaIndex marks it unserialisable); its
messages are saved beside the Context and put back in a fresh `ChatMemoryBuffer`.
"""

# No `from __future__ import annotations`: the Workflows `@step` decorator reads the event
# types from the gated steps' annotations at class creation.

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.agent.workflow import AgentWorkflow, BaseWorkflowAgent
from llama_index.core.agent.workflow.workflow_events import (
    AgentInput,
    AgentOutput,
    AgentSetup,
    AgentStream,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.llms import ChatMessage as LlamaMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.workflow import Context
from pydantic import Field
from workflows.decorators import step
from workflows.events import (
    Event,
    HumanResponseEvent,
    InputRequiredEvent,
    StopEvent,
    WorkflowIdleEvent,
)

__all__ = ["Gate", "RunOutcome", "StepwiseGate", "StepwiseGo", "run_once", "stepped_copy"]

_OPENED = "stepwise_opened_gates"
"""Context store key: the gates already opened, so a step replayed past one does not wait again
(a tool that waits for a person replays its whole step once answered)."""

_MODEL_CALLS = "stepwise_model_calls"
"""Context store key: model calls made so far, to name each model call's gate uniquely."""


class StepwiseGate(Event):
    """A gated step waits: a model call (`kind="llm"`) or a tool call (`kind="tool"`)."""

    gate: str
    kind: str
    agent: str = ""
    tool: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    call_id: str = ""


class StepwiseGo(Event):
    """Opens the gate it names; `args`, when given, replace a tool call's arguments."""

    gate: str
    args: dict[str, Any] | None = None


@dataclass
class Gate:
    """A parked model or tool call, as recorded between steps (JSON)."""

    gate: str
    kind: str
    agent: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""

    @classmethod
    def of(cls, event: StepwiseGate) -> "Gate":
        """The record of a gate the run announced."""
        return cls(event.gate, event.kind, event.agent, event.tool, dict(event.args), event.call_id)


@dataclass
class RunOutcome:
    """What one run from a gate to the next idle did, and where it stopped."""

    context: dict[str, Any] | None = None
    """The saved Context (None once the workflow stopped)."""
    memory: list[dict[str, Any]] = field(default_factory=list)
    gates: list[Gate] = field(default_factory=list)
    """Gates announced during the run, in order."""
    question: dict[str, Any] | None = None
    """An `InputRequiredEvent` the run raised, as JSON."""
    sent: list[LlamaMessage] = field(default_factory=list)
    """What the model call got (`AgentInput`)."""
    reply: AgentOutput | None = None
    results: list[ToolCallResult] = field(default_factory=list)
    result: Any = None
    stopped: bool = False


async def _wait_at_gate(ctx: Context, gate: StepwiseGate) -> StepwiseGo | None:
    opened: list[str] = await ctx.store.get(_OPENED, default=[])
    if gate.gate in opened:
        return None
    go = await ctx.wait_for_event(
        StepwiseGo,
        waiter_event=gate,
        waiter_id=gate.gate,
        requirements={"gate": gate.gate},
        timeout=None,
    )
    await ctx.store.set(_OPENED, [*opened, gate.gate])
    return go


def _gated(cls: type) -> type:
    """A subclass of the workflow class `cls` whose model and tool steps wait at a gate."""

    class Gated(cls):  # type: ignore[misc, valid-type]
        @step
        async def run_agent_step(self, ctx: Context, ev: AgentSetup) -> AgentOutput:
            calls = await ctx.store.get(_MODEL_CALLS, default=0)
            gate = StepwiseGate(gate=f"llm:{calls}", kind="llm", agent=ev.current_agent_name)
            await _wait_at_gate(ctx, gate)
            await ctx.store.set(_MODEL_CALLS, calls + 1)
            return await super().run_agent_step(ctx, ev)

        @step
        async def call_tool(self, ctx: Context, ev: ToolCall) -> ToolCallResult:
            gate = StepwiseGate(
                gate=f"tool:{ev.tool_id}",
                kind="tool",
                tool=ev.tool_name,
                args=dict(ev.tool_kwargs),
                call_id=ev.tool_id,
            )
            go = await _wait_at_gate(ctx, gate)
            if go is not None and go.args is not None:
                ev = ToolCall(tool_name=ev.tool_name, tool_kwargs=go.args, tool_id=ev.tool_id)
            return await super().call_tool(ctx, ev)

    Gated.__name__ = Gated.__qualname__ = f"Stepwise{cls.__name__}"
    return Gated


_GATED: dict[type, type] = {}


def stepped_copy(workflow: Any) -> Any:
    """A shallow copy of the user's agent workflow whose model and tool calls wait at gates."""
    cls = type(workflow)
    if cls not in _GATED:
        _GATED[cls] = _gated(cls)
    copied = copy.copy(workflow)  # The user's object keeps its class; tools and LLM are shared.
    copied.__class__ = _GATED[cls]
    return copied


def _llm_of(workflow: Any) -> Any:
    if isinstance(workflow, AgentWorkflow):
        return workflow.agents[workflow.root_agent].llm
    assert isinstance(workflow, BaseWorkflowAgent)
    return workflow.llm


async def run_once(
    workflow: Any,
    *,
    context: dict[str, Any] | None,
    memory: list[dict[str, Any]],
    start: str | None = None,
    go: StepwiseGo | None = None,
    answer: Any = None,
    on_delta: Callable[[str], None] | None = None,
) -> RunOutcome:
    """Run the gated `workflow` from its saved `context` through one gate, to the next idle.

    Args:
        workflow: A `stepped_copy`.
        context: The saved Context, or None to start a run with `start` (the user message).
        memory: The chat memory's messages saved beside the Context.
        start: The user message of a new run.
        go: The gate to open once the run settles; for a new run, its first gate is opened.
        answer: A person's answer to the run's `InputRequiredEvent` (sent instead of `go`).
        on_delta: Where streamed model text goes.
    """
    outcome = RunOutcome()
    if context is None:
        handler = workflow.run(user_msg=start)
    else:
        handler = workflow.run(ctx=Context.from_dict(workflow, context))
        buffer = ChatMemoryBuffer.from_defaults(
            chat_history=[LlamaMessage.model_validate(m) for m in memory], llm=_llm_of(workflow)
        )
        await handler.ctx.store.set("memory", buffer)
    sent_go = False
    try:
        async for event in handler.stream_events(expose_internal=True):
            if isinstance(event, WorkflowIdleEvent):
                if sent_go:
                    break
                handler.ctx.send_event(_opening(go, answer, outcome))
                sent_go = True
                outcome.gates = []  # Announced before the gate opened: known already.
            elif isinstance(event, StopEvent):
                outcome.result, outcome.stopped = event.result, True
                break
            else:
                _note(event, outcome, on_delta if sent_go else None)
        if outcome.stopped:
            outcome.result = await handler
            return outcome
        outcome.context, outcome.memory = await _save(handler.ctx)
        return outcome
    finally:
        if not outcome.stopped:
            await handler.cancel_run()


def _opening(go: StepwiseGo | None, answer: Any, outcome: RunOutcome) -> Event:
    if answer is not None:
        # An event takes any fields; its class declares none, so pyright knows no `response`.
        return HumanResponseEvent(response=answer)  # pyright: ignore[reportCallIssue]
    if go is not None:
        return go
    llm = next(gate for gate in outcome.gates if gate.kind == "llm")
    return StepwiseGo(gate=llm.gate)


def _note(event: Event, outcome: RunOutcome, on_delta: Callable[[str], None] | None) -> None:
    if isinstance(event, StepwiseGate):
        outcome.gates.append(Gate.of(event))
    elif isinstance(event, InputRequiredEvent):
        dumped = event.model_dump(mode="json")
        # Events keep fields given at construction in `_data` (a dict-like model).
        outcome.question = {**dumped.pop("_data", {}), **dumped}
    elif isinstance(event, AgentInput):
        outcome.sent = list(event.input)
    elif isinstance(event, AgentOutput):
        outcome.reply = event
    elif isinstance(event, ToolCallResult):
        outcome.results.append(event)
    elif isinstance(event, AgentStream) and on_delta is not None and event.delta:
        on_delta(event.delta)


async def _save(ctx: Context) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with warnings.catch_warnings():
        # LlamaIndex warns that the memory is left out; it is saved beside the Context.
        warnings.simplefilter("ignore")
        saved = ctx.to_dict()
    memory = await ctx.store.get("memory", default=None)
    messages = memory.get_all() if memory is not None else []
    return saved, [m.model_dump(mode="json") for m in messages]
