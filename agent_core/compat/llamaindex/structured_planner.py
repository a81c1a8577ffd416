"""`StructuredPlannerAgent`: LlamaIndex's planner runner, on Stepwise's plan checks.

The model writes a plan of named sub-tasks with dependencies; each sub-task becomes a task of
this runner (so each is stepped, inspected and undone like any), run when its dependencies
are done; `refine_plan` asks the model to revise what remains. The plan is checked by the
same code as `PlannerAgentWorker`'s (unique names, known dependencies, no cycles).

Stepwise's `PlannerAgentWorker` is the better fit for new code: the plan and its sub-agents
are steps of one task, drawn as one DAG. This class is for LlamaIndex code that drives plans
itself (`create_plan`, `state.get_next_sub_tasks`, `run_task`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from agent_core.llms.base import LLM, ChatMessage
from agent_core.runtime.loop import run_sync, runs_on_runtime
from agent_core.runtime.runner import AgentRunner
from agent_core.tools.base import BaseTool
from agent_core.types import AgentChatResponse, AgentState, new_id
from agent_core.workers import PlanError, extract_plan_json, validate_plan
from agent_core.workers.base import BaseAgentWorker

__all__ = ["Plan", "PlannerAgentState", "StructuredPlannerAgent", "SubTask"]

_AGENT = "worker"  # Every sub-task runs on this runner's one worker.

PLAN_PROMPT = (
    "Think step by step. Given a task and a set of tools, create a comprehensive, end-to-end "
    "plan to accomplish the task. Keep in mind that not every task needs to be decomposed "
    "into multiple sub-tasks if it is simple enough. The plan should end with a sub-task "
    "that can achieve and satisfy the overall task. Reply with only this JSON: "
    '{"sub_tasks": [{"name": "<unique name>", "input": "<what to do>", '
    '"expected_output": "<what it gives>", "dependencies": ["<names it needs>"]}]}\n\n'
    "The tools available are:\n{tools}\n\nOverall Task: {task}"
)
REFINE_PROMPT = (
    "Think step by step. Given an overall task, a set of tools, and completed sub-tasks, "
    "update (if needed) the remaining sub-tasks so that the overall task can still be "
    "completed. Reply with only the plan JSON, as before, listing the remaining sub-tasks. "
    "If the remaining sub-tasks are sufficient, reply with them unchanged.\n\n"
    "The tools available are:\n{tools}\n\nOverall Task: {task}\n\n"
    "Completed Sub-Tasks + Outputs:\n{completed}\n\nRemaining Sub-Tasks:\n{remaining}"
)


class SubTask(BaseModel):
    """One sub-task of a plan."""

    name: str
    input: str
    expected_output: str = ""
    dependencies: list[str] = Field(default_factory=list)
    """Names of the sub-tasks that must be done first."""


class Plan(BaseModel):
    """A plan: its sub-tasks, in any order."""

    sub_tasks: list[SubTask]


class PlannerAgentState(AgentState):
    """The runner's tasks plus its plans and which of their sub-tasks are done."""

    plan_dict: dict[str, Plan] = Field(default_factory=dict)
    completed_sub_tasks: dict[str, list[SubTask]] = Field(default_factory=dict)
    sub_task_ids: dict[str, str] = Field(default_factory=dict)
    """Sub-task name -> the id of the task that runs it."""

    def get_completed_sub_tasks(self, plan_id: str) -> list[SubTask]:
        """The plan's sub-tasks marked done."""
        return self.completed_sub_tasks.setdefault(plan_id, [])

    def add_completed_sub_task(self, plan_id: str, sub_task: SubTask) -> None:
        """Mark a sub-task of the plan done."""
        self.get_completed_sub_tasks(plan_id).append(sub_task)

    def get_remaining_subtasks(self, plan_id: str) -> list[SubTask]:
        """The plan's sub-tasks not done yet."""
        done = {s.name for s in self.get_completed_sub_tasks(plan_id)}
        return [s for s in self.plan_dict[plan_id].sub_tasks if s.name not in done]

    def get_next_sub_tasks(self, plan_id: str) -> list[SubTask]:
        """The remaining sub-tasks whose dependencies are all done."""
        done = {s.name for s in self.get_completed_sub_tasks(plan_id)}
        return [
            s
            for s in self.get_remaining_subtasks(plan_id)
            if all(dep in done for dep in s.dependencies)
        ]


def parse_sub_task_plan(text: str) -> Plan:
    """The plan in a model's reply: LlamaIndex's `{"sub_tasks": [...]}` or Stepwise's format.

    Raises:
        PlanError: No valid plan (the message lists every problem, with the raw text).
    """
    data, problem = extract_plan_json(text)
    if problem is not None:
        raise PlanError.from_problems([problem], text)
    expected: dict[str, str] = {}
    if isinstance(data, dict) and isinstance(data.get("sub_tasks"), list):
        items = [i for i in data["sub_tasks"] if isinstance(i, dict)]
        expected = {str(i.get("name")): str(i.get("expected_output", "")) for i in items}
        data = {"plan": [_as_plan_item(item) for item in data["sub_tasks"]]}
    checked = validate_plan(data, agents={_AGENT}, raw_text=text)
    return Plan(
        sub_tasks=[
            SubTask(
                name=item.id,
                input=item.prompt,
                expected_output=expected.get(item.id, ""),
                dependencies=item.depends_on,
            )
            for item in checked.plan
        ]
    )


def _as_plan_item(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    return {
        "id": item.get("name"),
        "agent": _AGENT,
        "prompt": item.get("input"),
        "depends_on": item.get("dependencies") or [],
    }


class StructuredPlannerAgent(AgentRunner):
    """A runner that plans sub-tasks with a model and runs each as a task of its own.

    Args:
        agent_worker: Runs every sub-task.
        tools: The tools the plan may count on (named in the planning prompt).
        llm: The planning model; defaults to the worker's.
        **kwargs: As for `AgentRunner`.
    """

    def __init__(
        self,
        agent_worker: BaseAgentWorker,
        tools: Sequence[BaseTool] | None = None,
        llm: LLM | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(agent_worker, llm=llm, **kwargs)
        own = getattr(agent_worker, "tools", {})
        self.tools = list(tools if tools is not None else getattr(own, "values", list)())
        self.state: PlannerAgentState = PlannerAgentState()

    def reset(self) -> None:
        """As `AgentRunner.reset`; plans are forgotten too."""
        super().reset()
        self.state = PlannerAgentState()

    def create_plan(self, input: str, **kwargs: Any) -> str:
        """Sync twin of `acreate_plan`."""
        return run_sync(self.acreate_plan(input, **kwargs), name="create_plan")

    def refine_plan(self, input: str, plan_id: str, **kwargs: Any) -> None:
        """Sync twin of `arefine_plan`."""
        run_sync(self.arefine_plan(input, plan_id, **kwargs), name="refine_plan")

    @runs_on_runtime
    async def acreate_plan(self, input: str, **kwargs: Any) -> str:
        """Ask the model for a plan, create a task per sub-task, and return the plan's id.

        A reply with no valid plan gives a one-sub-task plan (the whole input), as in
        LlamaIndex.
        """
        try:
            plan = await self._ask_plan(PLAN_PROMPT.replace("{task}", input))
        except PlanError:
            plan = Plan(sub_tasks=[SubTask(name="default", input=input)])
        plan_id = new_id()
        self._adopt(plan_id, plan)
        return plan_id

    @runs_on_runtime
    async def arefine_plan(self, input: str, plan_id: str, **kwargs: Any) -> None:
        """Ask the model to revise the plan's remaining sub-tasks; keep them if it gives none."""
        remaining = self.state.get_remaining_subtasks(plan_id)
        if not remaining:
            return
        completed = "\n".join(
            f"{s.name}:\n\t{self._output_of(s)}"
            for s in self.state.get_completed_sub_tasks(plan_id)
        )
        prompt = (
            REFINE_PROMPT.replace("{task}", input)
            .replace("{completed}", completed)
            .replace("{remaining}", "\n".join(s.model_dump_json() for s in remaining))
        )
        try:
            self._adopt(plan_id, await self._ask_plan(prompt))
        except PlanError:
            return  # LlamaIndex keeps the plan when no new one comes back.

    @runs_on_runtime
    async def arun_task(self, task_id: str, **kwargs: Any) -> AgentChatResponse:
        """Run a sub-task (by name, or a task by id) to its last step and finalize it."""
        task_id = self.state.sub_task_ids.get(task_id, task_id)
        while not (await self.arun_step(task_id, **kwargs)).is_last:
            pass
        return self.finalize_response(task_id)

    def run_task(self, task_id: str, **kwargs: Any) -> AgentChatResponse:
        """Sync twin of `arun_task`."""
        return run_sync(self.arun_task(task_id, **kwargs), name="run_task")

    @runs_on_runtime
    async def achat(self, message: str, **kwargs: Any) -> AgentChatResponse:
        """Plan, run the sub-tasks as their dependencies allow (refining after each round).

        Returns the response of the last sub-task run.
        """
        plan_id = await self.acreate_plan(message)
        response = AgentChatResponse(response="")
        while next_tasks := self.state.get_next_sub_tasks(plan_id):
            responses = await asyncio.gather(*(self.arun_task(s.name) for s in next_tasks))
            for sub_task in next_tasks:
                self.state.add_completed_sub_task(plan_id, sub_task)
            response = responses[-1]
            await self.arefine_plan(message, plan_id)
        return response

    async def _ask_plan(self, prompt: str) -> Plan:
        llm = self.llm
        if llm is None:
            raise PlanError("StructuredPlannerAgent needs an llm (or a worker with one)")
        tools = "\n".join(f"{t.name}: {t.metadata.description}" for t in self.tools)
        message = ChatMessage(role="user", content=prompt.replace("{tools}", tools))
        reply = await llm.chat([message])
        return parse_sub_task_plan(reply.text)

    def _adopt(self, plan_id: str, plan: Plan) -> None:
        self.state.plan_dict[plan_id] = plan
        for sub_task in plan.sub_tasks:
            if sub_task.name not in self.state.sub_task_ids:
                task = self.create_task(sub_task.input)
                self.state.sub_task_ids[sub_task.name] = task.task_id

    def _output_of(self, sub_task: SubTask) -> str:
        task_id = self.state.sub_task_ids.get(sub_task.name)
        try:
            return "" if task_id is None else str(self.get_task_output(task_id))
        except Exception:  # Not run yet (or deleted): nothing to report.
            return ""
