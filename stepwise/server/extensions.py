"""Stepwise's own routes beside the Agent Protocol: what a debugger adds to tasks and steps.

Undo, abandon, edit an upcoming step, approve (with edited arguments) or reject a tool call,
feedback, edit the conversation, raise the run's limits, fork from a step, run until a
breakpoint, finalize, cancel a running step, the step graph, and a live event stream. Every
change may carry the task version the client last saw (an `expected_version` field, or an
`If-Match` header): a task changed since is refused with 409, as the app refuses a stale tab.
Every answer carries the task as it is now, its version too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from agent_core.dag import build_dag, to_vis_data
from agent_core.errors import ConflictError, UserError
from agent_core.llms.base import Usage
from agent_core.runtime.breakpoints import AtStep, Breakpoint, CostOver, OnTool, TokensOver
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.types import ForkPoint, RunLimits, StepKind, StepStatus
from stepwise.http.errors import ApiError
from stepwise.server._ap_models import Step
from stepwise.server.agent_protocol import step_of
from stepwise.server.runtime import Runtime

__all__ = ["router"]

router = APIRouter(prefix="/stepwise/v1/tasks/{task_id}", tags=["stepwise extensions"])
IfMatch = Annotated[
    str | None, Header(description="The task version the client saw (as expected_version).")
]


class Versioned(BaseModel):
    """A change that may say which version of the task it was made against."""

    expected_version: int | None = Field(
        default=None, description="Refused with 409 if the task has changed since this version."
    )


class UndoBody(Versioned):
    """Undo the last `steps` completed steps."""

    steps: int = Field(default=1, ge=1, le=1000)


class EditBody(Versioned):
    """A new input for an upcoming step (text, or a tool call's {"tool", "args"})."""

    input: str | dict[str, Any]


class ApproveBody(Versioned):
    """Run a tool call awaiting approval, with its arguments edited when given."""

    arguments: dict[str, Any] | None = Field(default=None, description="Replace the arguments.")


class RejectBody(Versioned):
    """Refuse a tool call; the model reads the reason instead of a result."""

    reason: str = Field(default="", max_length=10_000)


class FeedbackBody(Versioned):
    """A person's message, put into the task before its next step."""

    text: str = Field(min_length=1)


class ConversationBody(Versioned):
    """The conversation the model is to read next, whole: each message a role and its text."""

    messages: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)


class LimitsBody(Versioned):
    """Bounds of the task's run; a field left out keeps its bound, null gives the default."""

    model_config = {"extra": "forbid"}
    max_iterations: int | None = Field(default=None, ge=1, le=100_000)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class RunUntilBody(Versioned):
    """Run steps until the last one, an approval, an error, or a breakpoint."""

    max_steps: int | None = Field(default=None, ge=1, le=10_000)
    before_tools: bool = Field(default=False, description="Stop before any tool call runs.")
    on_tools: list[str] = Field(default_factory=list, description="Stop before these tools run.")
    at_step: int | None = Field(default=None, ge=1, description="Stop once this many are done.")
    cost_over_usd: float | None = Field(default=None, gt=0)
    tokens_over: int | None = Field(default=None, gt=0)
    resume: bool = Field(default=False, description="Go on past the breakpoint that stopped it.")


class TaskView(BaseModel):
    """A task as Stepwise sees it: status, version, and its live steps."""

    task_id: str
    status: Literal["active", "completed", "abandoned", "failed"]
    version: int
    input: str
    usage: Usage
    thread_id: str = Field(description="Its conversation thread (its own id when it began one).")
    forked_from: ForkPoint | None = None
    limits: RunLimits
    steps: list[Step] = Field(description="Completed steps in order, then upcoming ones.")


class RunUntilView(TaskView):
    """What a run until did and why it stopped."""

    reason: str
    detail: str
    ran: list[str] = Field(description="The ids of the steps it ran.")


class FinalView(TaskView):
    """The task's final response."""

    response: str


def _view(runner: ParallelAgentRunner, task_id: str) -> dict[str, Any]:
    state = runner.get_task_state(task_id)
    live = [state.steps[s] for s in [*state.completed, *state.queue]]
    task = state.task
    return {
        "task_id": task_id,
        "status": task.status.value,
        "version": state.version,
        "input": task.input if isinstance(task.input, str) else str(task.input),
        "usage": task.usage,
        "thread_id": task.thread_id,
        "forked_from": task.forked_from,
        "limits": task.limits,
        "steps": [step_of(state, step) for step in live],
    }


def _runner(runtime: Any, task_id: str, expected: int | None, if_match: str | None) -> Any:
    """The task's runner, once the version the client saw is checked."""
    runner = runtime.runner_for_task(task_id)
    wanted = expected if expected is not None else _version_header(if_match)
    if wanted is not None:
        current = runner.store.task_version(task_id)
        if current != wanted:
            raise ApiError(
                409,
                "task_changed",
                f"the task changed since version {wanted} (it is at version {current}); "
                "reload it and try again",
                hint=f"GET /stepwise/v1/tasks/{task_id} shows it as it is",
            )
    return runner


def _version_header(if_match: str | None) -> int | None:
    if not if_match or if_match.strip() == "*":  # RFC 9110: `*` matches any current version.
        return None
    try:
        return int(if_match.strip().strip('W/"'))
    except ValueError:
        raise ApiError(422, "invalid_request", "If-Match must hold a task version") from None


@router.get("", response_model=TaskView, summary="The task, its version and live steps")
def get_task(task_id: str, runtime: Runtime) -> dict[str, Any]:
    """The task as it is now."""
    return _view(runtime.reader(), task_id)


@router.post("/undo", response_model=TaskView, summary="Undo the last steps")
def undo(task_id: str, body: UndoBody, runtime: Runtime, if_match: IfMatch = None) -> Any:
    """Revert the last `steps` completed steps exactly (memory, state, files)."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    runner.undo_step(task_id, steps=body.steps)
    return _view(runner, task_id)


@router.post("/abandon", response_model=TaskView, summary="Abandon the task")
def abandon(
    task_id: str, runtime: Runtime, body: Versioned | None = None, if_match: IfMatch = None
) -> Any:
    """Stop the task for good; its steps stay readable."""
    runner = _runner(runtime, task_id, body.expected_version if body else None, if_match)
    runner.abandon_task(task_id)
    return _view(runner, task_id)


@router.patch("/steps/{step_id}", response_model=TaskView, summary="Edit an upcoming step")
def edit(
    task_id: str, step_id: str, body: EditBody, runtime: Runtime, if_match: IfMatch = None
) -> Any:
    """Change an upcoming step's input without running it (the proposal is kept)."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    runner.edit_step(task_id, step_id, body.input)
    return _view(runner, task_id)


@router.post("/steps/{step_id}/approve", response_model=TaskView, summary="Approve a tool call")
def approve(
    task_id: str,
    step_id: str,
    runtime: Runtime,
    body: ApproveBody | None = None,
    if_match: IfMatch = None,
) -> Any:
    """Run a tool call awaiting approval, with `arguments` instead of the model's if given."""
    body = body or ApproveBody()
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    step = runner.get_step(task_id, step_id)
    if step.kind is not StepKind.TOOL or not isinstance(step.input, dict):
        raise ApiError(409, "not_a_tool_call", f"step {step_id} is not a tool call to approve")
    edited = None if body.arguments is None else {**step.input, "args": body.arguments}
    runner.start_step(task_id, step_id, edited).result()
    return _view(runner, task_id)


@router.post("/steps/{step_id}/reject", response_model=TaskView, summary="Reject a tool call")
def reject(
    task_id: str, step_id: str, body: RejectBody, runtime: Runtime, if_match: IfMatch = None
) -> Any:
    """Refuse a tool call; the model reads `reason` instead of a result."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    runner.reject_step(task_id, step_id, message=body.reason)
    return _view(runner, task_id)


@router.post("/feedback", response_model=TaskView, summary="Add a person's feedback")
def feedback(task_id: str, body: FeedbackBody, runtime: Runtime, if_match: IfMatch = None) -> Any:
    """Put a message into the task before its next step."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    runner.add_feedback(task_id, body.text)
    return _view(runner, task_id)


@router.get("/conversation", summary="The conversation the model reads next")
def conversation(task_id: str, runtime: Runtime) -> dict[str, Any]:
    """The task's messages, oldest first, as `PUT /conversation` takes them back."""
    task = runtime.reader().get_task(task_id)
    messages = [m.model_dump(mode="json", exclude_defaults=True) for m in task.memory.get_all()]
    return {"task_id": task_id, "messages": messages}


@router.put("/conversation", response_model=TaskView, summary="Edit the conversation")
def edit_conversation(
    task_id: str, body: ConversationBody, runtime: Runtime, if_match: IfMatch = None
) -> Any:
    """Replace what the model reads next (a recorded `human` step that undo reverts)."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    runner.edit_conversation(task_id, body.messages)
    return _view(runner, task_id)


@router.patch("/limits", response_model=TaskView, summary="Change the run's limits")
def set_limits(task_id: str, body: LimitsBody, runtime: Runtime, if_match: IfMatch = None) -> Any:
    """Raise (or lower) the task's bounds; a task a bound stopped goes on."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    runner.set_limits(task_id, **body.model_dump(exclude_unset=True, exclude={"expected_version"}))
    return _view(runner, task_id)


class ForkBody(BaseModel):
    """Fork with another agent: a registered agent's name, on the server's model."""

    agent: str | None = Field(default=None, max_length=64)


@router.post("/steps/{step_id}/fork", response_model=TaskView, summary="Fork from a step")
def fork(task_id: str, step_id: str, runtime: Runtime, body: ForkBody | None = None) -> Any:
    """A new task standing where this one stood after completed step `step_id`.

    With `agent`, the fork goes on with that agent from the conversation up to the step (an
    imported task's too); its next model step runs live.
    """
    agent = runtime.spec_named(body.agent) if body and body.agent else None
    runner = runtime.runner_for(agent) if agent else runtime.runner_for_task(task_id)
    try:
        forked = runner.fork_task(task_id, step_id, agent=agent)
    except UserError as exc:
        raise _fork_race(runner, exc, task_id, step_id) or exc from None
    return _view(runner, forked.task_id)


def _fork_race(runner: Any, exc: UserError, task_id: str, step_id: str) -> ConflictError | None:
    """A fork from a step that is undone now: the task changed under the client (a 409)."""
    if exc.code != "fork_point_not_completed":
        return None
    step = runner.get_task_state(task_id).steps.get(step_id)
    if step is None or step.status is not StepStatus.UNDONE:
        return None  # Never completed: the request itself is wrong (a 400).
    return ConflictError(
        f"task {task_id} changed while forking: step {step_id} was undone, so no fork can "
        "start from it; reload the task and try again",
        hint=f"GET /stepwise/v1/tasks/{task_id} shows the task as it is",
        task_id=task_id,
        step_id=step_id,
        code="task_changed",
    )


@router.post("/run_until", response_model=RunUntilView, summary="Run until a breakpoint")
def run_until(task_id: str, body: RunUntilBody, runtime: Runtime, if_match: IfMatch = None) -> Any:
    """Run steps until the last one, a tool awaiting approval, an error, or a breakpoint."""
    runner = _runner(runtime, task_id, body.expected_version, if_match)
    stops: list[Breakpoint] = [OnTool(name) for name in body.on_tools]
    if body.before_tools:
        stops.append(OnTool())
    if body.at_step is not None:
        stops.append(AtStep(body.at_step))
    if body.cost_over_usd is not None:
        stops.append(CostOver(body.cost_over_usd))
    if body.tokens_over is not None:
        stops.append(TokensOver(body.tokens_over))
    result = runner.run_until(task_id, stop=stops, max_steps=body.max_steps, resume=body.resume)
    ran = [output.task_step.step_id for output in result.outputs]
    return {**_view(runner, task_id), "reason": result.reason, "detail": result.detail, "ran": ran}


@router.post("/finalize", response_model=FinalView, summary="Finalize the task")
def finalize(
    task_id: str, runtime: Runtime, body: Versioned | None = None, if_match: IfMatch = None
) -> Any:
    """The task's final response, once its last step has run."""
    runner = _runner(runtime, task_id, body.expected_version if body else None, if_match)
    response = runner.finalize_response(task_id)
    return {**_view(runner, task_id), "response": str(response.response)}


@router.post("/steps/{step_id}/cancel", response_model=TaskView, summary="Stop a running step")
def cancel(task_id: str, step_id: str, runtime: Runtime) -> Any:
    """Stop a running step, in this process or another on the same PostgreSQL database.

    It is recorded as failed and can run again.
    """
    runner = runtime.cancel_step(task_id, step_id)
    return _view(runner, task_id)


@router.get("/dag", summary="The step graph, as nodes and edges")
def dag(task_id: str, runtime: Runtime) -> dict[str, Any]:
    """The task's steps as a graph (vis-network's data: nodes, edges)."""
    state = runtime.reader().get_task_state(task_id)
    return to_vis_data(build_dag(state))


@router.get(
    "/events",
    summary="The task's events, live (server-sent events)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def events(task_id: str, request: Request, runtime: Runtime) -> StreamingResponse:
    """Step started, token deltas, tool calls, completed, failed, undone... as they happen.

    A server process streams to at most `MAX_SUBSCRIBERS` clients at once: past that, 503
    `too_many_subscribers`.
    """
    runtime.reader().get_task(task_id)  # A 404 before the stream begins.
    stream = runtime.events.subscribe(task_id, request.is_disconnected)
    return StreamingResponse(stream, media_type="text/event-stream")
