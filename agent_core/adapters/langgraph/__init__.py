"""A compiled LangGraph graph as a Stepwise worker: one step per super-step.

How it maps (LangGraph 1.x):

- **State.** The graph runs on a copy of the user's compiled graph (the user's object is not
  changed) whose checkpointer is Stepwise's (`_saver.StepwiseSaver`): for one step
  a thread is loaded from `task.extra_state["langgraph"]["saved"]`, the step runs on it, and
  the thread's latest checkpoint goes back there as JSON (LangGraph's own serde, base64). The
  runner snapshots extra_state before every step, so **undo** is "go back one checkpoint", the
  undone step stays on its branch, and a restarted app continues from the stored checkpoint.
  A checkpointer or static `interrupt_before/after` compiled into the user's graph is not used:
  Stepwise stops before every super-step itself.
- **Steps.** Each step runs exactly one super-step (`astream(..., interrupt_after="*")`) and is
  named for the node(s) that ran ("agent", "tools", "agent + search"). The upcoming step is
  named for `get_state().next`. A node's kind is the same upcoming and run, step after step:
  `tool` for a `ToolNode`, `llm` for a node whose function holds a chat model (or that was
  seen calling one: it stays `llm`), else `custom`; a step of several nodes is `llm` if one is.
  The answer to a node's `interrupt()` is a `human` step of its own.
- **Steering.** The first step's input is the task's text: for a graph with a "messages" state
  it becomes the user's `HumanMessage` (after the thread's earlier turns), a JSON object of
  input keys is the graph's input as is, and a graph with one input key gets the text there.
  A later step's input is a state update, applied with `update_state` as the nodes that ran
  last, before its super-step runs (so their edges are taken again on the new state): a JSON
  object of state keys, or, for a "messages" graph, text, added as a `HumanMessage`. None (the
  default) changes nothing. A person's feedback in `task.memory` joins "messages" the same way.
- **`interrupt()`.** A node that calls `interrupt(value)` ends its step with a `human` step,
  named for the node, whose `step_state["interrupt"]` holds the value (JSON) and whose input is
  the person's answer: running it resumes the node with `Command(resume={id: answer})`. Text
  that starts with `{` or `[` is parsed as JSON.
- **Tool calls.** Before a prebuilt `ToolNode` runs, each call of the model's latest
  `AIMessage` is a `tool` step named for the node, input `{"tool", "args", "call_id"}`, one
  after the other; a reply with one call (the usual case) is then one step, the tools node's
  super-step. A person may edit a call; with `tool_approval`, or when a tool breakpoint holds
  it (`HOLD_TOOL`), it waits to be approved or rejected. The step of the last call runs the
  tools node with them all: edited calls rewrite the `AIMessage`'s `tool_calls`
  (`update_state`) before the node runs, and a rejected call is answered with a `ToolMessage`
  carrying the reason, so the model reads it. Tools are recognised in `ToolNode`s reading
  the "messages" key; a node of one's own that runs tools is a plain super-step.
- **What the model sees next** is the "messages" state the next node gets, with the step's
  input and any feedback applied (`[]` for tool calls, answers to an interrupt and graphs
  without "messages"); a node's own system prompt is not known before it runs. A step's
  `messages_sent` and usage come from LangChain's callbacks: the messages the node's first
  chat-model call got, and every call's token counts.
- **Memory.** The "messages" state is mirrored into `task.memory` as `ChatMessage`s, by message
  id: a new message is appended, one replaced in place (an edited tool call) is replaced; a
  message removed from the state stays in memory.
- **Cannot** (`TaskStep.cannot`): a super-step cannot be skipped (the nodes after it come from
  what it writes) nor a tool call (the tools node answers every call: reject it instead);
  feedback cannot go before a tools node (the model's calls are answered first) nor into a
  graph without "messages"; an interrupt's step needs an answer.
- **Errors.** An exception in a node propagates with its traceback; the step fails and the
  task keeps the checkpoint from before it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableBinding
from langgraph.constants import START
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Command, StateUpdate

from agent_core.adapters.langgraph._calls import (
    ANSWER,
    CALL,
    CALLS_FIRST,
    ROLE,
    SUPERSTEP,
    answer_of,
    answer_step,
    call_steps,
    decide,
    latest_reply,
    run_calls,
)
from agent_core.adapters.langgraph._messages import (
    as_messages,
    describe,
    from_langchain,
    json_object,
    new_tool_outputs,
    text_of,
    to_langchain,
)
from agent_core.adapters.langgraph._run import GraphThread, ModelCalls, as_nodes
from agent_core.adapters.langgraph._saver import StepwiseSaver
from agent_core.adapters.langgraph._topology import (
    STATE_AFTER,
    TOPOLOGY,
    readable_state,
    topology,
)
from agent_core.errors import UserError
from agent_core.events import TokenDeltaEvent
from agent_core.llms.base import ChatMessage
from agent_core.types import (
    StepAction,
    StepInput,
    StepKind,
    StepStatus,
    Task,
    TaskStep,
    TaskStepOutput,
    ToolOutput,
)
from agent_core.workers.base import BaseAgentWorker

__all__ = ["MESSAGES", "STATE_KEY", "LangGraphWorker", "worker_for"]

STATE_KEY = "langgraph"
"""The `task.extra_state` key of the graph's state (its checkpoint) and the mirror's record."""

MESSAGES = "messages"
"""The state key of the conversation (`MessagesState`'s), mirrored into memory."""

_NO_SKIP = (
    "A LangGraph super-step cannot be left out: the nodes after it come from what it writes. "
    "Edit its input (a state update) instead."
)
_NO_MESSAGES = (
    "This graph's state has no messages to add feedback to: edit the step's input (a JSON "
    "object of state keys) instead."
)


class LangGraphWorker(BaseAgentWorker):
    """A compiled LangGraph graph stepped one super-step at a time (see the module's notes).

    Args:
        graph: The user's compiled graph (`StateGraph.compile()`); it is not changed.
        tool_approval: Make every tool call of a `ToolNode` wait for a person's approval.
    """

    def __init__(self, graph: Pregel, *, tool_approval: bool = False) -> None:
        self.graph = graph
        self.tool_approval = tool_approval
        self._saver = StepwiseSaver()
        self._graph = graph.copy(
            update={
                "checkpointer": self._saver,
                "interrupt_before_nodes": [],
                "interrupt_after_nodes": [],
            }
        )
        # copy() rebuilds the graph from its constructor's fields, which leave out the
        # deserialisation allow-list of strict msgpack mode.
        self._graph._serde_allowlist = getattr(graph, "_serde_allowlist", None)
        self._tool_nodes = {
            name
            for name, node in graph.nodes.items()
            if isinstance(node.bound, ToolNode)
            and getattr(node.bound, "_messages_key", MESSAGES) == MESSAGES
        }
        self._messages = MESSAGES if MESSAGES in graph.channels else None
        self._input_keys = _input_keys(graph)
        self._models = _chat_models(graph)
        self._node_kinds = _node_kinds(graph, self._tool_nodes)
        self._topology = topology(graph)
        self._streams = True
        """False once a chat model failed on a forced stream: its replies are not streamed."""

    @property
    def keeps_own_conversation(self) -> str:
        """The framework's state holds the conversation, not `Task.memory`."""
        return "LangGraph keeps the graph state in its checkpoints"

    @property
    def own_model(self) -> str:
        """The chat models the graph's nodes call: the app's model is not used."""
        return ", ".join(self._models) or "the one its nodes call"

    def topology(self) -> dict[str, Any]:
        """The graph's nodes and edges, START and END included, as JSON (`_topology`)."""
        return json.loads(json.dumps(self._topology))

    # ------------------------------------------------------------------ the first step

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The first super-step: the task's text becomes the graph's input."""
        nodes = self._first_nodes(task)
        kind, name, cannot = self._upcoming(nodes, {})
        return TaskStep(
            task_id=task.task_id,
            input=task.input,
            kind=kind,
            name=name,
            cannot=cannot,
            step_state={ROLE: SUPERSTEP, "nodes": list(nodes)},
        )

    def _first_nodes(self, task: Task) -> tuple[str, ...]:
        """The nodes the input starts, to name the first step; () when that cannot be told."""
        thread = self._saver.open(None)
        try:
            graph_input = self._graph_input(task.input, task, [], {"mirrored": {}})
            run = GraphThread(self._graph, thread)
            run.update_now([[StateUpdate(graph_input, START)]])
            return tuple(run.state_now().next)
        except Exception:  # The step itself will say what is wrong with the input.
            return ()
        finally:
            self._saver.close(thread)

    def _graph_input(
        self,
        value: StepInput,
        task: Task,
        feedback: list[BaseMessage],
        record: dict[str, Any],
    ) -> Any:
        """The graph's input for the task's text (or a person's JSON), as the notes say."""
        if isinstance(value, dict):
            return value
        text = value or ""
        parsed = json_object(text)
        if parsed is not None and set(parsed) <= set(self._input_keys):
            return parsed
        if self._messages is not None:
            history = [
                to_langchain(message, id=uuid.uuid4().hex)
                for message in task.memory.get_all()[: task.history_length]
            ]
            record["mirrored"].update({m.id: i for i, m in enumerate(history)})
            prompt = HumanMessage(content=text, id=uuid.uuid4().hex)
            return {self._messages: [*history, prompt, *feedback]}
        if len(self._input_keys) == 1:
            return {self._input_keys[0]: text}
        keys = ", ".join(self._input_keys) or "none"
        raise UserError(
            f"this graph takes a JSON object of its input keys ({keys}), not text: edit the "
            "step's input, e.g. {\"" + (self._input_keys or ["key"])[0] + '": ...}'
        )

    # ------------------------------------------------------------------ running a step

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run one super-step (or record a tool call's decision; see the module's notes).

        Streaming tokens to a watcher makes LangGraph stream every chat model. A model whose
        server ends that stream empty (llama-cpp-python with tools) fails with LangChain's
        "No generations found in stream": the step runs again unstreamed, from the same
        checkpoint, and this graph's models are not streamed again.
        """
        try:
            return await self._arun_step(step, task, kwargs)
        except ValueError as error:
            # LangChain raises a bare ValueError: its text is all that tells this case apart.
            if not (kwargs.get("emit") and self._streams and _no_generations(error)):
                raise
            self._streams = False
            return await self._arun_step(step, task, kwargs)

    async def _arun_step(
        self, step: TaskStep, task: Task, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        record = _record_of(task)
        # Once per task, so a task read without its code (finished, imported) draws it too.
        record.setdefault(TOPOLOGY, self._topology)
        role = step.step_state.get(ROLE, SUPERSTEP)
        if role == CALL:
            waiting = decide(step, record)
            if waiting is not None:
                task.extra_state[STATE_KEY] = record
                return waiting
        thread = self._saver.open(record.get("saved"))
        try:
            return await self._run(step, task, record, thread, kwargs)
        finally:
            self._saver.close(thread)

    async def _run(
        self,
        step: TaskStep,
        task: Task,
        record: dict[str, Any],
        thread: str,
        kwargs: dict[str, Any],
    ) -> TaskStepOutput:
        calls = ModelCalls()
        tokens = _token_sink(step, kwargs) if self._streams else None
        run = GraphThread(self._graph, thread, calls=calls, tokens=tokens)
        role = step.step_state.get(ROLE, SUPERSTEP)
        if role == CALL:
            assert self._messages is not None  # Calls wait in "messages" graphs only.
            updates = await run_calls(run, record, key=self._messages, tool_nodes=self._tool_nodes)
        elif role == ANSWER:
            answer = {step.step_state["interrupt_id"]: answer_of(step.input)}
            updates = await run.superstep(Command(resume=answer))
        elif record.get("saved") is None:
            feedback = self._feedback(task, record)
            updates = await run.superstep(self._graph_input(step.input, task, feedback, record))
        else:
            await run.update(self._steering(step, task, record))
            updates = await run.superstep(None)
        state = await run.outcome()
        # The checkpoint this step leaves, readable on its card (Studio's per-step state).
        step.step_state[STATE_AFTER] = readable_state(state.values)
        ran = _unique(node for node, _ in updates)
        messages = self._mirror(state, task, record, replaced=run.updated)
        record["saved"] = self._saver.dump(thread)
        record["ran"] = list(ran) or record.get("ran", [])
        record["next"] = list(state.next)
        record.pop("calls", None)
        record.pop("proposed", None)
        ran_here = ran or _interrupted(state)
        self._learn(ran_here, record, called_model=calls.count > 0)
        next_steps, is_last = self._next_steps(step, state, record, kwargs)
        task.extra_state[STATE_KEY] = record
        self._rename(step, ran_here, record)
        return TaskStepOutput(
            output=self._output_text(updates, state),
            task_step=step,
            next_steps=next_steps,
            is_last=is_last,
            thought=_thought(updates, self._messages),
            tool_calls=self._tool_outputs(updates, messages),
            usage=calls.usage,
            messages_sent=[from_langchain(m) for m in calls.sent or []],
            notes=calls.notes,
        )

    def _steering(
        self, step: TaskStep, task: Task, record: dict[str, Any]
    ) -> list[list[StateUpdate]]:
        """The state updates to apply before the super-step: feedback, then the step's input."""
        ran = record.get("ran") or []
        supersteps = []
        feedback = self._feedback(task, record)
        if feedback and self._messages is not None:
            supersteps.append(as_nodes({self._messages: feedback}, ran))
        update = self._state_update(step)
        if update is not None:
            supersteps.append(as_nodes(update, ran))
        return supersteps

    def _state_update(self, step: TaskStep) -> dict[str, Any] | None:
        """The person's state update in `step`'s input (None: no change)."""
        value = step.input
        if isinstance(value, dict):
            return value
        text = (value or "").strip()
        if not text:
            return None
        parsed = json_object(text)
        if parsed is not None:
            return parsed
        before_tools = any(n in self._tool_nodes for n in step.step_state.get("nodes", []))
        if self._messages is not None and not before_tools:
            return {self._messages: [HumanMessage(content=text)]}
        raise UserError(
            "this step's input is a state update: a JSON object of state keys ("
            + (", ".join(self._input_keys) or "the graph's")
            + "), applied before the step runs"
        )

    def _feedback(self, task: Task, record: dict[str, Any]) -> list[BaseMessage]:
        """A person's messages put into memory since the last step (`add_feedback`).

        Each is recorded in `record` as mirrored already, at its place in memory.
        """
        seen = int(record.get("memory_seen", task.history_length))
        feedback = []
        for place, message in enumerate(task.memory.get_all()[seen:], start=seen):
            if message.role == "user":
                feedback.append(HumanMessage(content=message.content, id=uuid.uuid4().hex))
                record["mirrored"][feedback[-1].id] = place
        return feedback

    # ------------------------------------------------------------- what comes next

    def _next_steps(
        self, step: TaskStep, state: Any, record: dict[str, Any], kwargs: dict[str, Any]
    ) -> tuple[list[TaskStep], bool]:
        if state.interrupts:
            return [answer_step(step, state)], False
        nodes = _unique(state.next)
        if not nodes:
            return [], True
        reply = self._reply_to_run(nodes, state)
        if reply is not None:
            tools = next(node for node in nodes if node in self._tool_nodes)
            steps = call_steps(
                step, reply, record, node=tools, approval=self.tool_approval, kwargs=kwargs
            )
            return steps, False
        kind, name, cannot = self._upcoming(nodes, record)
        following = step.get_next_step(
            kind=kind,
            name=name,
            cannot=cannot,
            step_state={ROLE: SUPERSTEP, "nodes": list(nodes)},
        )
        return [following], False

    def _upcoming(
        self, nodes: tuple[str, ...], record: dict[str, Any]
    ) -> tuple[StepKind, str | None, dict]:
        """The kind, name and refused actions of a super-step that runs `nodes`."""
        kind = self._kind_of(nodes, record)
        cannot = {StepAction.SKIP: _NO_SKIP}
        if self._messages is None:
            cannot[StepAction.FEEDBACK] = _NO_MESSAGES
        elif any(node in self._tool_nodes for node in nodes):
            cannot[StepAction.FEEDBACK] = CALLS_FIRST
        return kind, " + ".join(nodes) or None, cannot

    def _reply_to_run(self, nodes: tuple[str, ...], state: Any) -> AIMessage | None:
        """The model's reply whose tool calls a `ToolNode` among `nodes` runs next, if any."""
        if self._messages is None or not any(node in self._tool_nodes for node in nodes):
            return None
        reply = latest_reply(state.values.get(self._messages) or [])
        return reply if reply is not None and reply.tool_calls else None

    # ------------------------------------------------------------------ what it shows

    def _mirror(
        self, state: Any, task: Task, record: dict[str, Any], *, replaced: bool
    ) -> list[Any]:
        """Bring memory in line with the state's messages; give the state's messages.

        A message memory lacks is appended. After a state update (`replaced`), a message
        replaced in place (same id: an edited tool call) is replaced in memory too. The
        record maps each message id to its place in memory.
        """
        if self._messages is None or not isinstance(state.values, dict):
            record["memory_seen"] = len(task.memory)
            return []
        messages = [m for m in state.values.get(self._messages) or [] if isinstance(m, BaseMessage)]
        places: dict[str, int] = record["mirrored"]
        new = [m for m in messages if not m.id or m.id not in places]
        if replaced:
            self._replace_changed(messages, task, places)
        for message in new:
            places[message.id or uuid.uuid4().hex] = len(task.memory)
            task.memory.put(from_langchain(message))
        record["memory_seen"] = len(task.memory)
        return messages

    @staticmethod
    def _replace_changed(messages: list[Any], task: Task, places: dict[str, int]) -> None:
        current = task.memory.get_all()
        changed = False
        for message in messages:
            where = places.get(message.id) if message.id else None
            if where is None or not task.history_length <= where < len(current):
                continue
            mirrored = from_langchain(message)
            if current[where] != mirrored:
                current[where], changed = mirrored, True
        if changed:
            task.memory.set(current)

    def _output_text(self, updates: list[tuple[str, Any]], state: Any) -> str:
        lines = [self._update_text(node, update, len(updates) > 1) for node, update in updates]
        for interrupt in state.interrupts:
            lines.append(f"asks: {text_of(interrupt.value)}")
        return "\n".join(line for line in lines if line) or "(no change)"

    def _update_text(self, node: str, update: Any, several: bool) -> str:
        prefix = f"[{node}] " if several else ""
        if update is None:
            return f"{prefix}(no change)"
        if isinstance(update, dict) and self._messages in update:
            new = as_messages(update[self._messages])
            rest = {k: v for k, v in update.items() if k != self._messages}
            text = "\n".join(describe(m) for m in new)
            if rest:
                text = f"{text}\n{text_of(rest)}" if text else text_of(rest)
            return prefix + text
        return prefix + text_of(update)

    def _tool_outputs(self, updates: list[tuple[str, Any]], history: list[Any]) -> list[ToolOutput]:
        if self._messages is None:
            return []
        new = [
            message
            for node, update in updates
            if node in self._tool_nodes and isinstance(update, dict)
            for message in as_messages(update.get(self._messages))
        ]
        return new_tool_outputs(new, history)

    def _kind_of(self, nodes: tuple[str, ...], record: dict[str, Any]) -> StepKind:
        """The kind of a super-step of `nodes`: the same before it runs, after, and next time.

        It changed with what one run did (llm upcoming, custom once run, say), so one node
        read as three kinds; only a model call seen where none was expected changes it, once.
        """
        if not nodes:  # The first step's nodes could not be told.
            return StepKind.LLM if self._messages is not None else StepKind.CUSTOM
        seen = set(record.get("model_nodes", []))
        kinds = {StepKind.LLM if n in seen else self._node_kinds.get(n) for n in nodes}
        if kinds == {StepKind.TOOL}:
            return StepKind.TOOL
        return StepKind.LLM if StepKind.LLM in kinds else StepKind.CUSTOM

    def _learn(self, nodes: tuple[str, ...], record: dict[str, Any], *, called_model: bool) -> None:
        """Remember nodes seen calling a model whose functions hold none we could find."""
        if not called_model or self._kind_of(nodes, record) is not StepKind.CUSTOM:
            return
        seen = record.setdefault("model_nodes", [])
        seen.extend(n for n in nodes if n not in self._tool_nodes and n not in seen)

    def _rename(self, step: TaskStep, nodes: tuple[str, ...], record: dict[str, Any]) -> None:
        """Name a super-step for the nodes that ran, and give it their kind."""
        if step.step_state.get(ROLE, SUPERSTEP) != SUPERSTEP or not nodes:
            return
        step.name = " + ".join(nodes)
        step.kind = self._kind_of(nodes, record)

    # ------------------------------------------------------------------ previews

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """The "messages" state the step's nodes get, with its input and feedback applied.

        A step that has run already (a page that read the task just before it completed)
        gets the state as it is: its input belongs to the checkpoint before it.
        """
        role = step.step_state.get(ROLE, SUPERSTEP)
        if self._messages is None or role != SUPERSTEP or step.kind is StepKind.TOOL:
            return []
        record = _record_of(task)
        if step.status not in (StepStatus.UPCOMING, StepStatus.FAILED, StepStatus.RUNNING):
            step = step.model_copy(update={"input": None})
        feedback = self._feedback(task, record)
        if record.get("saved") is None:
            graph_input = self._graph_input(step.input, task, feedback, record)
            messages = graph_input.get(self._messages) if isinstance(graph_input, dict) else None
            return [from_langchain(m) for m in as_messages(messages)]
        thread = self._saver.open(record["saved"])
        try:
            run = GraphThread(self._graph, thread)
            run.update_now(self._steering(step, task, record))
            values = run.state_now().values
        finally:
            self._saver.close(thread)
        messages = values.get(self._messages) or []
        return [from_langchain(m) for m in messages if isinstance(m, BaseMessage)]


def worker_for(obj: Any, *, tool_approval: bool) -> LangGraphWorker:
    """The worker for a compiled LangGraph graph (`agent_core.adapters.adapt` calls it)."""
    return LangGraphWorker(obj, tool_approval=tool_approval)


# ---------------------------------------------------------------------- helpers


def _chat_models(graph: Pregel) -> list[str]:
    """The chat models the graph's node functions hold, by name, as far as can be told.

    A node is a function; the model it calls is a variable of its closure or a global it
    names (`model = ChatOpenAI(...)`). Models reached otherwise are not found.
    """
    names: list[str] = []
    for node in graph.nodes.values():
        func = getattr(node.bound, "func", None) or getattr(node.bound, "afunc", None)
        for value in _referenced(func):
            name = _model_name(value)
            if name and name not in names:
                names.append(name)
    return names


def _node_kinds(graph: Pregel, tool_nodes: set[str]) -> dict[str, StepKind]:
    """Each node's kind from its code: a `ToolNode`'s `tool`, a chat model's holder's `llm`."""
    kinds = {}
    for name, node in graph.nodes.items():
        func = getattr(node.bound, "func", None) or getattr(node.bound, "afunc", None)
        if name in tool_nodes:
            kinds[name] = StepKind.TOOL
        elif any(_model_name(value) for value in _referenced(func)):
            kinds[name] = StepKind.LLM
        else:
            kinds[name] = StepKind.CUSTOM
    return kinds


def _referenced(func: Any) -> list[Any]:
    values = []
    for cell in getattr(func, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # A cell not filled yet.
            continue
    code, scope = getattr(func, "__code__", None), getattr(func, "__globals__", {})
    values.extend(scope[name] for name in (code.co_names if code else ()) if name in scope)
    return values


def _model_name(value: Any) -> str | None:
    while isinstance(value, RunnableBinding):
        value = value.bound
    if not isinstance(value, BaseChatModel):
        return None
    for attr in ("model_name", "model"):
        name = getattr(value, attr, None)
        if isinstance(name, str) and name:
            return name
    return value._llm_type


def _token_sink(step: TaskStep, kwargs: dict[str, Any]) -> Callable[[str], None] | None:
    """Where a step's streamed text goes: `TokenDeltaEvent`s, when someone listens."""
    emit = kwargs.get("emit")
    if emit is None:
        return None
    return lambda text: emit(TokenDeltaEvent(step_id=step.step_id, delta=text))


def _no_generations(error: ValueError) -> bool:
    """Whether LangChain found no reply in a chat model's stream (the server sent none)."""
    return "No generations found in stream" in str(error)


def _record_of(task: Task) -> dict[str, Any]:
    """A copy of the task's LangGraph record, to change and put back."""
    record = json.loads(json.dumps(task.extra_state.get(STATE_KEY) or {}))
    record.setdefault("mirrored", {})
    return record


def _input_keys(graph: Pregel) -> list[str]:
    """The state keys the graph takes as input (a `StateGraph`'s input schema), else []."""
    builder = getattr(graph, "builder", None)
    schemas = getattr(builder, "schemas", None)
    schema = getattr(builder, "input_schema", None)
    if schemas is not None and schema in schemas:
        return list(schemas[schema])
    channels = graph.input_channels
    return [channels] if isinstance(channels, str) and channels[:2] != "__" else []


def _thought(updates: list[tuple[str, Any]], key: str | None) -> str | None:
    """The model's text beside the tool calls it makes, if any."""
    for _, update in updates:
        if key is None or not isinstance(update, dict):
            continue
        for message in as_messages(update.get(key)):
            if isinstance(message, AIMessage) and message.tool_calls and message.text:
                return message.text
    return None


def _interrupted(state: Any) -> tuple[str, ...]:
    return _unique(task.name for task in state.tasks if task.interrupts)


def _unique(names: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))
