"""A pydantic-ai `Agent` as a Stepwise worker: a step per node of its graph that talks to the world.

pydantic-ai runs an agent as a graph, `UserPromptNode -> ModelRequestNode -> CallToolsNode ->
ModelRequestNode -> ... -> End`, and `Agent.iter()` / `AgentRun.next(node)` drive it a node at a
time. Each Stepwise step opens a fresh run on the task's message history (`message_history=`,
kept as JSON in `task.extra_state`, see `_state`) and drives it through one node
that talks to the world; no live `AgentRun` outlives a step. So undo restores the history
exactly, a restarted process goes on from it, and two steps never share a connection.

The steps (`TaskStep.name` in pydantic-ai's words):

- **model request** (`llm`): one `ModelRequestNode`. The task's first one sends the task's
  input as the user prompt; each later one sends the request waiting in the history (the tool
  results). A person's edited input is a user prompt part of that request (on the first step it
  replaces the prompt), and feedback added before it joins it as further user prompt parts.
  A reply with no tool calls to run (text, or an output tool) is taken through its
  `CallToolsNode` in the same step: the run ends (`End`, the last step) or asks the model again
  (a retry, as the next model request).
- **call tools: add, multiply** (`tool`): one `CallToolsNode`, every call of one reply. Its
  input is the call (`{"tool", "args", "call_id"}`), or `{"calls": [...]}` for several. Edited
  arguments reach the tool as `ToolApproved(override_args=...)`; a rejection denies every call
  with the person's reason (`ToolDenied`), which the model reads.
- **approval steps**: a call of a tool pydantic-ai marks `requires_approval` (kind
  `unapproved`), every call when the worker was built with `tool_approval=True`, and a call a
  tool breakpoint of `run_until` holds wait as steps of their own (`tool_steps.call_step`):
  approve, edit the arguments, or reject with a reason. With one such call the approval step is
  the `CallToolsNode` step itself; with several, the others record their decision ("approve
  add") and the last waits for them and runs the batch. The decisions reach pydantic-ai as
  `DeferredToolResults`, its own way back from `DeferredToolRequests`; a tool that asks for
  approval while it runs (`ApprovalRequired`) ends its batch in `DeferredToolRequests`, whose
  calls become approval steps the same way.

The agent's own model serves every request (the model picked in Stepwise's form does not
apply); each step's `Usage` is what pydantic-ai's `RunUsage` grew by. The run's usage carries
over from step to step, so the agent's `UsageLimits` count the whole task; retry budgets
(`retries=`) count within one step. Toolsets the agent brings, MCP servers included, are
entered by pydantic-ai for each step's run. A step cannot be skipped: pydantic-ai's run goes on
from every node (`TaskStep.cannot` says so, and the app greys Skip). Tools pydantic-ai runs
outside the process (`external` ones, `CallDeferred`) are not supported yet: a step that meets
one fails and says so.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults
from pydantic_ai.agent import AbstractAgent, AgentRun
from pydantic_ai.capabilities import AbstractCapability, ReinjectSystemPrompt
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python
from pydantic_graph import End

from agent_core.adapters._replies import cap_note
from agent_core.adapters.pydantic_ai._limits import limited, usage_limits
from agent_core.adapters.pydantic_ai._messages import (
    PreviewStop,
    RequestCapture,
    SentRequest,
    chat_messages,
    describe_calls,
    tool_outputs,
)
from agent_core.adapters.pydantic_ai._state import Batch, Call, Decision, RunRecord
from agent_core.errors import AgentCoreError, StepError, UserError
from agent_core.llms.base import ChatMessage, Usage
from agent_core.runtime.loop import run_sync
from agent_core.types import (
    REQUEST_TOOLS_KEY,
    StepAction,
    StepKind,
    StepNote,
    Task,
    TaskStep,
    TaskStepOutput,
)
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.tool_steps import call_step, queues_call, tool_call_of, tool_step_input

__all__ = ["MODEL_REQUEST", "PydanticAIWorker", "worker_for"]

MODEL_REQUEST = "model request"
"""The name of a model-request step (pydantic-ai's `ModelRequestNode`)."""

_RUNS_BATCH = "runs_batch"
"""`step_state` key: this tool step runs the reply's calls (the `CallToolsNode`)."""

_RUNNABLE = frozenset({"function", "unapproved", "unknown"})
"""Kinds of call a `CallToolsNode` step runs (an unknown tool gets pydantic-ai's retry)."""

_NO_SKIP_REQUEST = (
    "pydantic-ai's run goes on from this model request; without it the run has nothing to do "
    "next. Edit its input instead, or undo"
)
_NO_SKIP_CALL = (
    "pydantic-ai answers every tool call the model made before it asks the model again. "
    "Reject the call instead (the model reads your reason), or undo"
)


def worker_for(obj: AbstractAgent[Any, Any], *, tool_approval: bool) -> PydanticAIWorker:
    """The worker for a pydantic-ai agent (`agent_core.adapters.adapt` calls this)."""
    return PydanticAIWorker(obj, tool_approval=tool_approval)


@dataclass
class _Settled:
    """Where a step left the run: the steps it queues, or the run's end and its output."""

    next_steps: list[TaskStep] = field(default_factory=list)
    is_last: bool = False
    output: Any = None


class PydanticAIWorker(BaseAgentWorker):
    """Steps a pydantic-ai agent node by node (see the module's docstring for the steps).

    Args:
        agent: The pydantic-ai agent, with its own model, tools and toolsets.
        tool_approval: Make every tool call wait for a person's approval, besides the calls of
            tools pydantic-ai itself marks `requires_approval`.
    """

    def __init__(self, agent: AbstractAgent[Any, Any], *, tool_approval: bool = False) -> None:
        self.agent = agent
        self.tool_approval = tool_approval

    @property
    def keeps_own_conversation(self) -> str:
        """The framework's state holds the conversation, not `Task.memory`."""
        return "pydantic-ai keeps the message history in its run"

    @property
    def own_model(self) -> str:
        """The model the agent runs on, as pydantic-ai names it ("openai:gpt-4o", ...)."""
        model = self.agent.model
        if model is None:
            return "none set (pydantic-ai will refuse to run)"
        if isinstance(model, str):
            return model
        return getattr(model, "model_id", None) or f"{model.system}:{model.model_name}"

    # ------------------------------------------------------------------ the worker contract

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The first model request; its input is the task's question (the user prompt)."""
        return TaskStep(
            task_id=task.task_id,
            input=task.input,
            kind=StepKind.LLM,
            name=MODEL_REQUEST,
            cannot={StepAction.SKIP: _NO_SKIP_REQUEST},
        )

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run one model request, or one tool step (a decision, or the reply's calls)."""
        if step.kind is StepKind.TOOL:
            return await self._run_tools(step, task)
        return await self._run_model_request(step, task, kwargs)

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """What a model-request step sends, built by pydantic-ai and stopped before the model."""
        if step.kind is StepKind.TOOL:
            return []
        return run_sync(self._preview(step, task), name="preview_step")

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The run's conversation so far, system prompt included."""
        return chat_messages(RunRecord.load(task).messages, system=True)

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question and the agent's answer: what the finished task adds to the thread."""
        record = RunRecord.load(task)
        answer = record.output if isinstance(record.output, str) else json.dumps(record.output)
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=answer),
        ]

    # ------------------------------------------------------------------ model requests

    async def _run_model_request(
        self, step: TaskStep, task: Task, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        record = _start(task)
        text = _step_text(step)
        before = record.usage  # The run counts on a copy (see _iter).
        sent_at = len(record.messages) - (1 if record.pending_request else 0)
        async with self._iter(record, text) as run:
            request_node = await _request_node(run, step, record, record.take_feedback(task))
            node = await run.next(request_node)
            sent = SentRequest.of_context(request_node.last_request_context)
            response, calls = None, None
            if Agent.is_call_tools_node(node):
                response = node.model_response
                calls = self._classify(run, response)
                if not _runnable(calls):
                    node, calls = await run.next(node), None  # Nothing to run: ends, or retries.
            settled = self._settle(run, node, step, record, kwargs, calls=calls)
            usage, record.usage = _usage(run.usage, before), run.usage
        if text is not None:
            task.memory.put(ChatMessage(role="user", content=text))
        task.memory.put_messages(chat_messages(record.messages[sent_at + 1 :]))
        return self._finish(step, task, record, settled, usage, response, sent)

    async def _preview(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        record = _start(task)
        capture = RequestCapture()
        try:
            async with self._iter(record, _step_text(step), capture=capture) as run:
                node = await _request_node(run, step, record, record.take_feedback(task))
                await run.next(node)
        except AgentCoreError:
            raise
        except BaseException as exc:
            if _stopped_for_preview(exc):
                pass
            elif isinstance(exc, Exception):
                # A preview must not break the page that draws it: say what pydantic-ai said.
                raise UserError(f"pydantic-ai could not build the next request: {exc!r}") from exc
            else:
                raise  # Cancellation and the like.
        sent = capture.last
        return sent.as_chat() if sent is not None else []

    def _finish(
        self,
        step: TaskStep,
        task: Task,
        record: RunRecord,
        settled: _Settled,
        usage: Usage,
        response: ModelResponse | None,
        sent: SentRequest | None,
    ) -> TaskStepOutput:
        if settled.is_last:
            record.output = settled.output
        record.save(task)
        if sent is not None:  # The messages go to `messages_sent`; the tools have no slot there.
            step.step_state[REQUEST_TOOLS_KEY] = [t.model_dump() for t in sent.tools]
        thought = response.text if response is not None and response.tool_calls else None
        if settled.is_last:
            output = settled.output
        elif record.batch is not None and response is not None:
            output = response.text or describe_calls(record.batch.calls)
        else:
            output = response.text if response is not None else ""
        return TaskStepOutput(
            output=output,
            task_step=step,
            next_steps=settled.next_steps,
            is_last=settled.is_last,
            thought=thought or None,
            usage=usage,
            messages_sent=sent.as_chat() if sent is not None else [],
            notes=_cut_notes(response),
        )

    # ------------------------------------------------------------------ tool steps

    async def _run_tools(self, step: TaskStep, task: Task) -> TaskStepOutput:
        record = RunRecord.load(task)
        batch = record.batch
        if batch is None:
            raise UserError(
                "no tool calls wait in this pydantic-ai run; undo to the model request that "
                "made them"
            )
        decided = _decide(step, batch)
        record.feedback = record.take_feedback(task)  # For the next model request.
        if not step.step_state.get(_RUNS_BATCH):
            record.save(task)
            return TaskStepOutput(output=_describe_decisions(decided, batch), task_step=step)
        before = record.usage  # The run counts on a copy (see _iter).
        history = record.messages
        results = batch.results(record.answered())
        async with self._iter(record, None, results=results) as run:
            start = run.next_node
            if isinstance(start, End):  # A history that already ended has no calls to run.
                raise UserError("pydantic-ai's run has already ended: there are no calls to run")
            node = await run.next(start)
            if not Agent.is_call_tools_node(node):
                raise UserError(f"pydantic-ai has no tool calls to run here (it went to {node!r})")
            calls = {call.call_id: call for call in batch.calls}
            record.batch = None
            node = await run.next(node)
            settled = self._settle(run, node, step, record, {})
            usage, record.usage = _usage(run.usage, before), run.usage
        new = _added(history, record.messages)
        task.memory.put_messages(chat_messages(new))
        if settled.is_last:
            record.output = settled.output
        record.save(task)
        outputs = tool_outputs(
            (
                part
                for message in new
                if isinstance(message, ModelRequest)
                for part in message.parts
            ),
            calls,
        )
        return TaskStepOutput(
            output=settled.output if settled.is_last else _describe_results(outputs),
            task_step=step,
            next_steps=settled.next_steps,
            is_last=settled.is_last,
            tool_calls=outputs,
            usage=usage,
        )

    # ------------------------------------------------------------------ the run's next node

    def _iter(
        self,
        record: RunRecord,
        prompt: str | None,
        *,
        capture: RequestCapture | None = None,
        results: DeferredToolResults | None = None,
    ) -> AbstractAsyncContextManager[AgentRun[Any, Any]]:
        """A fresh run on the task's history (its usage so far, so that limits hold)."""
        capabilities: list[AbstractCapability[Any]] = []
        if record.from_thread:
            # pydantic-ai sends its system prompt only to a run without history; earlier turns
            # kept as Stepwise's messages have none, so it is put back at the head of each
            # request, as pydantic-ai advises for histories rebuilt from such a store.
            capabilities.append(ReinjectSystemPrompt())
        if capture is not None:
            capabilities.append(capture)
        run = self.agent.iter(
            prompt if record.pending_request is None else None,
            message_history=list(record.messages),
            deferred_tool_results=results,
            usage=_copied(record.usage),
            usage_limits=usage_limits(record.request_limit),
            capabilities=capabilities or None,
            infer_name=False,
        )
        return limited(run, request_limit=record.request_limit)

    def _settle(
        self,
        run: AgentRun[Any, Any],
        node: Any,
        step: TaskStep,
        record: RunRecord,
        kwargs: dict[str, Any],
        *,
        calls: list[Call] | None = None,
    ) -> _Settled:
        """Record the history the run reached at `node`, and the steps that follow from it.

        `calls` are the node's calls when the caller classified them already.
        """
        if Agent.is_end_node(node):
            record.messages = run.all_messages()
            output = node.data.output
            if isinstance(output, DeferredToolRequests):
                return _Settled(next_steps=self._deferred(step, record, output))
            return _Settled(is_last=True, output=to_jsonable_python(output))
        if Agent.is_model_request_node(node):
            record.messages = _with_request(run.all_messages(), node.request)
            return _Settled(next_steps=[_model_request_step(step)])
        if Agent.is_call_tools_node(node):
            record.messages = run.all_messages()
            record.batch = Batch(
                calls if calls is not None else self._classify(run, node.model_response)
            )
            return _Settled(next_steps=self._tool_steps(step, record.batch, kwargs))
        raise UserError(
            f"the pydantic-ai run reached {type(node).__name__}, which Stepwise cannot step"
        )

    def _classify(self, run: AgentRun[Any, Any], response: ModelResponse) -> list[Call]:
        """The reply's tool calls, each with its kind as the run's tool manager knows it."""
        manager = run.ctx.deps.tool_manager
        calls = []
        for part in response.tool_calls:
            tool_def = manager.get_tool_def(part.tool_name)
            kind = tool_def.kind if tool_def is not None else "unknown"
            if kind == "external":
                raise _external(part.tool_name)
            calls.append(Call(part.tool_name, part.args_as_dict(), part.tool_call_id, kind))
        return calls

    def _tool_steps(self, step: TaskStep, batch: Batch, kwargs: dict[str, Any]) -> list[TaskStep]:
        """The steps that run `batch`: approval steps for the calls that wait, the last runs it."""
        runnable = [call for call in batch.calls if call.kind in _RUNNABLE]
        waiting = [
            call
            for call in runnable
            if call.kind != "unknown"
            and queues_call(call.tool, approval=self._needs_approval(call), kwargs=kwargs)
        ]
        name = f"call tools: {batch.names}"
        if not waiting:
            calls = [_call_input(call) for call in runnable]
            batch_step = step.get_next_step(
                kind=StepKind.TOOL,
                input=calls[0] if len(calls) == 1 else {"calls": calls},
                name=name,
                step_state={_RUNS_BATCH: True},
                cannot={StepAction.SKIP: _NO_SKIP_CALL},
            )
            return [batch_step]
        steps = []
        for call in waiting:
            approval = call_step(
                step, call.tool, call.args, call.call_id, approval=self._needs_approval(call)
            )
            approval.name = f"approve {call.tool}"
            approval.cannot = {StepAction.SKIP: _NO_SKIP_CALL}
            steps.append(approval)
        last = steps[-1]
        last.name = name
        last.step_state[_RUNS_BATCH] = True
        last.depends_on = [s.step_id for s in steps[:-1]]
        return steps

    def _needs_approval(self, call: Call) -> bool:
        return call.kind == "unapproved" or self.tool_approval

    def _deferred(
        self, step: TaskStep, record: RunRecord, requests: DeferredToolRequests
    ) -> list[TaskStep]:
        """Calls a tool deferred while it ran (`ApprovalRequired`) wait as approval steps."""
        if requests.calls:
            raise _external(requests.calls[0].tool_name)
        calls = [
            Call(part.tool_name, part.args_as_dict(), part.tool_call_id, "unapproved")
            for part in requests.approvals
        ]
        record.batch = Batch(calls)
        return self._tool_steps(step, record.batch, {})


# ---------------------------------------------------------------------- helpers


def _start(task: Task) -> RunRecord:
    """The task's record; before its first step, the thread's earlier turns as history."""
    record = RunRecord.load(task)
    if record.seen is None and task.history_length:
        record.messages = _earlier_turns(task.memory.get_all()[: task.history_length])
        record.from_thread = True
    return record


def _earlier_turns(messages: Sequence[ChatMessage]) -> list[ModelMessage]:
    """Earlier turns of the thread (questions and answers) as pydantic-ai history."""
    history: list[ModelMessage] = []
    for message in messages:
        if message.role == "user":
            history.append(ModelRequest(parts=[UserPromptPart(message.content)]))
        elif message.role == "assistant" and message.content:
            history.append(ModelResponse(parts=[TextPart(message.content)]))
    return history


def _step_text(step: TaskStep) -> str | None:
    """A model request's input: a user prompt part of the request, or nothing."""
    if step.input is None:
        return None
    if not isinstance(step.input, str):
        raise UserError("a model request's input must be text (a user prompt), or empty")
    return step.input if step.input.strip() else None


async def _request_node(
    run: AgentRun[Any, Any], step: TaskStep, record: RunRecord, feedback: list[str]
) -> Any:
    """Drive the run to its `ModelRequestNode`, with the step's input and feedback added."""
    node = run.next_node
    while Agent.is_user_prompt_node(node):
        node = await run.next(node)
    if not Agent.is_model_request_node(node):
        raise UserError(
            "pydantic-ai has nothing to send the model here: give this step an input (a user "
            "prompt), or undo"
        )
    extra = list(feedback)
    text = _step_text(step)
    if text is not None and record.pending_request is not None:
        extra.insert(0, text)  # The first request already carries it as the user prompt.
    if extra:
        parts = [*node.request.parts, *(UserPromptPart(t) for t in extra)]
        node.request = replace(node.request, parts=parts)
    return node


def _runnable(calls: list[Call]) -> bool:
    return any(call.kind in _RUNNABLE for call in calls)


def _with_request(messages: list[ModelMessage], request: ModelRequest) -> list[ModelMessage]:
    """`messages` with the request pydantic-ai will send next, merged into a waiting one."""
    if messages and isinstance(messages[-1], ModelRequest):
        merged = replace(messages[-1], parts=[*messages[-1].parts, *request.parts])
        return [*messages[:-1], merged]
    return [*messages, request]


def _added(before: list[ModelMessage], after: list[ModelMessage]) -> list[ModelMessage]:
    """What a step added to the history: new messages, and parts a waiting request gained."""
    if not before or not isinstance(before[-1], ModelRequest):
        return after[len(before) :]
    grown = after[len(before) - 1]
    gained = grown.parts[len(before[-1].parts) :] if isinstance(grown, ModelRequest) else []
    return [*([replace(grown, parts=list(gained))] if gained else []), *after[len(before) :]]


def _model_request_step(step: TaskStep) -> TaskStep:
    return step.get_next_step(
        kind=StepKind.LLM, name=MODEL_REQUEST, cannot={StepAction.SKIP: _NO_SKIP_REQUEST}
    )


def _call_input(call: Call) -> dict[str, Any]:
    return tool_step_input(call.tool, call.args, call.call_id)


def _decide(step: TaskStep, batch: Batch) -> list[tuple[Call, Decision | None]]:
    """Record what a person decided on the calls this step holds; give each call and decision."""
    by_id = {call.call_id: call for call in batch.calls}
    pending = step.needs_approval or bool(step.step_state.get("held"))
    decided = []
    for index, (tool, args, call_id) in enumerate(_step_calls(step)):
        call = by_id.get(call_id) or _nth_runnable(batch, index)
        if tool != call.tool:
            raise UserError(
                f"pydantic-ai runs the call the model made ({call.tool}); edit its arguments, "
                f"not the tool's name ({tool})"
            )
        if step.rejection is not None:
            decision: Decision | None = Decision(
                denied=f"The user rejected this call: {step.rejection}"
            )
        elif args != call.args:
            decision = Decision(args=args)
        else:
            decision = Decision() if pending else None
        if decision is not None:
            batch.decisions[call.call_id] = decision
        decided.append((call, decision))
    return decided


def _step_calls(step: TaskStep) -> list[tuple[str, dict[str, Any], str]]:
    """The calls a tool step's input holds (one call, or `{"calls": [...]}`), as edited."""
    value = step.input
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if isinstance(value, dict) and isinstance(value.get("calls"), list):
        calls = []
        for item in value["calls"]:
            if not isinstance(item, dict) or not isinstance(item.get("args", {}), dict):
                raise UserError(
                    'each of "calls" must be {"tool": ..., "args": {...}, "call_id": ...}'
                )
            calls.append(
                (str(item.get("tool")), item.get("args", {}), str(item.get("call_id", "")))
            )
        return calls
    call = tool_call_of(step)
    return [(call.tool, call.args, call.call_id)]


def _nth_runnable(batch: Batch, index: int) -> Call:
    runnable = [call for call in batch.calls if call.kind in _RUNNABLE]
    if index >= len(runnable):
        raise UserError("this step's input names more calls than the model made")
    return runnable[index]


def _describe_decisions(decided: list[tuple[Call, Decision | None]], batch: Batch) -> str:
    lines = []
    for call, decision in decided:
        if decision is not None and decision.denied is not None:
            lines.append(f"rejected {call.tool}: {decision.denied}")
        else:
            args = decision.args if decision is not None and decision.args else call.args
            lines.append(f"approved {call.tool}({json.dumps(args)})")
    return "\n".join(lines) + f"\n(it runs with the other calls at 'call tools: {batch.names}')"


def _describe_results(outputs: list[Any]) -> str:
    if len(outputs) == 1:
        return outputs[0].content
    return "\n".join(f"{out.tool_name}: {out.content}" for out in outputs)


def _cut_notes(response: ModelResponse | None) -> list[StepNote]:
    """A note when the model's max-tokens cap cut its reply (pydantic-ai's "length")."""
    if response is None or response.finish_reason != "length":
        return []
    return [cap_note("model_settings={'max_tokens': ...} of the agent or its run")]


def _copied(usage: RunUsage) -> RunUsage:
    """A copy of `usage` for a run to count on (its only mutable field is `details`)."""
    counted = copy.copy(usage)
    counted.details = dict(usage.details)
    return counted


def _usage(after: RunUsage, before: RunUsage) -> Usage:
    """What pydantic-ai's `RunUsage` grew by in this step, as Stepwise's `Usage`."""
    delta = after - before
    return Usage(
        prompt_tokens=delta.input_tokens,
        completion_tokens=delta.output_tokens,
        cost_usd=float(delta.cost) if delta.cost is not None else None,
    )


def _stopped_for_preview(exc: BaseException) -> bool:
    if isinstance(exc, PreviewStop):
        return True
    if isinstance(exc, BaseExceptionGroup):
        rest = exc.subgroup(lambda e: not isinstance(e, PreviewStop | BaseExceptionGroup))
        return rest is None
    return False


def _external(tool: str) -> StepError:
    return StepError(
        f"the model called {tool!r}, a tool pydantic-ai leaves to run outside the agent "
        "(an external or deferred tool); Stepwise cannot supply its result yet. Undo and steer "
        "the model away from it",
        code="unsupported_tool_kind",
        params={"tool": tool},
    )
