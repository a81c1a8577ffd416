"""An OpenAI Agents SDK `Agent` as a Stepwise worker: one step per model turn and per tool call.

Why this adapter drives the turn loop itself. The SDK's `Runner` runs a turn whole: the model
call, then every tool it asked for, then the handoff. Its own human-in-the-loop (`needs_approval`,
`RunState.approve/reject`) stops before a call but cannot change the call's arguments, and its
hooks observe a turn without being able to pause it between the model and the tools. So the
adapter runs the loop with the SDK's own parts, one at a time (`_sdk`):

- an `llm` step is one model turn of the current agent: its own `Model.get_response(...)` with
  its instructions, tools (its MCP servers' included), handoffs, output schema and model
  settings, on the input list;
- a `tool` step is one function call, run through the SDK's `FunctionTool` (argument
  validation, failure handler, timeout, tool guardrails, the agent's hooks) with the arguments
  as a person may have edited them. A tool whose `needs_approval` says so, or every tool when
  the worker is built with `tool_approval=True`, waits for a person: approve, edit, or reject
  with a reason the model reads;
- a `delegate` step is a handoff, named for the agent handed to: it invokes the SDK's `Handoff`
  (its `on_handoff`, its input filter), and the next turn is that agent's.

The state is the SDK's own, as JSON in `task.extra_state["openai_agents"]`: the input list
(`RunResult.to_input_list()`'s items) and the current agent's name, with the turn count. A tool
step leaves its result under a key of its own (`"openai_agents.output.<call_id>"`), so calls
that run in parallel never write the same key; the next turn (or the handoff) adds the results to
the input list, in the order the model made the calls. No `Runner` lives across steps: every step
rebuilds what it needs from that JSON and from the agent object.

MCP: the servers in an agent's `mcp_servers` that are not connected yet are connected on first
use, each by a task of its own on the runtime's loop, and stay connected for later steps
(`disconnect_mcp_servers()` closes them); their tools are function tools like the others.

Tracing: each step runs inside the SDK's `trace(..., disabled=True)` and calls the model with
`ModelTracing.DISABLED`, so the SDK records and exports no trace (`_sdk.no_tracing`).

Not supported: a `Runner.run(context=...)` object (tools get a context of None); tools that run on
this machine other than function tools (computer, shell, apply_patch: the step says so);
`RunConfig` options (there is no `Runner`), and session memory (the task is the session).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    ItemHelpers,
    ModelRefusalError,
    ModelResponse,
    MultiProvider,
    RunContextWrapper,
)
from agents.run_config import DEFAULT_MAX_TURNS
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

from agent_core._tokens import estimate_tokens
from agent_core.adapters.openai_agents._items import (
    Item,
    as_chat_messages,
    function_call,
    history_items,
    jsonable,
    output_item,
    output_text,
    text_output_item,
)
from agent_core.adapters.openai_agents._sdk import (
    AgentDirectory,
    Turn,
    call_hook,
    connect_mcp_servers,
    disconnect_mcp_servers,
    filtered_input,
    handoffs_of,
    hook_context,
    invoke_tool,
    model_response,
    needs_approval,
    no_tracing,
    prepare_turn,
    run_input_guardrails,
    run_output_guardrails,
    tools_final_output,
)
from agent_core.adapters.openai_agents._turns import (
    OUTPUT_PREFIX,
    STATE_KEY,
    TurnInput,
    preview_turn,
    state_of,
    take_results,
    turn_input,
    turn_name,
)
from agent_core.effects import current_step
from agent_core.errors import StepError, UserError
from agent_core.events import (
    EventSink,
    TokenDeltaEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from agent_core.llms.base import ChatMessage, Usage
from agent_core.llms.pricing import PriceTable
from agent_core.runtime.breakpoints import HOLD_TOOL
from agent_core.runtime.limits import iteration_limit
from agent_core.types import StepAction, StepKind, Task, TaskStep, TaskStepOutput, ToolOutput
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.tool_steps import edit_note, tool_call_of, tool_step_input

__all__ = [
    "OUTPUT_PREFIX",
    "STATE_KEY",
    "OpenAIAgentsWorker",
    "disconnect_mcp_servers",
    "worker_for",
]

MULTIPLE_HANDOFFS = "Multiple handoffs detected, ignoring this one."
"""The SDK's answer to every handoff call of a turn after its first."""
CANNOT_SKIP_HANDOFF = (
    "the Agents SDK continues a run only through its handoff: skipped, the run would have no "
    "next turn. Edit the handoff's agent or arguments, or undo the turn and steer it"
)
CANNOT_SKIP_TURN = (
    "the Agents SDK's run goes on only from a model turn: skipped, the run would have nothing "
    "to do next. Edit the turn's input (a message the model reads) or undo, and steer it"
)
"""Why a turn's Skip is greyed: a skipped turn leaves no reply, hence no next step."""
_NO_SKIP_TURN = {StepAction.SKIP: CANNOT_SKIP_TURN}
_PRICES = PriceTable()


def worker_for(agent: Agent[Any], *, tool_approval: bool = False) -> OpenAIAgentsWorker:
    """The Stepwise worker for an Agents SDK `Agent` (the adapter contract's entry point)."""
    return OpenAIAgentsWorker(agent, tool_approval=tool_approval)


class OpenAIAgentsWorker(BaseAgentWorker):
    """Steps an Agents SDK `Agent`: a step per model turn, per tool call and per handoff.

    Args:
        agent: The agent a task starts with; the agents its handoffs reach take turns too.
        tool_approval: Make every tool call wait for a person, besides the tools whose own
            `needs_approval` asks for it.
        max_turns: Model turns a task may take, as `Runner.run(max_turns=...)`.
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        tool_approval: bool = False,
        max_turns: int = DEFAULT_MAX_TURNS,
    ) -> None:
        if not isinstance(agent, Agent):
            raise UserError(f"expected an Agents SDK Agent, got {type(agent).__name__}")
        self.agent = agent
        self.tool_approval = tool_approval
        self.max_turns = max_turns
        self._agents = AgentDirectory(agent)
        # The default provider a Runner would use for an agent whose model is a name.
        self._provider = MultiProvider()

    @property
    def keeps_own_conversation(self) -> str:
        """The framework's state holds the conversation, not `Task.memory`."""
        return "the Agents SDK keeps the run's input list itself"

    @property
    def own_model(self) -> str:
        """The first agent's model, as the SDK names it (its default when it names none)."""
        model = self.agent.model
        if model is None:
            return "the Agents SDK's default model"
        if isinstance(model, str):
            return model
        return str(getattr(model, "model", None) or type(model).__name__)

    # ------------------------------------------------------------------ the contract

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The first agent's first turn; its input is the task's question."""
        everything = task.memory.get_all()
        task.extra_state[STATE_KEY] = {
            "agent": self.agent.name,
            "input": history_items(everything[: task.history_length]),
            "turns": 0,
            "users_seen": sum(1 for message in everything if message.role == "user"),
            "used_tools": [],
            "started": None,
        }
        return TaskStep(
            task_id=task.task_id,
            input=task.input,
            kind=StepKind.LLM,
            name=turn_name(self.agent.name, 1),
            cannot=dict(_NO_SKIP_TURN),
        )

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run one model turn, one tool call or one handoff."""
        with no_tracing():
            if step.kind is StepKind.TOOL:
                return await self._run_tool(step, task, kwargs.get("emit"))
            if step.kind is StepKind.DELEGATE:
                return await self._run_handoff(step, task)
            return await self._run_turn(step, task, kwargs)

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """What the current agent's next turn would send, if it ran now."""
        return self.preview_step(TaskStep(task_id=task.task_id), task)

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """The instructions and input list a turn would send; [] for a tool call or handoff."""
        if step.kind in (StepKind.TOOL, StepKind.DELEGATE) or STATE_KEY not in task.extra_state:
            return []
        agent = self._agents.get(state_of(task)["agent"])
        return preview_turn(agent, step, task)

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question and the answers the task adds to the conversation (no tool traffic)."""
        added = task.memory.get_all()[task.history_length :]
        return [
            message
            for message in added
            if message.role == "user" or (message.role == "assistant" and not message.tool_calls)
        ]

    # ------------------------------------------------------------------ a model turn

    async def _run_turn(self, step: TaskStep, task: Task, kwargs: dict[str, Any]) -> TaskStepOutput:
        state = state_of(task)
        agent = self._agents.get(state["agent"])
        context: RunContextWrapper[Any] = RunContextWrapper(context=None)
        fed = turn_input(step, task)
        used_tools = agent.name in state["used_tools"]
        turn = await prepare_turn(agent, context, provider=self._provider, used_tools=used_tools)
        take_results(task, fed)
        stop, final = await tools_final_output(
            agent, fed.results, tools=turn.tools, context=context
        )
        if stop:  # The agent's tool_use_behavior ends the run on a tool's result.
            return await self._finish(step, agent, final, context, fed.items)
        limit = iteration_limit(task.limits, self.max_turns)  # The task's, once a person set it.
        if state["turns"] >= limit:
            raise StepError(
                f"the agent reached its max_turns={limit} without a final output; raise the "
                "task's limit (set_limits(task_id, max_iterations=...), the app's Limits) and "
                "run the step again",
                remedy="raise_limits",
                code="max_iterations",
                params={"limit": limit, "unit": "turn"},
            )
        await self._start_agent(agent, state, context, fed)
        response, sent = await self._ask_model(agent, turn, fed, context, step, kwargs.get("emit"))
        new_items = jsonable(response.to_input_items())
        state["input"] = [*fed.items, *new_items]
        state["turns"] += 1
        for message in as_chat_messages(new_items):
            task.memory.put(message)
        usage = self._usage(turn, response, sent)
        calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
        _refuse_local_calls(response)
        if not calls:
            return await self._answer(
                step, agent, turn, response, context, fed, usage, sent, state["turns"]
            )
        next_steps = await self._call_steps(step, task, agent, turn, calls, context, kwargs)
        text = _reply_text(response)
        return TaskStepOutput(
            output=text or _describe(calls),
            task_step=step,
            next_steps=next_steps,
            thought=text or None,
            usage=usage,
            messages_sent=sent,
        )

    async def _start_agent(
        self,
        agent: Agent[Any],
        state: dict[str, Any],
        context: RunContextWrapper[Any],
        fed: TurnInput,
    ) -> None:
        """The SDK's start of an agent's run: input guardrails (first agent), `on_start`."""
        if state["turns"] == 0 and agent is self.agent:
            await run_input_guardrails(agent, fed.items, context)
        if state.get("started") != agent.name:
            await call_hook(agent, "on_start", hook_context(context, fed.items), agent)
            state["started"] = agent.name

    @staticmethod
    async def _ask_model(
        agent: Agent[Any],
        turn: Turn,
        fed: TurnInput,
        context: RunContextWrapper[Any],
        step: TaskStep,
        emit: EventSink | None,
    ) -> tuple[ModelResponse, list[ChatMessage]]:
        """The model's reply, streamed to `emit` when someone listens, and what it was sent."""
        sent = as_chat_messages(fed.items, system=turn.system)
        running = current_step()
        if running is not None:  # Kept with the step even if the call fails.
            running.messages_sent = sent
        await call_hook(agent, "on_llm_start", context, agent, turn.system, fed.items)
        on_delta = None if emit is None else _token_deltas(emit, step.step_id)
        response = await model_response(turn, fed.items, on_delta=on_delta)
        await call_hook(agent, "on_llm_end", context, agent, response)
        return response, sent

    async def _answer(
        self,
        step: TaskStep,
        agent: Agent[Any],
        turn: Turn,
        response: ModelResponse,
        context: RunContextWrapper[Any],
        fed: TurnInput,
        usage: Usage,
        sent: list[ChatMessage],
        turns: int,
    ) -> TaskStepOutput:
        """A turn without function calls: the final output, or another turn, as the SDK decides.

        Its plain-text agent ends with the last message's text, "" when there is none; an
        agent with an output type, or hosted tools that ran without a message, goes again.
        """
        messages = [item for item in response.output if isinstance(item, ResponseOutputMessage)]
        refusal = ItemHelpers.extract_refusal(messages[-1]) if messages else None
        if refusal:
            raise ModelRefusalError(refusal)
        text = ItemHelpers.extract_text(messages[-1]) if messages else None
        schema = turn.output_schema
        structured = schema is not None and not schema.is_plain_text()
        hosted_only = not messages and any(
            getattr(item, "type", "").endswith("_call") for item in response.output
        )
        if hosted_only or (structured and not text):
            again = step.get_next_step(name=turn_name(agent.name, turns + 1), cannot=_NO_SKIP_TURN)
            return TaskStepOutput(
                output=text or "",
                task_step=step,
                next_steps=[again],
                usage=usage,
                messages_sent=sent,
            )
        final = (
            schema.validate_json(text or "") if schema is not None and structured else text or ""
        )
        done = await self._finish(step, agent, final, context, fed.items)
        return done.model_copy(update={"usage": usage, "messages_sent": sent})

    @staticmethod
    async def _finish(
        step: TaskStep,
        agent: Agent[Any],
        final: Any,
        context: RunContextWrapper[Any],
        items: list[Item],
    ) -> TaskStepOutput:
        await run_output_guardrails(agent, final, context)
        await call_hook(agent, "on_end", hook_context(context, items), agent, final)
        shown = final if isinstance(final, str) else json.dumps(jsonable(final))
        return TaskStepOutput(output=shown, task_step=step, is_last=True)

    async def _call_steps(
        self,
        step: TaskStep,
        task: Task,
        agent: Agent[Any],
        turn: Turn,
        calls: list[ResponseFunctionToolCall],
        context: RunContextWrapper[Any],
        kwargs: dict[str, Any],
    ) -> list[TaskStep]:
        """A step per tool call, then the handoff or the agent's next turn, waiting on them."""
        state = state_of(task)
        by_tool = {h.tool_name: h for h in turn.handoffs}
        handoffs = [call for call in calls if call.name in by_tool]
        tool_steps = [
            await self._tool_step(step, turn, call, context, kwargs)
            for call in calls
            if call.name not in by_tool
        ]
        if tool_steps and agent.name not in state["used_tools"]:
            state["used_tools"].append(agent.name)
        for extra in handoffs[1:]:
            state["input"].append(text_output_item(extra.call_id, MULTIPLE_HANDOFFS))
            task.memory.put(_tool_message(extra.call_id, extra.name, MULTIPLE_HANDOFFS))
        waits_on = [s.step_id for s in tool_steps]
        if handoffs:
            call, target = handoffs[0], by_tool[handoffs[0].name]
            follow = step.get_next_step(
                kind=StepKind.DELEGATE,
                input={
                    "agent": target.agent_name,
                    "tool": call.name,
                    "args": _args(call),
                    "call_id": call.call_id,
                },
                name=target.agent_name,
                depends_on=waits_on,
                cannot={StepAction.SKIP: CANNOT_SKIP_HANDOFF},
            )
        else:
            name = turn_name(agent.name, state["turns"] + 1)
            follow = step.get_next_step(name=name, depends_on=waits_on, cannot=_NO_SKIP_TURN)
        return [*tool_steps, follow]

    async def _tool_step(
        self,
        step: TaskStep,
        turn: Turn,
        call: ResponseFunctionToolCall,
        context: RunContextWrapper[Any],
        kwargs: dict[str, Any],
    ) -> TaskStep:
        """The step of one call: waiting for approval, held by a breakpoint, or ready to run."""
        asks = self.tool_approval or await needs_approval(
            turn.function_tool(call.name), context, call
        )
        hold = kwargs.get(HOLD_TOOL)
        held = not asks and hold is not None and bool(hold(call.name))
        return step.get_next_step(
            kind=StepKind.TOOL,
            input=tool_step_input(call.name, _args(call), call.call_id),
            name=call.name,
            needs_approval=asks,
            step_state={"held": True} if held else {},
        )

    @staticmethod
    def _usage(turn: Turn, response: ModelResponse, sent: list[ChatMessage]) -> Usage:
        reported = response.usage
        if reported.input_tokens or reported.output_tokens:
            usage = Usage(
                prompt_tokens=reported.input_tokens, completion_tokens=reported.output_tokens
            )
        else:  # A stream from a server that is not OpenAI's carries none unless asked.
            replied = jsonable(response.to_input_items())
            usage = Usage(
                prompt_tokens=estimate_tokens("".join(m.content for m in sent)),
                completion_tokens=estimate_tokens(json.dumps(replied)),
                estimated=True,
            )
        model_name = getattr(turn.model, "model", None)
        return _PRICES.with_cost(model_name, usage) if isinstance(model_name, str) else usage

    # ------------------------------------------------------------------ a tool call

    async def _run_tool(self, step: TaskStep, task: Task, emit: EventSink | None) -> TaskStepOutput:
        agent = self._agents.get(state_of(task)["agent"])
        call = tool_call_of(step)
        sdk_call = function_call(call.call_id, call.tool, call.args)
        context: RunContextWrapper[Any] = RunContextWrapper(context=None)
        is_error = True
        if call.rejected is not None:
            value: Any = f"The user rejected the call of {call.tool}: {call.rejected}"
        else:
            await connect_mcp_servers(agent)
            tools = await agent.get_all_tools(context)
            tool = next(
                (t for t in tools if isinstance(t, FunctionTool) and t.name == call.tool), None
            )
            if tool is None:
                known = ", ".join(t.name for t in tools) or "none"
                value = f"Error: there is no tool named {call.tool!r}; the tools are: {known}."
            else:
                if emit is not None:
                    started = ToolCallStartedEvent(
                        step_id=step.step_id, tool_name=call.tool, args=call.args
                    )
                    emit(started)
                value = await invoke_tool(tool, agent=agent, call=sdk_call, context=context)
                is_error = False
        item = output_item(sdk_call, value)
        note = edit_note(step, call)
        if note and isinstance(item.get("output"), str):
            item["output"] = note + item["output"]  # The model learns its call was changed.
        text = output_text(item)
        task.extra_state[OUTPUT_PREFIX + call.call_id] = {
            "item": item,
            "tool": call.tool,
            "value": jsonable(value),
        }
        task.memory.put(_tool_message(call.call_id, call.tool, text))
        result = ToolOutput(
            tool_name=call.tool,
            args=call.args,
            content=text,
            is_error=is_error,
            call_id=call.call_id,
            rejected=call.rejected is not None,
            raw_output=jsonable(value),
        )
        if emit is not None and not is_error:
            emit(ToolCallFinishedEvent(step_id=step.step_id, output=result))
        return TaskStepOutput(output=text, task_step=step, tool_calls=[result])

    # ------------------------------------------------------------------ a handoff

    async def _run_handoff(self, step: TaskStep, task: Task) -> TaskStepOutput:
        state = state_of(task)
        agent = self._agents.get(state["agent"])
        context: RunContextWrapper[Any] = RunContextWrapper(context=None)
        asked = _handoff_input(step)
        offered = await handoffs_of(agent, context)
        chosen = next((h for h in offered if h.agent_name == asked["agent"]), None)
        if chosen is None:
            names = ", ".join(h.agent_name for h in offered) or "none"
            raise UserError(
                f"{agent.name} has no handoff to {asked['agent']!r}; it can hand off to: {names}. "
                "Edit the step's agent and run it again"
            )
        take_results(task, turn_input(step, task, answering=asked["call_id"], with_users=False))
        sdk_call = function_call(asked["call_id"], chosen.tool_name, asked["args"])
        new_agent: Agent[Any] = await chosen.on_invoke_handoff(context, sdk_call.arguments)
        self._agents.remember(new_agent)
        transfer = chosen.get_transfer_message(new_agent)
        state["input"].append(output_item(sdk_call, transfer))
        task.memory.put(_tool_message(asked["call_id"], chosen.tool_name, transfer))
        await call_hook(agent, "on_handoff", context, new_agent, agent)
        state["input"] = await filtered_input(chosen, state["input"], context)
        state["agent"] = new_agent.name
        follow = step.get_next_step(
            name=turn_name(new_agent.name, state["turns"] + 1), cannot=_NO_SKIP_TURN
        )
        return TaskStepOutput(
            output=f"{agent.name} handed off to {new_agent.name}",
            task_step=step,
            next_steps=[follow],
        )


def _token_deltas(emit: EventSink, step_id: str) -> Callable[[str], None]:
    """A stream's text deltas, as the step's `TokenDeltaEvent`s."""
    return lambda delta: emit(TokenDeltaEvent(step_id=step_id, delta=delta))


def _args(call: ResponseFunctionToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        # Shown to the person as it came; the SDK's own validation answers the model.
        return {"arguments": call.arguments}
    return args if isinstance(args, dict) else {"arguments": args}


def _handoff_input(step: TaskStep) -> dict[str, Any]:
    value = step.input
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, dict) or not isinstance(value.get("agent"), str):
        raise UserError(
            'a handoff step\'s input must be a JSON object {"agent": <name>, "args": {...}}; '
            f"got {step.input!r:.200}. Edit the step's input and run it again"
        )
    proposed = step.proposed_input if isinstance(step.proposed_input, dict) else {}
    call_id = value.get("call_id") or proposed.get("call_id") or ""
    args = value.get("args") if isinstance(value.get("args"), dict) else {}
    return {"agent": value["agent"], "args": args, "call_id": call_id}


def _tool_message(call_id: str, name: str, content: str) -> ChatMessage:
    return ChatMessage(role="tool", tool_call_id=call_id, name=name, content=content)


def _reply_text(response: ModelResponse) -> str:
    return "".join(
        ItemHelpers.extract_text(item) or ""
        for item in response.output
        if isinstance(item, ResponseOutputMessage)
    )


def _describe(calls: list[ResponseFunctionToolCall]) -> str:
    # A reply made only of calls has no text; this is what the step shows instead.
    return "\n".join(f"{call.name}({call.arguments})" for call in calls)


_LOCAL_CALLS = {
    "computer_call": "computer",
    "local_shell_call": "local shell",
    "shell_call": "shell",
    "apply_patch_call": "apply_patch",
    "custom_tool_call": "custom",
}


def _refuse_local_calls(response: ModelResponse) -> None:
    """Stop on a call of a tool that runs here but is not a function tool (not stepped yet)."""
    for item in response.output:
        kind = getattr(item, "type", "")
        if kind in _LOCAL_CALLS:
            raise UserError(
                f"the model called a {_LOCAL_CALLS[kind]} tool; Stepwise steps function tools, "
                "handoffs and hosted tools of an Agents SDK agent, not this kind yet. Give the "
                "agent a function tool instead, or run it with the SDK's Runner"
            )
