"""A LlamaIndex agent workflow as a Stepwise worker: one step per model call and per tool call.

LlamaIndex (0.13+) agents are Workflows: `FunctionAgent`, `ReActAgent`, `CodeActAgent` and the
multi-agent `AgentWorkflow` (`llama_index.core.agent.workflow`). Each Stepwise step restores
the run's `Context` (LlamaIndex's own serialised state, kept as JSON in
`task.extra_state["llama_index"]`), lets exactly one parked model call or tool call go on, and
saves the Context when every step of the workflow waits again (`_run` says how).
The runner snapshots extra_state before every step, so undo, fork and a restarted process
continue from the Context exactly as it was.

The steps:

- **model call** (`llm`; in an `AgentWorkflow` named for the agent, "Researcher: model call"):
  one `run_agent_step`, the agent's `take_step`. The task's first one starts the run with the
  step's input as the user message (after the thread's earlier turns).
- **a tool call** (`tool`, named for the tool): one `call_tool`; its input is the call
  (`{"tool", "args", "call_id"}`), and edited arguments are what the tool gets. The calls of one
  reply are queued together and run one step each.
- **handoff to <agent>** (`delegate`): the `handoff` tool of an `AgentWorkflow`; the agent
  handed to makes the next model call.
- **a question** (`human`): a tool or step that asks a person (`ctx.wait_for_event(
  HumanResponseEvent, waiter_event=InputRequiredEvent(...))`) ends its step with a `human`
  step whose `step_state["interrupt"]` holds the `InputRequiredEvent`'s fields; its input is
  the answer, sent as `HumanResponseEvent(response=answer)`.

The agent's own LLM serves every call (the model picked in Stepwise's form does not apply). A
step cannot be skipped (the workflow goes on from every parked call), and feedback is not
taken (LlamaIndex keeps the conversation in its memory): `TaskStep.cannot` says so.
"""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.agent.workflow import AgentOutput, AgentWorkflow, BaseWorkflowAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage as LlamaMessage

from agent_core.adapters.llama_index._run import (
    Gate,
    RunOutcome,
    StepwiseGo,
    run_once,
    stepped_copy,
)
from agent_core.errors import UserError
from agent_core.events import TokenDeltaEvent
from agent_core.llms.base import ChatMessage, ToolCall
from agent_core.types import (
    INTERRUPT_KEY,
    StepAction,
    StepKind,
    Task,
    TaskStep,
    TaskStepOutput,
    ToolOutput,
)
from agent_core.workers.base import BaseAgentWorker
from agent_core.workers.tool_steps import tool_call_of, tool_step_input

__all__ = ["HANDOFF", "MODEL_CALL", "STATE_KEY", "LlamaIndexWorker", "worker_for"]

STATE_KEY = "llama_index"
"""The `task.extra_state` key of the run's saved Context, memory and parked calls."""

MODEL_CALL = "model call"
"""The name of a model-call step (in an `AgentWorkflow`, after the agent's name)."""

HANDOFF = "handoff"
"""The tool an `AgentWorkflow` gives its agents to hand the request to another agent."""

_GATE = "gate"
"""`step_state` key: the parked call this step lets go on."""

_NO_SKIP = (
    "LlamaIndex's workflow goes on from this call; it cannot be left out. Edit its input "
    "instead, or undo"
)
_NO_FEEDBACK = (
    "LlamaIndex keeps this agent's conversation in its own memory: edit the next model "
    "call's input instead"
)
_ANSWER_NEEDED = "the workflow waits for your answer: type it as this step's input"


class LlamaIndexWorker(BaseAgentWorker):
    """Steps a LlamaIndex agent workflow call by call (see the module's notes).

    Args:
        workflow: The user's `FunctionAgent`, `ReActAgent` or `AgentWorkflow`; it is not
            changed (Stepwise runs a copy with gates in front of its calls).
        tool_approval: Make every tool call wait for a person's approval.
    """

    def __init__(self, workflow: Any, *, tool_approval: bool = False) -> None:
        self.workflow = workflow
        self.tool_approval = tool_approval
        self._stepped = stepped_copy(workflow)
        self._multi = isinstance(workflow, AgentWorkflow)

    @property
    def keeps_own_conversation(self) -> str:
        """The framework's state holds the conversation, not `Task.memory`."""
        return "LlamaIndex keeps the conversation in its workflow's memory"

    @property
    def own_model(self) -> str:
        """The LLM(s) the agents call: the app's model is not used."""
        agents = self.workflow.agents.values() if self._multi else [self.workflow]
        names = dict.fromkeys(_llm_name(agent.llm) for agent in agents)
        return ", ".join(names)

    # ------------------------------------------------------------------ the worker contract

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The first model call; its input is the task's question (the user message)."""
        agent = self.workflow.root_agent if self._multi else self.workflow.name
        return TaskStep(
            task_id=task.task_id,
            input=task.input,
            kind=StepKind.LLM,
            name=self._model_call_name(agent),
            cannot=_cannot(),
        )

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Let one parked call go on (or answer the workflow's question), to the next park."""
        record = _record_of(task)
        emit = kwargs.get("emit")
        on_delta = None
        if emit is not None:
            on_delta = lambda text: emit(TokenDeltaEvent(step_id=step.step_id, delta=text))  # noqa: E731
        common = {
            "context": record.get("context"),
            "memory": record.get("memory", []),
            "on_delta": on_delta,
        }
        if step.kind is StepKind.HUMAN:
            outcome = await run_once(self._stepped, answer=_answer_of(step), **common)
            record["question"] = None
        elif record.get("context") is None:
            outcome = await run_once(self._stepped, start=_text_of(step), **common)
            task.memory.put(ChatMessage(role="user", content=_text_of(step)))
        else:
            go, opened = self._go(step, record)
            outcome = await run_once(self._stepped, go=go, **common)
            record["pending"] = [g for g in record.get("pending", []) if g["gate"] != opened]
        return self._finish(step, task, record, outcome, kwargs)

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The question and the workflow's answer: what the finished task adds to the thread."""
        answer = _record_of(task).get("output") or ""
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=answer),
        ]

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """Not known before the agent builds it (its system prompt, state and scratchpad)."""
        return []

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """The workflow's chat memory so far."""
        return [_from_llama(LlamaMessage.model_validate(m)) for m in _record_of(task)["memory"]]

    # ------------------------------------------------------------------ one step

    def _go(self, step: TaskStep, record: dict[str, Any]) -> tuple[StepwiseGo, str]:
        gate = step.step_state.get(_GATE)
        pending = {g["gate"]: g for g in record.get("pending", [])}
        if not isinstance(gate, str) or gate not in pending:
            raise UserError(
                "this LlamaIndex call is no longer waiting in the workflow; undo to the step "
                "that queued it"
            )
        if step.kind is StepKind.LLM:
            if step.input:
                raise UserError(
                    "a later LlamaIndex model call takes no input: its messages come from the "
                    "agent's memory. Clear the input, or undo to the first model call"
                )
            return StepwiseGo(gate=gate), gate
        call = tool_call_of(step)
        parked = pending[gate]
        if call.tool != parked["tool"]:
            raise UserError(
                f"LlamaIndex runs the call the model made ({parked['tool']}); edit its "
                f"arguments, not the tool's name ({call.tool})"
            )
        args = call.args if call.args != parked["args"] else None
        return StepwiseGo(gate=gate, args=args), gate

    def _finish(
        self,
        step: TaskStep,
        task: Task,
        record: dict[str, Any],
        outcome: RunOutcome,
        kwargs: dict[str, Any],
    ) -> TaskStepOutput:
        record["context"], record["memory"] = outcome.context, outcome.memory
        new = [_gate_json(gate) for gate in outcome.gates]
        record["pending"] = [*record.get("pending", []), *new]
        tool_calls = [_tool_output(result) for result in outcome.results]
        self._mirror(task, outcome)
        if outcome.stopped:
            record["output"] = _answer_text(outcome.result)
            record["pending"], record["context"] = [], None
        next_steps: list[TaskStep] = []
        if outcome.question is not None and not outcome.stopped:
            record["question"] = outcome.question
            next_steps.append(_question_step(step, outcome.question))
        next_steps.extend(self._gate_step(step, gate, kwargs) for gate in outcome.gates)
        task.extra_state[STATE_KEY] = record
        return TaskStepOutput(
            output=self._output_text(outcome, tool_calls),
            task_step=step,
            next_steps=next_steps,
            is_last=outcome.stopped,
            tool_calls=tool_calls,
            messages_sent=[_from_llama(m) for m in outcome.sent],
        )

    def _gate_step(self, step: TaskStep, gate: Gate, kwargs: dict[str, Any]) -> TaskStep:
        state = {_GATE: gate.gate}
        if gate.kind == "llm":
            return step.get_next_step(
                kind=StepKind.LLM,
                input=None,
                name=self._model_call_name(gate.agent),
                step_state=state,
                cannot=_cannot(),
            )
        call = tool_step_input(gate.tool, gate.args, gate.call_id)
        if gate.tool == HANDOFF and self._multi:
            to_agent = gate.args.get("to_agent", "?")
            return step.get_next_step(
                kind=StepKind.DELEGATE,
                input=call,
                name=f"handoff to {to_agent}",
                step_state=state,
                cannot=_cannot(),
            )
        following = step.get_next_step(
            kind=StepKind.TOOL, input=call, name=gate.tool, step_state=state, cannot=_cannot()
        )
        following.needs_approval = self.tool_approval
        return following

    def _model_call_name(self, agent: str) -> str:
        return f"{agent}: {MODEL_CALL}" if self._multi else MODEL_CALL

    def _output_text(self, outcome: RunOutcome, tool_calls: list[ToolOutput]) -> str:
        if outcome.stopped:
            return _answer_text(outcome.result)
        lines = [f"{out.tool_name}: {out.content}" for out in tool_calls]
        if len(lines) == 1:
            lines = [tool_calls[0].content]
        if outcome.reply is not None:
            reply = outcome.reply
            lines.append(reply.response.content or _describe_calls(reply))
        if outcome.question is not None:
            lines.append(f"asks: {_question_text(outcome.question)}")
        return "\n".join(line for line in lines if line) or "(no change)"

    @staticmethod
    def _mirror(task: Task, outcome: RunOutcome) -> None:
        """Put what the step added to the conversation into `task.memory`."""
        for result in outcome.results:
            task.memory.put(
                ChatMessage(
                    role="tool",
                    content=str(result.tool_output.content),
                    tool_call_id=result.tool_id,
                    name=result.tool_name,
                )
            )
        if outcome.reply is not None:
            task.memory.put(_from_llama(outcome.reply.response, calls=outcome.reply))


def worker_for(obj: Any, *, tool_approval: bool) -> LlamaIndexWorker:
    """The worker for a LlamaIndex agent workflow (`agent_core.adapters.adapt` calls this)."""
    if not isinstance(obj, BaseWorkflowAgent | AgentWorkflow):
        raise UserError(f"a {type(obj).__name__} is not a LlamaIndex agent workflow")
    return LlamaIndexWorker(obj, tool_approval=tool_approval)


# ---------------------------------------------------------------------- helpers


def _cannot() -> dict[StepAction, str]:
    return {StepAction.SKIP: _NO_SKIP, StepAction.FEEDBACK: _NO_FEEDBACK}


def _record_of(task: Task) -> dict[str, Any]:
    """A copy of the task's LlamaIndex record, to change and put back."""
    record = json.loads(json.dumps(task.extra_state.get(STATE_KEY) or {}))
    record.setdefault("memory", [])
    record.setdefault("pending", [])
    return record


def _text_of(step: TaskStep) -> str:
    if not isinstance(step.input, str) or not step.input.strip():
        raise UserError("the first model call's input is the user message: type it as text")
    return step.input


def _answer_of(step: TaskStep) -> Any:
    value = step.input
    if isinstance(value, dict):
        return value
    text = (value or "").strip()
    if not text:
        raise UserError(_ANSWER_NEEDED)
    return text


def _question_step(step: TaskStep, question: dict[str, Any]) -> TaskStep:
    return step.get_next_step(
        kind=StepKind.HUMAN,
        name="question",
        step_state={INTERRUPT_KEY: question},
        cannot={StepAction.SKIP: _ANSWER_NEEDED, StepAction.FEEDBACK: _ANSWER_NEEDED},
    )


def _question_text(question: dict[str, Any]) -> str:
    for key in ("prefix", "msg", "message", "question", "prompt"):
        if isinstance(question.get(key), str):
            return question[key]
    return json.dumps(question)


def _gate_json(gate: Gate) -> dict[str, Any]:
    return {
        "gate": gate.gate,
        "kind": gate.kind,
        "agent": gate.agent,
        "tool": gate.tool,
        "args": gate.args,
        "call_id": gate.call_id,
    }


def _answer_text(result: Any) -> str:
    if isinstance(result, AgentOutput):
        return result.response.content or ""
    return result if isinstance(result, str) else json.dumps(result, default=str)


def _describe_calls(reply: AgentOutput) -> str:
    return "\n".join(f"{c.tool_name}({json.dumps(c.tool_kwargs)})" for c in reply.tool_calls)


def _tool_output(result: Any) -> ToolOutput:
    return ToolOutput(
        tool_name=result.tool_name,
        args=dict(result.tool_kwargs),
        content=str(result.tool_output.content),
        is_error=bool(result.tool_output.is_error),
        call_id=result.tool_id,
    )


def _from_llama(message: LlamaMessage, *, calls: AgentOutput | None = None) -> ChatMessage:
    """A LlamaIndex chat message as Stepwise's (role, text, tool calls, tool call id)."""
    role = str(getattr(message.role, "value", message.role))
    if role not in ("system", "user", "assistant", "tool"):
        role = "assistant"
    selections = calls.tool_calls if calls is not None else []
    tool_calls = [ToolCall(id=c.tool_id, name=c.tool_name, args=c.tool_kwargs) for c in selections]
    if not tool_calls:
        tool_calls = [
            ToolCall(id=b.tool_call_id or "", name=b.tool_name, args=b.tool_kwargs)
            for b in message.blocks
            if isinstance(b, ToolCallBlock) and isinstance(b.tool_kwargs, dict)
        ]
    call_id = message.additional_kwargs.get("tool_call_id")
    return ChatMessage(
        role=role,  # type: ignore[arg-type]
        content=message.content or "",
        tool_calls=tuple(tool_calls),
        tool_call_id=call_id if isinstance(call_id, str) else None,
    )


def _llm_name(llm: Any) -> str:
    for attr in ("model", "model_name"):
        name = getattr(llm, attr, None)
        if isinstance(name, str) and name:
            return name
    return type(llm).__name__
