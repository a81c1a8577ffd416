"""`PlannerAgentWorker`, the "master agent": plan, delegate to sub-agents, aggregate.

A task runs as a DAG of steps:

1. a `plan` step asks the model for a JSON plan (or takes one a person wrote as its input);
2. one `delegate` step per plan item runs the item's sub-agent to completion, with the results
   of the items it depends on in its input; items that do not depend on each other can run at
   the same time (`ParallelAgentRunner.run_steps_in_queue`);
3. a `finalize` step asks the model to combine the results into the answer.

Every step is an ordinary step of the runner, so each can be edited before it runs, undone
and re-run. An invalid plan fails the plan step with a `PlanError` that quotes the model's
text; giving the step a corrected plan as its input and running it again continues the task.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from agent_core._tokens import estimate_tokens
from agent_core.errors import AgentCoreError, StepError, UserError
from agent_core.events import (
    EventSink,
    StepCompletedEvent,
    TokenDeltaEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from agent_core.llms.base import LLM, ChatMessage, Usage
from agent_core.runtime.breakpoints import HOLD_TOOL
from agent_core.types import StepInput, StepKind, Task, TaskStep, TaskStepOutput
from agent_core.workers._chat import step_chat
from agent_core.workers._plan import (
    MAX_PLAN_ITEMS,
    PLAN_FORMAT,
    Plan,
    parse_plan,
    topological_order,
    validate_plan,
)
from agent_core.workers._sub_tasks import SubTask, waits_for_a_person
from agent_core.workers.base import BaseAgentWorker

if TYPE_CHECKING:
    pass

__all__ = ["DEFAULT_MAX_SUB_STEPS", "PlannerAgentWorker", "SubAgent", "result_key"]

DEFAULT_MAX_SUB_STEPS = 30
_PLAN_KEY = "plan"
_ANSWER_KEY = "answer"


def result_key(item_id: str) -> str:
    """The `task.extra_state` key holding a plan item's result (one key per item).

    Parallel delegate steps commit in any order; distinct top-level keys merge cleanly.
    """
    return f"result:{item_id}"


@dataclass(frozen=True)
class SubAgent:
    """A specialised agent the planner can hand plan items to.

    Args:
        description: What the agent is good at; the planning model reads it.
        worker: The worker that runs the agent's steps (any `BaseAgentWorker`).
    """

    description: str
    worker: BaseAgentWorker


class PlannerAgentWorker(BaseAgentWorker):
    """Plans with a model, delegates each plan item to a sub-agent, then aggregates.

    Args:
        llm: The model that writes the plan and the final answer.
        agents: The sub-agents by name; plan items name one of them.
        instructions: Extra guidance added to the planning and aggregating prompts.
        max_sub_steps: Steps a sub-agent may take on one item before the item fails.
    """

    def __init__(
        self,
        llm: LLM,
        agents: Mapping[str, SubAgent],
        *,
        instructions: str = "",
        max_sub_steps: int = DEFAULT_MAX_SUB_STEPS,
    ) -> None:
        if llm is None:
            raise UserError("PlannerAgentWorker needs an llm, e.g. llm=ScriptedLLM([...])")
        if not agents:
            raise UserError(
                "PlannerAgentWorker needs at least one sub-agent: "
                'agents={"coder": SubAgent(description=..., worker=...)}'
            )
        for name, sub in agents.items():
            if not isinstance(name, str) or not name.strip():
                raise UserError(f"sub-agent names must be non-empty text; got {name!r}")
            if not isinstance(sub, SubAgent):
                raise UserError(
                    f"agents[{name!r}] is a {type(sub).__name__}; wrap it as "
                    "SubAgent(description=..., worker=...)"
                )
        if max_sub_steps < 1:
            raise UserError(f"max_sub_steps must be at least 1, got {max_sub_steps}")
        self.llm = llm
        self.agents = dict(agents)
        self.instructions = instructions
        self.max_sub_steps = max_sub_steps
        self._plan_system = ChatMessage(
            role="system", content=_planning_prompt(self.agents, instructions)
        )
        self._aggregate_system = ChatMessage(
            role="system", content=_aggregating_prompt(instructions)
        )

    @classmethod
    def from_agents(
        cls,
        agents: Mapping[str, SubAgent],
        llm: LLM | None = None,
        *,
        instructions: str = "",
        max_sub_steps: int = DEFAULT_MAX_SUB_STEPS,
    ) -> PlannerAgentWorker:
        """Build the worker from its sub-agents and a model."""
        if llm is None:
            raise UserError("PlannerAgentWorker.from_agents needs llm=..., e.g. ScriptedLLM([...])")
        return cls(llm, agents, instructions=instructions, max_sub_steps=max_sub_steps)

    # ------------------------------------------------------------------ worker API

    def initialize_step(self, task: Task, **kwargs: Any) -> TaskStep:
        """The `plan` step; its input is the task's request (or a plan a person wrote)."""
        return TaskStep(task_id=task.task_id, input=task.input, kind=StepKind.PLAN)

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        """Run a plan, delegate or aggregate (`finalize`) step."""
        emit: EventSink | None = kwargs.get("emit")
        if step.kind is StepKind.PLAN:
            return await self._run_plan_step(step, task, emit)
        if step.kind is StepKind.DELEGATE:
            return await self._run_delegate_step(step, task, emit, kwargs)
        if step.kind is StepKind.TOOL:
            return await self._run_call_step(step, task)
        if step.kind is StepKind.FINALIZE:
            return await self._run_aggregate_step(step, task, emit)
        raise UserError(
            f"PlannerAgentWorker runs plan, delegate and finalize steps, not {step.kind.value} "
            "steps; undo the step that queued it"
        )

    def preview_messages(self, task: Task) -> list[ChatMessage]:
        """What the next planning or aggregating call would send (before the plan: planning)."""
        if _PLAN_KEY not in task.extra_state:
            return self._plan_messages(task, task.input)
        try:
            return self._aggregate_messages(task, _stored_plan(task), note=None)
        except StepError:
            return self._plan_messages(task, task.input)

    def preview_step(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """What `step` would send: built by the code its run uses, with its (edited) input."""
        if step.kind is StepKind.PLAN:
            if self._plan_given_in(step.input) is not None:
                return []  # A plan a person wrote runs without the model.
            return self._plan_messages(task, _plan_request(step, task))
        if step.kind is StepKind.FINALIZE:
            try:
                plan = _stored_plan(task)
            except StepError:
                return []
            return self._aggregate_messages(task, plan, note=_aggregate_note(step))
        if step.kind is StepKind.DELEGATE:
            return self._preview_delegate(step, task)
        return []

    def _preview_delegate(self, step: TaskStep, task: Task) -> list[ChatMessage]:
        """The sub-agent's next prompt: of its paused sub-task, else of the task it would get."""
        item_id, dependencies = _item_of(step)
        agent_name, prompt = _assignment(step)
        sub = self._sub_agent(item_id, agent_name)
        paused = SubTask.resume(sub.worker, task, item_id)
        if paused is not None:
            return paused.runner.preview_messages(paused.task_id)
        text = _delegate_input(prompt, _dependency_results(task, item_id, dependencies))
        sub_task = Task(input=text)
        return sub.worker.preview_step(sub.worker.initialize_step(sub_task), sub_task)

    def finalize_task(self, task: Task, **kwargs: Any) -> list[ChatMessage]:
        """The request and the final answer join the conversation; plan and results do not."""
        return [
            ChatMessage(role="user", content=task.input),
            ChatMessage(role="assistant", content=str(task.extra_state.get(_ANSWER_KEY, ""))),
        ]

    # ------------------------------------------------------------------ plan step

    async def _run_plan_step(
        self, step: TaskStep, task: Task, emit: EventSink | None
    ) -> TaskStepOutput:
        plan = self._plan_given_in(step.input)
        usage = Usage()
        if plan is not None:
            request, reply = task.input, plan.model_dump_json()
        else:
            request = _plan_request(step, task)
            response = await step_chat(self.llm, self._plan_messages(task, request), step, emit)
            usage, reply = response.usage, response.text
            plan = parse_plan(reply, agents=self.agents)
        task.memory.put(ChatMessage(role="user", content=request))
        task.memory.put(ChatMessage(role="assistant", content=reply))
        task.extra_state[_PLAN_KEY] = plan.model_dump()
        return TaskStepOutput(
            output=plan.model_dump(),
            task_step=step,
            next_steps=_queue_plan(step, plan),
            usage=usage,
        )

    def _plan_given_in(self, value: StepInput) -> Plan | None:
        """The plan a person gave as the step's input, or None when the input is a request."""
        if isinstance(value, dict):
            return validate_plan(value, agents=self.agents)
        if isinstance(value, str) and _looks_like_plan(value):
            return parse_plan(value, agents=self.agents)
        return None

    def _plan_messages(self, task: Task, request: str) -> list[ChatMessage]:
        question = ChatMessage(role="user", content=request)
        used = estimate_tokens(self._plan_system.content + request)
        return [self._plan_system, *task.memory.get(used), question]

    # -------------------------------------------------------------- delegate step

    async def _run_delegate_step(
        self, step: TaskStep, task: Task, emit: EventSink | None, kwargs: dict[str, Any]
    ) -> TaskStepOutput:
        item_id, dependencies = _item_of(step)
        agent_name, prompt = _assignment(step)
        sub = self._sub_agent(item_id, agent_name)
        who = f"plan item {item_id!r} (agent {agent_name!r})"
        sub_task = SubTask.resume(sub.worker, task, item_id)
        if sub_task is None:
            text = _delegate_input(prompt, _dependency_results(task, item_id, dependencies))
            try:
                sub_task = SubTask.start(sub.worker, text)
            except AgentCoreError as exc:
                raise StepError(f"{who} could not start: {exc}") from exc
        outputs: list[TaskStepOutput] = []
        while not _finished(sub_task):
            pending = sub_task.next_step()
            if pending is not None and waits_for_a_person(pending):
                return _pause(step, task, item_id, agent_name, sub_task, pending, outputs)
            if len(sub_task.state.completed) >= self.max_sub_steps:
                raise StepError(
                    f"{who} did not finish within {self.max_sub_steps} steps; edit the step's "
                    "prompt to narrow it, or build the planner with a higher max_sub_steps"
                )
            try:
                outputs.append(await _sub_step(sub_task, step, emit, kwargs))
            except AgentCoreError as exc:
                done = len(sub_task.state.completed)
                raise StepError(f"{who} failed at its step {done + 1}: {_cause(exc)}") from exc
        try:
            answer = sub_task.runner.finalize_response(sub_task.task_id).response
        except Exception as exc:  # The sub-agent's own finalize_task is user code.
            raise StepError(f"{who} answered, but finishing its task failed: {exc}") from exc
        task.extra_state[result_key(item_id)] = answer
        SubTask.forget(task, item_id)
        return TaskStepOutput(
            output=answer,
            task_step=step,
            tool_calls=[call for output in outputs for call in output.tool_calls],
            usage=_total_usage(outputs),
        )

    def _sub_agent(self, item_id: str, agent_name: str) -> SubAgent:
        sub = self.agents.get(agent_name)
        if sub is None:
            raise StepError(
                f"plan item {item_id!r} names unknown agent {agent_name!r}; the agents are: "
                f"{', '.join(sorted(self.agents))}. Edit the step's input and run it again"
            )
        return sub

    async def _run_call_step(self, step: TaskStep, task: Task) -> TaskStepOutput:
        """Run (or refuse) the call a paused sub-agent proposed, in its restored sub-task."""
        item_id = str(step.step_state.get("item", ""))
        sub = self._sub_agent(item_id, str(step.step_state.get("agent", "")))
        sub_task = SubTask.resume(sub.worker, task, item_id)
        sub_step_id = step.step_state.get("sub_step")
        if sub_task is None or not isinstance(sub_step_id, str):
            raise StepError(
                f"the sub-agent of plan item {item_id!r} has no paused call to run; undo back "
                "to its delegate step and run that again"
            )
        runner = sub_task.runner
        if step.rejection is not None:
            output = await runner.areject_step(
                sub_task.task_id, sub_step_id, message=step.rejection
            )
        else:
            edited = step.input if step.edited else None
            output = await runner.arun_step(sub_task.task_id, edited, step_id=sub_step_id)
        sub_task.save(task, item_id)
        return TaskStepOutput(output=output.output, task_step=step, tool_calls=output.tool_calls)

    # ------------------------------------------------------------- aggregate step

    async def _run_aggregate_step(
        self, step: TaskStep, task: Task, emit: EventSink | None
    ) -> TaskStepOutput:
        messages = self._aggregate_messages(task, _stored_plan(task), note=_aggregate_note(step))
        response = await step_chat(self.llm, messages, step, emit)
        task.memory.put(messages[-1])
        task.memory.put(ChatMessage(role="assistant", content=response.text))
        task.extra_state[_ANSWER_KEY] = response.text
        return TaskStepOutput(
            output=response.text, task_step=step, is_last=True, usage=response.usage
        )

    def _aggregate_messages(self, task: Task, plan: Plan, *, note: str | None) -> list[ChatMessage]:
        results = ChatMessage(role="user", content=_results_text(task, plan, note=note))
        used = estimate_tokens(self._aggregate_system.content + results.content)
        return [self._aggregate_system, *task.memory.get(used), results]


# ---------------------------------------------------------------------- helpers


def _planning_prompt(agents: Mapping[str, SubAgent], instructions: str) -> str:
    listing = "\n".join(
        f"- {name}: {sub.description.strip() or '(no description)'}" for name, sub in agents.items()
    )
    extra = f"\n\n{instructions.strip()}" if instructions.strip() else ""
    return (
        "You are a planner. Break the user's request into items, each done by one of the "
        f"agents below, whose results are then combined into the answer.{extra}\n\n"
        f"Agents:\n{listing}\n\n"
        f"Reply with only a JSON object of this form:\n{PLAN_FORMAT}\n\n"
        "Rules:\n"
        '- "id" is a short name, unique in the plan.\n'
        f'- "agent" is one of: {", ".join(agents)}.\n'
        '- "prompt" says everything the agent needs: it sees only its prompt and the results '
        'of the items in its "depends_on".\n'
        '- "depends_on" lists the ids of the items whose results the item needs; items that '
        "need nothing from each other run at the same time.\n"
        f"- At most {MAX_PLAN_ITEMS} items, and no item may depend on itself, even indirectly."
    )


def _aggregating_prompt(instructions: str) -> str:
    extra = f"\n\n{instructions.strip()}" if instructions.strip() else ""
    return (
        "You are the final step of a plan: agents have worked on parts of the user's request, "
        "and their results follow. Combine them into one complete answer to the request. "
        "Reply with the answer only; do not describe the plan or the agents."
        f"{extra}"
    )


def _plan_request(step: TaskStep, task: Task) -> str:
    """What the plan step asks the model to plan: its (edited) input, else the task's."""
    return step.input if isinstance(step.input, str) and step.input else task.input


def _aggregate_note(step: TaskStep) -> str | None:
    """A person's note to the aggregating call, given as the finalize step's input."""
    return step.input if isinstance(step.input, str) and step.input.strip() else None


def _looks_like_plan(text: str) -> bool:
    # A request that merely mentions JSON is still a request; a plan a person pasted starts
    # with the object (or a fence) and names the "plan" key.
    return text.lstrip().startswith(("{", "```")) and '"plan"' in text


def _queue_plan(step: TaskStep, plan: Plan) -> list[TaskStep]:
    """One `delegate` step per item (dependencies first) and the `finalize` step after all."""
    step_ids: dict[str, str] = {}
    delegates: list[TaskStep] = []
    for item in topological_order(plan):
        child = step.get_next_step(
            kind=StepKind.DELEGATE,
            input={"item": item.id, "agent": item.agent, "prompt": item.prompt},
            step_state={
                "item": item.id,
                "agent": item.agent,
                "prompt": item.prompt,
                "depends_on": list(item.depends_on),
            },
            depends_on=[step_ids[dep] for dep in item.depends_on],
        )
        step_ids[item.id] = child.step_id
        delegates.append(child)
    aggregate = step.get_next_step(
        kind=StepKind.FINALIZE, depends_on=[child.step_id for child in delegates]
    )
    return [*delegates, aggregate]


def _item_of(step: TaskStep) -> tuple[str, list[str]]:
    """The plan item a delegate step works on, and the items it depends on."""
    item = step.step_state.get("item")
    if not isinstance(item, str) and isinstance(step.input, dict):
        item = step.input.get("item")
    if not isinstance(item, str) or not item:
        raise UserError(
            f"delegate step {step.step_id} names no plan item; delegate steps are queued by "
            "the plan step — undo back to it and run it again"
        )
    dependencies = step.step_state.get("depends_on") or []
    return item, [str(dep) for dep in dependencies]


def _assignment(step: TaskStep) -> tuple[str, str]:
    """(agent, prompt) for a delegate step; a person may have edited either in its input."""
    agent = step.step_state.get("agent")
    prompt = step.step_state.get("prompt")
    value = step.input
    if isinstance(value, str) and value.strip():
        prompt = value
    elif isinstance(value, dict):
        agent = value.get("agent", agent)
        prompt = value.get("prompt", prompt)
    if not (_is_text(agent) and _is_text(prompt)):
        got = json.dumps(value, default=str)[:200]
        raise UserError(_DELEGATE_INPUT_HELP.format(got=got))
    return agent.strip(), prompt


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


_DELEGATE_INPUT_HELP = (
    'a delegate step\'s input must be {{"item": <id>, "agent": <name>, "prompt": <text>}} or '
    "the prompt as text; got {got}. Edit the step's input and run it again"
)


def _dependency_results(task: Task, item_id: str, dependencies: list[str]) -> list[tuple[str, str]]:
    results = []
    for dep in dependencies:
        # The runner only starts a step whose dependencies are done, so a missing result
        # means a person skipped that item: go on without it, and say so.
        result = task.extra_state.get(result_key(dep))
        results.append(
            (dep, "(no result: this item was skipped)" if result is None else str(result))
        )
    return results


def _delegate_input(prompt: str, results: list[tuple[str, str]]) -> str:
    """The sub-agent's task: the item's prompt, then the results it builds on."""
    if not results:
        return prompt
    parts = [prompt, "", "Results of the earlier steps this one builds on:"]
    for dep, result in results:
        parts += ["", f"[{dep}]", result]
    return "\n".join(parts)


def _stored_plan(task: Task) -> Plan:
    data = task.extra_state.get(_PLAN_KEY)
    if data is None:
        raise StepError("there is no plan yet; run the plan step first (undo back to it)")
    return Plan.model_validate(data)


def _results_text(task: Task, plan: Plan, *, note: str | None) -> str:
    parts = ["The agents' results:"]
    for item in plan.plan:
        result = task.extra_state.get(result_key(item.id))
        text = "(no result: this item did not run)" if result is None else str(result)
        parts += ["", f"[{item.id}] {item.agent}: {item.prompt}", f"Result: {text}"]
    if note:
        parts += ["", f"Note from the user: {note}"]
    parts += ["", "Combine these into the final answer to my request."]
    return "\n".join(parts)


def _cause(exc: AgentCoreError) -> str:
    """What made a sub-agent's step fail, without the sub-runner's advice about its own task."""
    return exc.cause if isinstance(exc, StepError) else exc.message


async def _sub_step(
    sub_task: SubTask, step: TaskStep, emit: EventSink | None, kwargs: dict[str, Any]
) -> TaskStepOutput:
    """Run the sub-task's next step; its tokens and tool calls stream as the delegate step's.

    `kwargs` carry the outer run's tool breakpoints, so they hold the sub-agent's calls too.
    """
    hold = {HOLD_TOOL: kwargs[HOLD_TOOL]} if HOLD_TOOL in kwargs else {}
    runner, task_id = sub_task.runner, sub_task.task_id
    if emit is None:
        return await runner.arun_step(task_id, **hold)
    output: TaskStepOutput | None = None
    async for event in runner.astream_step(task_id, **hold):
        if isinstance(event, StepCompletedEvent):
            output = event.output
        elif isinstance(event, TokenDeltaEvent | ToolCallStartedEvent | ToolCallFinishedEvent):
            emit(event.model_copy(update={"step_id": step.step_id}))
    if output is None:
        raise StepError("the sub-agent's step stream ended without a result")
    return output


def _finished(sub_task: SubTask) -> bool:
    last = sub_task.state.last_output
    return last is not None and last.is_last


def _total_usage(outputs: list[TaskStepOutput]) -> Usage:
    usage = Usage()
    for output in outputs:
        usage = usage + output.usage
    return usage


def _pause(
    step: TaskStep,
    task: Task,
    item_id: str,
    agent_name: str,
    sub_task: SubTask,
    pending: TaskStep,
    outputs: list[TaskStepOutput],
) -> TaskStepOutput:
    """End the delegate step at a call that waits for a person (see `_sub_tasks`)."""
    sub_task.save(task, item_id)
    state: dict[str, Any] = {"item": item_id, "agent": agent_name, "sub_step": pending.step_id}
    if pending.step_state.get("held"):
        state["held"] = True
    call = step.get_next_step(
        kind=StepKind.TOOL,
        input=pending.input,
        needs_approval=pending.needs_approval,
        step_state=state,
    )
    again = step.get_next_step(
        kind=StepKind.DELEGATE,
        input=step.input,
        step_state=dict(step.step_state),
        depends_on=[call.step_id],
        continues=True,
    )
    tool = pending.input.get("tool") if isinstance(pending.input, dict) else "a tool"
    return TaskStepOutput(
        output=f"The {agent_name} agent wants to call {tool}; it waits for you.",
        task_step=step,
        next_steps=[call, again],
        tool_calls=[c for output in outputs for c in output.tool_calls],
        usage=_total_usage(outputs),
    )
