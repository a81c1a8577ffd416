"""The Agents SDK's own parts, called one at a time the way its `Runner` calls them in a turn.

Each helper mirrors what the SDK's run loop does at that point (its `run_internal` modules),
through the SDK's public objects: the agent's model, settings, handoffs and output schema; a
function tool's approval policy, guardrails, hooks and invocation; a handoff's input filter;
the agent's `tool_use_behavior`; and its MCP servers, connected on the loop that uses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agents import (
    Agent,
    AgentHookContext,
    AgentOutputSchema,
    AgentOutputSchemaBase,
    FunctionTool,
    FunctionToolResult,
    Handoff,
    HandoffInputData,
    InputGuardrailTripwireTriggered,
    Model,
    ModelBehaviorError,
    ModelResponse,
    ModelSettings,
    ModelTracing,
    MultiProvider,
    OutputGuardrailTripwireTriggered,
    RunContextWrapper,
    ToolInputGuardrailData,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailData,
    ToolOutputGuardrailTripwireTriggered,
    Usage,
    handoff,
    trace,
)
from agents.tool import Tool, invoke_function_tool
from agents.tool_context import ToolContext
from openai.types.responses import ResponseCompletedEvent, ResponseFunctionToolCall

from agent_core.adapters.openai_agents._items import Item, jsonable, sdk_items, user_item
from agent_core.errors import UserError

__all__ = [
    "AgentDirectory",
    "Turn",
    "call_hook",
    "connect_mcp_servers",
    "disconnect_mcp_servers",
    "filtered_input",
    "hook_context",
    "invoke_tool",
    "model_response",
    "needs_approval",
    "no_tracing",
    "prepare_turn",
    "run_input_guardrails",
    "run_output_guardrails",
    "stops_at",
    "stream_model_response",
    "tools_final_output",
]


@contextlib.contextmanager
def no_tracing() -> Iterator[None]:
    """A disabled trace around the SDK's calls: every span opened inside it is a no-op.

    Scoped, not global (`set_tracing_disabled` would also silence the user's own runs in the
    same process); an agent used as a tool, whose nested `Runner.run` would start a trace of
    its own, finds this one current and records nothing either.
    """
    with trace("Stepwise step", disabled=True):
        yield


class AgentDirectory:
    """The agents a run can reach from its first one, by name (the state names the current one).

    Handoffs are followed from the root: an `Agent` in `handoffs`, or the agent a `handoff()`
    was made for. An agent a custom `Handoff` returns is remembered when it is handed to.
    """

    def __init__(self, root: Agent[Any]) -> None:
        self.root = root
        self._by_name: dict[str, Agent[Any]] = {}
        todo = [root]
        while todo:
            agent = todo.pop(0)
            if agent.name in self._by_name:
                continue
            self._by_name[agent.name] = agent
            todo.extend(_handoff_targets(agent))

    def remember(self, agent: Agent[Any]) -> None:
        """Know `agent` by its name from now on (it was handed to)."""
        self._by_name.setdefault(agent.name, agent)

    def get(self, name: str) -> Agent[Any]:
        """The agent called `name`."""
        agent = self._by_name.get(name)
        if agent is None:
            known = ", ".join(self._by_name)
            raise UserError(
                f"the task's current agent is {name!r}, which {self.root.name!r} no longer "
                f"reaches through its handoffs (it reaches: {known}); restore the handoff in "
                "your code and reload it, or undo the handoff"
            )
        return agent


def _handoff_targets(agent: Agent[Any]) -> list[Agent[Any]]:
    targets = []
    for item in agent.handoffs:
        if isinstance(item, Agent):
            targets.append(item)
        elif isinstance(item, Handoff):
            # `handoff(agent)` keeps a weak reference to its agent (the SDK's own lookup).
            ref = getattr(item, "_agent_ref", None)
            target = ref() if ref is not None else None
            if isinstance(target, Agent):
                targets.append(target)
    return targets


@dataclass
class Turn:
    """What one model request of an agent is made of, resolved as the SDK resolves it."""

    system: str | None
    prompt: Any
    tools: list[Tool]
    handoffs: list[Handoff[Any, Any]]
    output_schema: AgentOutputSchemaBase | None
    settings: ModelSettings
    model: Model

    def function_tool(self, name: str) -> FunctionTool | None:
        """The function tool called `name`, if the agent has one."""
        return _function_tool(self.tools, name)


async def prepare_turn(
    agent: Agent[Any],
    context: RunContextWrapper[Any],
    *,
    provider: MultiProvider,
    used_tools: bool,
) -> Turn:
    """The agent's instructions, tools, handoffs, output schema, settings and model."""
    await connect_mcp_servers(agent)
    settings = agent.model_settings
    if used_tools and agent.reset_tool_choice and settings.tool_choice is not None:
        # As the Runner does: a forced tool choice is dropped once the agent used a tool,
        # or it would call tools forever.
        settings = replace(settings, tool_choice=None)
    model = agent.model if isinstance(agent.model, Model) else provider.get_model(agent.model)
    return Turn(
        system=await agent.get_system_prompt(context),
        prompt=await agent.get_prompt(context),
        tools=await agent.get_all_tools(context),
        handoffs=await handoffs_of(agent, context),
        output_schema=_output_schema(agent),
        settings=settings,
        model=model,
    )


async def model_response(
    turn: Turn, items: list[Item], *, on_delta: Callable[[str], None] | None = None
) -> ModelResponse:
    """The model's reply to one turn; streamed, its text deltas to `on_delta`, when given."""
    model = turn.model
    # The same request either way: the Model interface's two calls take the same arguments.
    args = (
        turn.system,
        sdk_items(items),
        turn.settings,
        turn.tools,
        turn.output_schema,
        turn.handoffs,
        ModelTracing.DISABLED,
    )
    options = {"previous_response_id": None, "conversation_id": None, "prompt": turn.prompt}
    if on_delta is None:
        return await model.get_response(*args, **options)
    try:
        return await stream_model_response(_model_stream(model, args, options), on_delta=on_delta)
    except _EmptyStream:
        # llama-cpp-python's server opens a stream for tools with tool_choice "auto" and ends
        # it before any chunk; the SDK makes that an empty final answer. Nothing was shown,
        # so the same request is asked unstreamed, as Stepwise's own models do.
        return await model.get_response(*args, **options)


class _EmptyStream(Exception):
    """The model's stream ended before its first event: no reply, not an empty one."""


async def _model_stream(
    model: Model, args: tuple[Any, ...], options: dict[str, Any]
) -> AsyncIterator[Any]:
    """The model's `stream_response` events; a typed error when it does not implement it."""
    try:
        events = model.stream_response(*args, **options)
        if not hasattr(events, "__aiter__"):
            raise TypeError(f"stream_response returned {type(events).__name__}")
        async for event in events:
            yield event
    except (NotImplementedError, TypeError) as error:
        if isinstance(error, TypeError) and "stream_response" not in str(error):
            raise  # A TypeError of the model's own, with its own traceback.
        raise _no_stream_response(model, error) from error


def _no_stream_response(model: Model, error: Exception) -> UserError:
    name = type(model).__name__
    return UserError(
        f"the agent's model {name} does not implement stream_response ({error!r}): Stepwise "
        "streams a turn's reply live through the Agents SDK's Model.stream_response, besides "
        "get_response",
        hint=f"implement {name}.stream_response (an async generator of the SDK's response "
        "events ending with a ResponseCompletedEvent), then reload your code",
        remedy="reload_code",
        code="model_stream_unimplemented",
        params={"model": name, "method": "stream_response"},
    )


async def stream_model_response(
    events: AsyncIterator[Any], *, on_delta: Callable[[str], None]
) -> ModelResponse:
    """The `ModelResponse` a model's stream ends with, as the SDK's streamed run builds it.

    Raises:
        _EmptyStream: The stream ended before its first event (`model_response` asks again
            unstreamed).
    """
    final, done_items, seen = None, [], 0
    try:
        async for event in events:
            kind = getattr(event, "type", "")
            seen += not isinstance(event, ResponseCompletedEvent)
            if kind == "response.output_text.delta":
                on_delta(event.delta)
            elif kind == "response.output_item.done":
                done_items.append(event.item)
            elif isinstance(event, ResponseCompletedEvent):
                final = event.response
            elif kind in ("response.incomplete", "response.failed", "error", "response.error"):
                raise ModelBehaviorError(f"the model's stream ended with {kind}")
    finally:
        # Raising mid-stream leaves the generator suspended: close it now, not at collection.
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    if not seen and not (final is not None and final.output):
        # The SDK's chat-completions handler answers a stream without chunks with a bare
        # completed response (no `response.created` before it).
        raise _EmptyStream
    if final is None:
        raise ModelBehaviorError("Model did not produce a final response!")
    usage = (
        Usage(
            requests=1,
            input_tokens=final.usage.input_tokens,
            output_tokens=final.usage.output_tokens,
            total_tokens=final.usage.total_tokens,
        )
        if final.usage is not None
        else Usage(requests=1)
    )
    # Some backends leave the completed response's output empty and send items one by one.
    return ModelResponse(output=final.output or done_items, usage=usage, response_id=final.id)


async def handoffs_of(agent: Agent[Any], context: RunContextWrapper[Any]) -> list[Handoff]:
    """The agent's enabled handoffs, an `Agent` in `handoffs` made one with `handoff()`."""
    found = [item if isinstance(item, Handoff) else handoff(item) for item in agent.handoffs]
    return [h for h in found if await _enabled(h.is_enabled, context, agent)]


async def _enabled(flag: Any, context: RunContextWrapper[Any], agent: Agent[Any]) -> bool:
    if isinstance(flag, bool):
        return flag
    result = flag(context, agent)
    return bool(await result if inspect.isawaitable(result) else result)


def _output_schema(agent: Agent[Any]) -> AgentOutputSchemaBase | None:
    if agent.output_type is None or agent.output_type is str:
        return None
    if isinstance(agent.output_type, AgentOutputSchemaBase):
        return agent.output_type
    return AgentOutputSchema(agent.output_type)


def _function_tool(tools: Sequence[Tool], name: str) -> FunctionTool | None:
    return next((t for t in tools if isinstance(t, FunctionTool) and t.name == name), None)


async def needs_approval(
    tool: FunctionTool | None,
    context: RunContextWrapper[Any],
    call: ResponseFunctionToolCall,
) -> bool:
    """Whether the tool's own `needs_approval` asks a person before this call runs.

    A policy function gets the parsed arguments; arguments it cannot read need approval, as
    the SDK decides.
    """
    policy = tool.needs_approval if tool is not None else False
    if isinstance(policy, bool):
        return policy
    try:
        params = json.loads(call.arguments or "{}")
    except ValueError:
        return True
    if not isinstance(params, dict):
        return True
    decided = policy(context, params, call.call_id)
    return bool(await decided if inspect.isawaitable(decided) else decided)


async def call_hook(agent: Agent[Any], name: str, *args: Any) -> None:
    """Call the agent's own `AgentHooks` method `name`, if it has hooks."""
    if agent.hooks is not None:
        await getattr(agent.hooks, name)(*args)


def hook_context(context: RunContextWrapper[Any], items: list[Item]) -> AgentHookContext[Any]:
    """The context the SDK hands `on_start` / `on_end` hooks."""
    return AgentHookContext(
        context=context.context, usage=context.usage, turn_input=sdk_items(items)
    )


async def run_input_guardrails(
    agent: Agent[Any], items: list[Item], context: RunContextWrapper[Any]
) -> None:
    """The first agent's input guardrails, before its first turn; a tripwire stops the run."""
    for guardrail in agent.input_guardrails:
        result = await guardrail.run(agent, sdk_items(items), context)
        if result.output.tripwire_triggered:
            raise InputGuardrailTripwireTriggered(result)


async def run_output_guardrails(
    agent: Agent[Any], output: Any, context: RunContextWrapper[Any]
) -> None:
    """The final agent's output guardrails, on its final output; a tripwire stops the run."""
    for guardrail in agent.output_guardrails:
        result = await guardrail.run(context, agent, output)
        if result.output.tripwire_triggered:
            raise OutputGuardrailTripwireTriggered(result)


async def invoke_tool(
    tool: FunctionTool,
    *,
    agent: Agent[Any],
    call: ResponseFunctionToolCall,
    context: RunContextWrapper[Any],
) -> Any:
    """Run one call as the SDK runs it: input guardrails, hooks, the tool, output guardrails.

    The tool's own failure handler turns its errors into text for the model (the SDK's
    default); a tool built without one raises, and the step fails with its traceback.
    """
    tool_context = ToolContext.from_agent_context(
        context, call.call_id, tool_call=call, agent=agent
    )
    for guardrail in tool.tool_input_guardrails or ():
        verdict = await guardrail.run(ToolInputGuardrailData(context=tool_context, agent=agent))
        if verdict.behavior["type"] == "raise_exception":
            raise ToolInputGuardrailTripwireTriggered(guardrail=guardrail, output=verdict)
        if verdict.behavior["type"] == "reject_content":
            return verdict.behavior["message"]
    await call_hook(agent, "on_tool_start", tool_context, agent, tool)
    result = await invoke_function_tool(
        function_tool=tool, context=tool_context, arguments=call.arguments
    )
    for guardrail in tool.tool_output_guardrails or ():
        data = ToolOutputGuardrailData(context=tool_context, agent=agent, output=result)
        verdict = await guardrail.run(data)
        if verdict.behavior["type"] == "raise_exception":
            raise ToolOutputGuardrailTripwireTriggered(guardrail=guardrail, output=verdict)
        if verdict.behavior["type"] == "reject_content":
            result = verdict.behavior["message"]
            break
    await call_hook(agent, "on_tool_end", tool_context, agent, tool, result)
    return result


def stops_at(agent: Agent[Any], results: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The tool result the agent's `tool_use_behavior` makes its final output, if it is one.

    Decides "stop_on_first_tool" and `StopAtTools`; a function's decision needs the run
    (`tools_final_output`). `results` are the last turn's, in call order.
    """
    behavior = agent.tool_use_behavior
    if not results or not isinstance(behavior, str | dict):
        return None
    if behavior == "stop_on_first_tool":
        return results[0]
    if isinstance(behavior, dict):
        names = behavior.get("stop_at_tool_names", [])
        return next((r for r in results if r["tool"] in names), None)
    return None


async def tools_final_output(
    agent: Agent[Any],
    results: Sequence[dict[str, Any]],
    *,
    tools: Sequence[Tool],
    context: RunContextWrapper[Any],
) -> tuple[bool, Any]:
    """Whether the last turn's tool results end the run, and with which output."""
    found = stops_at(agent, results)
    if found is not None:
        return True, found["value"]
    behavior = agent.tool_use_behavior
    if not results or not callable(behavior):
        return False, None
    as_sdk = [
        FunctionToolResult(tool=tool, output=r["value"], run_item=None)
        for r in results
        if (tool := _function_tool(tools, r["tool"])) is not None
    ]
    decided = behavior(context, as_sdk)
    decided = await decided if inspect.isawaitable(decided) else decided
    return bool(decided.is_final_output), decided.final_output


async def filtered_input(
    chosen: Handoff[Any, Any], items: list[Item], context: RunContextWrapper[Any]
) -> list[Item]:
    """The input list the next agent starts from: the handoff's input filter applied, if any.

    The whole history is the filter's `input_history` (this adapter keeps no separate run
    items), so filters that prune it (`handoff_filters.remove_all_tools`) work as written.
    """
    if chosen.input_filter is None:
        return items
    data = HandoffInputData(
        input_history=tuple(sdk_items(items)),
        pre_handoff_items=(),
        new_items=(),
        run_context=context,
    )
    result = chosen.input_filter(data)
    result = await result if inspect.isawaitable(result) else result
    history = result.input_history
    kept = [user_item(history)] if isinstance(history, str) else list(history)
    added = result.input_items if result.input_items is not None else result.new_items
    run_items = [*result.pre_handoff_items, *added]
    return jsonable([*kept, *(item.to_input_item() for item in run_items)])


_CONNECTING: dict[int, asyncio.Future[None]] = {}
_HOLDERS: set[asyncio.Task[None]] = set()
"""The tasks holding MCP connections (the loop keeps only weak references to tasks)."""


async def connect_mcp_servers(agent: Agent[Any]) -> None:
    """Connect the agent's MCP servers that are not connected yet, on the running loop.

    The SDK leaves connecting to the caller and wants connect and cleanup in one task. Each
    server gets a task of its own on the runtime's loop, which lives as long as the process:
    it connects, then holds the connection until it is cancelled. A failed connect raises
    here (the step fails) and is tried again by the next step.
    """
    loop = asyncio.get_running_loop()
    for server in agent.mcp_servers:
        if getattr(server, "session", None) is not None:
            continue  # Connected by its owner, or by an earlier step.
        pending = _CONNECTING.get(id(server))
        if pending is None or pending.done():
            pending = loop.create_future()
            _CONNECTING[id(server)] = pending
            holder = loop.create_task(
                _hold_connection(server, pending), name=f"stepwise-mcp-{server.name}"
            )
            _HOLDERS.add(holder)
            holder.add_done_callback(_HOLDERS.discard)
        await asyncio.shield(pending)


async def disconnect_mcp_servers() -> None:
    """Close every MCP connection `connect_mcp_servers` opened (on the loop that opened it)."""
    holders = list(_HOLDERS)
    for holder in holders:
        holder.cancel()
    await asyncio.gather(*holders, return_exceptions=True)


async def _hold_connection(server: Any, ready: asyncio.Future[None]) -> None:
    try:
        await server.connect()
    except Exception as exc:
        ready.set_exception(exc)
        return
    ready.set_result(None)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await server.cleanup()
        raise
