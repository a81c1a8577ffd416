"""The runtime's data: tasks, steps, step outputs and the state a runner keeps per task.

Everything here is a pydantic model that round-trips through JSON. Steps refer to each other
by id, never by live object, so a task can be stored, reloaded and drawn as a DAG.
"""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, SerializerFunctionWrapHandler, field_serializer

from agent_core._lazy import materialized
from agent_core._private_attrs import private
from agent_core.effects import Effect
from agent_core.llms.base import ChatMessage, Usage
from agent_core.memory import ChatMemoryBuffer, MemorySnapshot

__all__ = [
    "DONE_STATUSES",
    "INTERRUPT_KEY",
    "AgentChatResponse",
    "AgentState",
    "ForkPoint",
    "ImportSource",
    "RunLimits",
    "StepAction",
    "StepInput",
    "StepKind",
    "StepNote",
    "StepSnapshot",
    "StepStatus",
    "Task",
    "TaskState",
    "TaskStatus",
    "TaskStep",
    "TaskStepOutput",
    "ToolOutput",
    "new_id",
    "short_id",
    "utcnow",
]

StepInput = str | dict[str, Any] | None
"""A step's input: text for reasoning steps, a JSON object for tool calls, or nothing."""


def new_id() -> str:
    """A fresh id for a task or step: 32 hex digits, milliseconds first, then 80 random bits.

    Ids made later sort later (as UUIDv7 does), so the store's indexes grow at their right
    edge: a commit touches the same few pages instead of a random page per new row.
    """
    return f"{time.time_ns() // 1_000_000:012x}{secrets.randbits(80):020x}"


def short_id(id: str) -> str:
    """The last 8 digits of an id: enough to tell tasks and steps apart in a message.

    The first digits are the creation time, shared by every id made in the same minute.
    """
    return id[-8:]


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class TaskStatus(StrEnum):
    """Where a task is in its life."""

    ACTIVE = "active"
    COMPLETED = "completed"
    ABANDONED = "abandoned"
    FAILED = "failed"


class StepStatus(StrEnum):
    """Where a step is in its life."""

    UPCOMING = "upcoming"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    UNDONE = "undone"
    SKIPPED = "skipped"


DONE_STATUSES = frozenset({StepStatus.COMPLETED, StepStatus.SKIPPED})
"""Statuses that let the steps depending on a step run."""

INTERRUPT_KEY = "interrupt"
"""The `step_state` key of an upcoming `human` step that the agent queued to ask a person
something (a LangGraph `interrupt(value)`): the question, as JSON. The person's answer is
the step's input."""

REQUEST_TOOLS_KEY = "request_tools"
"""The `step_state` key of the tools a framework's agent offered its model at the step (each a
`ToolSpec` as JSON: name, description, parameters), where its adapter sees them: a saved case
records them in the step's request, and its replay compares them."""


class StepKind(StrEnum):
    """What a step does; the DAG and the UI draw each kind differently."""

    LLM = "llm"
    TOOL = "tool"
    PLAN = "plan"
    DELEGATE = "delegate"
    HUMAN = "human"
    FINALIZE = "finalize"
    CUSTOM = "custom"


class StepAction(StrEnum):
    """What a person may do to an upcoming step.

    A worker that cannot honour one says why in `TaskStep.cannot`, and the runner refuses it
    (code `step_action_unsupported`).
    """

    EDIT = "edit"
    """Change the step's input (`edit_step`, `run_step(input=...)`)."""
    SKIP = "skip"
    REJECT = "reject"
    FEEDBACK = "feedback"
    """Add a person's message before this step runs (`add_feedback`)."""


class RunLimits(BaseModel):
    """Bounds a person set on one task's run; None leaves the agent's own bound.

    The worker's `max_iterations` (its constructor argument, or the spec's) is the default;
    a person raises it on the task from the app, so a task stopped by a bound can go on.
    """

    max_iterations: int | None = Field(default=None, ge=1, le=100_000)
    """Reasoning steps the task may take."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Tokens (prompt and completion) the task's completed steps may spend."""
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Dollars the task's completed steps may spend (for models whose price is known)."""


class ForkPoint(BaseModel):
    """Where a forked task came from: a completed step of another task."""

    task_id: str
    step_id: str
    """The original's step, the fork's last completed step (under a new id in the fork)."""
    number: int | None = None
    """That step's number, for people."""


class ImportSource(BaseModel):
    """Where an imported task came from: the file's format, its name, the trace in it."""

    format: str
    """`stepwise`, `otlp` (OpenTelemetry GenAI conventions), `openinference`, `langfuse` or
    `langsmith`."""
    file: str = ""
    """The file's name as given (no folder is ever read from it again)."""
    trace_id: str = ""
    """The trace's id in its own system, to find it there."""
    framework: str = ""
    """The instrumentation that recorded it, when the trace says (`pydantic-ai`, `openai`)."""


class Task(BaseModel):
    """One request to an agent, run as a sequence (or DAG) of steps."""

    task_id: str = Field(default_factory=new_id)
    input: str
    memory: ChatMemoryBuffer = Field(default_factory=ChatMemoryBuffer)
    """The conversation as the model sees it: earlier turns plus this task's messages."""
    extra_state: dict[str, Any] = Field(default_factory=dict)
    """Worker state for this task; must be JSON-serialisable."""
    status: TaskStatus = TaskStatus.ACTIVE
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    spec: dict[str, Any] | None = None
    """The description of the agent the task runs with, when it was built from one."""
    history_length: int = 0
    """How many messages at the start of `memory` came from the runner's earlier conversation."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost of the task's completed steps."""
    imported: bool = False
    """A copy read from a trace file: shown as it was, never run (see `agent_core.trace`)."""
    imported_from: ImportSource | None = None
    """Where an imported task came from (`agent_core.recordings.importers`)."""
    thread_id: str = ""
    """The conversation thread the task belongs to; its own id when it started one (set on
    validation). A task that continues a finished task's conversation shares its thread."""
    continued_from: str | None = None
    """The finalized task whose conversation this one continues (`create_task(continue_from=)`)."""
    forked_from: ForkPoint | None = None
    """Set on a task made by `AgentRunner.fork_task`."""
    replay_of: str | None = None
    """The case (by name) this task replays, when `replay_case` made it: the faces label it,
    so a replay kept in a person's store is not taken for their own run."""
    limits: RunLimits = Field(default_factory=RunLimits)
    """Bounds a person set on this task (`AgentRunner.set_limits`)."""

    def model_post_init(self, _context: object) -> None:  # noqa: D102 - pydantic hook
        if not self.thread_id:  # A new task, or one stored before threads: its own thread.
            self.thread_id = self.task_id


class TaskStep(BaseModel):
    """One unit of work in a task: its input, its place in the DAG and its status."""

    task_id: str
    step_id: str = Field(default_factory=new_id)
    input: StepInput = None
    step_state: dict[str, Any] = Field(default_factory=dict)
    kind: StepKind = StepKind.LLM
    name: str | None = None
    """The agent's own name for the step (a LangGraph node, a pydantic-ai graph node, an
    Agents SDK turn), shown beside its kind; None for the built-in workers."""
    cannot: dict[StepAction, str] = Field(default_factory=dict)
    """What a person may not do to this step, each with the reason (the framework behind the
    worker cannot do it); faces grey the control out and show the reason."""
    status: StepStatus = StepStatus.UPCOMING
    needs_approval: bool = False
    """A tool call waiting for a person to approve (run), edit or reject it."""
    prev_step_ids: list[str] = Field(default_factory=list)
    next_step_ids: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    """Steps that must complete before this one may run (ids)."""
    branch_id: str = "main"
    edited: bool = False
    proposed_input: StepInput = None
    """What the worker proposed, kept when a person changed the input (`edited`)."""
    continues: str | None = None
    """The step this one carries on (a paused delegate step): steps that waited for that one
    wait for this one instead."""
    rejection: str | None = None
    """A person's reason for refusing this tool call (`AgentRunner.reject_step`): it did not run."""
    number: int | None = None
    """Position among the task's completed steps (1-based), set when the step completes."""
    error: str | None = None
    """Why the step failed, as the runtime said it (None unless it failed)."""
    error_code: str | None = None
    """The stable code of what failed the step (`agent_core.errors.ERROR_CODES`); None when
    it did not fail, or failed before errors carried codes."""
    error_params: dict[str, Any] = Field(default_factory=dict)
    """The facts of `error_code` (JSON), for a face to word the error its own way."""
    undo_warnings: list[str] = Field(default_factory=list)
    """What undoing this step could not revert (side effects of its tools)."""
    attempts: int = 0
    claimed_by: str | None = None
    """Which runner is running the step (`host:pid:runner`), while it runs."""
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def get_next_step(
        self,
        step_id: str | None = None,
        input: StepInput = None,
        step_state: dict[str, Any] | None = None,
        *,
        kind: StepKind = StepKind.LLM,
        depends_on: list[str] | None = None,
        needs_approval: bool = False,
        continues: bool = False,
        name: str | None = None,
        cannot: dict[StepAction, str] | None = None,
    ) -> TaskStep:
        """A new step that follows this one on the same branch.

        The first three parameters are LlamaIndex's, in its order; `step_id` defaults to a
        fresh id. `continues=True` makes the step carry this one on: what waits for this
        step waits for it.
        """
        return TaskStep(
            task_id=self.task_id,
            step_id=step_id or new_id(),
            input=input,
            kind=kind,
            name=name,
            cannot=dict(cannot or {}),
            needs_approval=needs_approval,
            continues=self.step_id if continues else None,
            step_state=step_state if step_state is not None else {},
            prev_step_ids=[self.step_id],
            depends_on=depends_on or [],
            branch_id=self.branch_id,
        )

    def link_step(self, next_step: TaskStep) -> None:
        """Record that `next_step` follows this one (by id, both ways), as LlamaIndex's does."""
        if next_step.step_id not in self.next_step_ids:
            self.next_step_ids.append(next_step.step_id)
        if self.step_id not in next_step.prev_step_ids:
            next_step.prev_step_ids.append(self.step_id)

    @property
    def awaits_answer(self) -> bool:
        """Whether the agent queued this step to ask a person (`INTERRUPT_KEY`), unanswered."""
        return self.kind is StepKind.HUMAN and INTERRUPT_KEY in self.step_state and not self.input

    def set_input(self, value: StepInput) -> None:
        """Give the step a person's input, remembering what the worker proposed."""
        if value == self.input:
            return
        if self.edited and value == self.proposed_input:
            # Typed back to the proposal: nothing differs, so nothing is an edit.
            self.input, self.proposed_input, self.edited = value, None, False
            return
        if not self.edited:
            self.proposed_input = self.input
            self.edited = True
        self.input = value


class ToolOutput(BaseModel):
    """One tool call as it ran: the call, what the tool returned, and whether it failed."""

    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments as the model wrote them (121 stays 121 where the tool takes a float)."""
    args_used: dict[str, Any] | None = None
    """What the tool received after validation, when that differs from `args` (coerced
    values, filled-in defaults); None when they are the same."""
    content: str = ""
    is_error: bool = False
    call_id: str = ""
    rejected: bool = False
    """A person refused the call, so it never ran (`content` holds their reason)."""
    raw_input: dict[str, Any] = Field(default_factory=dict)
    """LlamaIndex's name for the call's input; Stepwise's tools fill `args` and leave it empty."""
    raw_output: Any = None
    """LlamaIndex's name for what the tool returned, when a worker records it (JSON only)."""

    def __str__(self) -> str:
        return self.content


class ComponentRun(BaseModel):
    """One component as it ran: what it got, what it returned, and how long it took.

    Values are kept as JSON (cut past `agent_core.workers.pipeline.MAX_RECORDED_CHARS`), so a step's
    record can be stored and drawn; an object JSON cannot hold is kept as its `repr`.
    Defined here, not beside the pipeline, so the core types do not load the pipeline.
    """

    name: str
    inputs: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    latency_ms: float = 0.0


class StepNote(BaseModel):
    """Something a person should know about a step that did not fail, by a stable `code`.

    Codes: `no_tool_call` (the model was offered tools on the task's first step and answered
    in prose; some local servers ignore tools unless asked, or the model cannot call them);
    `reply_cut_at_cap` (a framework agent's model reply ended at its max-tokens cap: it is
    incomplete);
    on imported tasks, `trace_span` (a span that was neither a model nor a tool call, kept as
    it was recorded) and `trace_gap` (what the trace held that could not be read).
    Faces word it from `code`; `message` is the Python API's words.
    """

    code: str
    message: str


class TaskStepOutput(BaseModel):
    """What one step produced, and the steps it queues next."""

    output: Any = None
    task_step: TaskStep
    next_steps: list[TaskStep] = Field(default_factory=list)
    is_last: bool = False
    thought: str | None = None
    tool_calls: list[ToolOutput] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = 0.0
    error: str | None = None
    effects: list[Effect] = Field(default_factory=list)
    """Side effects the step's tools had (file writes, ...), reverted by undo."""
    messages_sent: list[ChatMessage] = Field(default_factory=list)
    """The messages the step's model call got, exactly (empty when it called no model). Set
    on the output a run returns; stored apart, so `AgentRunner.get_messages_sent` reads it
    for any step later."""
    components: list[ComponentRun] = Field(default_factory=list)
    """Each pipeline component the step ran, with its inputs, output and latency
    (`QueryPipelineAgentWorker`); empty for other workers."""
    notes: list[StepNote] = Field(default_factory=list)
    """What a person should know about the step (`StepNote`), e.g. `no_tool_call`."""
    skipped: bool = False
    """A person skipped the step (it never ran); still true once the skip is undone."""

    def __str__(self) -> str:
        return str(self.output)


class AgentChatResponse(BaseModel):
    """A finished task's answer, with the tool results it drew on."""

    response: str
    sources: list[ToolOutput] = Field(default_factory=list)
    task_id: str = ""

    def __str__(self) -> str:
        return self.response


class StepSnapshot(BaseModel):
    """The task as it was just before a step committed: what `undo_step` restores."""

    step_id: str
    memory: MemorySnapshot
    extra_state_json: str


class TaskState(BaseModel):
    """Everything a runner knows about one task; steps live in `steps`, the rest are ids."""

    task: Task
    steps: dict[str, TaskStep] = Field(default_factory=dict)
    """Every step the task ever had, including undone and failed ones, in creation order."""
    outputs: dict[str, TaskStepOutput] = Field(default_factory=dict)
    """Outputs of completed and undone steps."""
    queue: list[str] = Field(default_factory=list)
    """Steps still to run, in order (upcoming, running or failed)."""
    completed: list[str] = Field(default_factory=list)
    """Completed steps in commit order: undo pops from the end."""
    snapshots: dict[str, StepSnapshot] = Field(default_factory=dict)
    version: int = 0
    """Bumped on every commit; lets two runners on one store detect each other's writes."""

    _extra_state_json: str | None = PrivateAttr(default=None)

    @field_serializer("outputs", "snapshots", mode="wrap")
    def _built(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        # A loaded task builds its outputs and snapshots when read (`agent_core._lazy`); the
        # serializer reads the dict's own storage, so it must see them all built.
        return handler(materialized(value))

    @property
    def extra_state_json(self) -> str:
        """`task.extra_state` as last committed, as JSON (`"{}"` before anything set it).

        A step starts from it and its snapshot keeps it; the store writes it. The live dict
        can run ahead of it while a step works on its copy, so set the two together with
        `set_extra_state_json` whenever the dict is committed, loaded or restored.
        """
        return private(self, "_extra_state_json") or "{}"

    def set_extra_state_json(self, text: str) -> None:
        """Record `text` as the committed JSON of `task.extra_state` (keep the two equal)."""
        self._extra_state_json = text

    @property
    def task_id(self) -> str:
        """The task's id."""
        return self.task.task_id

    @property
    def step_queue(self) -> list[TaskStep]:
        """The steps still to run, in order."""
        return [self.steps[step_id] for step_id in self.queue]

    @property
    def completed_steps(self) -> list[TaskStepOutput]:
        """Outputs of the completed steps, oldest first (undone ones excluded)."""
        return [self.outputs[step_id] for step_id in self.completed]

    @property
    def last_output(self) -> TaskStepOutput | None:
        """The most recently completed step's output, if any."""
        return self.outputs[self.completed[-1]] if self.completed else None

    def is_ready(self, step: TaskStep) -> bool:
        """Whether every step `step` depends on has completed (or was skipped)."""
        return all(
            self.steps[dep].status in DONE_STATUSES for dep in step.depends_on if dep in self.steps
        )


class AgentState(BaseModel):
    """The runner's in-memory view of its tasks (a cache over its store)."""

    task_dict: dict[str, TaskState] = Field(default_factory=dict)
