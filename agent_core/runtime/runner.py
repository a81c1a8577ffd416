"""`AgentRunner`: runs a worker's steps one at a time, and owns everything around them.

The runner keeps the queue of upcoming steps, the status of every step, the snapshots that
make undo exact, and the store that makes all of it survive a restart. Each operation is a
small state transition committed to the store in one transaction; the worker only computes.

Every public method has an async twin. The work runs on the one runtime loop
(`agent_core.runtime.loop`), whichever thread or loop calls; the sync twins hand it there and
wait, and refuse to run inside a live loop (use the `a`-prefixed twin there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import re
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from agent_core._lazy import paused_gc, shallow_copy
from agent_core._nesting import MAX_NESTING, too_deep
from agent_core.errors import (
    AgentCoreError,
    ConflictError,
    InputTooLargeError,
    InvalidTextError,
    NothingToRunError,
    StepError,
    StepNotFoundError,
    StoreError,
    TaskNotFoundError,
    UserError,
)
from agent_core.events import (
    StepCompletedEvent,
    StepEvent,
    StepFailedEvent,
    StepStartedEvent,
)
from agent_core.llms.base import LLM, ChatMessage
from agent_core.memory import DEFAULT_TOKEN_LIMIT, ChatMemoryBuffer, StagedMemory
from agent_core.runtime import undo
from agent_core.runtime.breakpoints import Breakpoint, RunUntilResult, tool_hold
from agent_core.runtime.claims import claim_is_stale, claim_owner, judged_by, new_claim_owner
from agent_core.runtime.contracts import AgentWorker, new_messages
from agent_core.runtime.conversation_edit import (
    CONVERSATION_EDIT,
    CONVERSATION_EDIT_KEY,
    conversation_of,
    describe_edit,
)
from agent_core.runtime.fork import ForkAgent, agent_named, fork_with_prompts, new_task_change
from agent_core.runtime.llamaindex_api import (
    LlamaIndexRunnerAPI,
    build_from_llm,
    extra_sources,
    replace_history,
    use_chat_history,
)
from agent_core.runtime.loop import on_runtime_thread, run_sync, runs_on_runtime, submit
from agent_core.runtime.model_calls import answering_with
from agent_core.runtime.queue import (
    check_active,
    check_can,
    is_claimable,
    mark_completed,
    nothing_to_run,
    pick_step,
    resolve_step,
    step_of,
)
from agent_core.runtime.sampling import (
    DEFAULT_SAMPLES,
    MAX_SAMPLES,
    StepSample,
    capture_call,
    check_samplable,
    group_replies,
    sample_call,
    sample_refusal,
)
from agent_core.runtime.step_runs import LIVE_RUNS, StepRun
from agent_core.runtime.task_cache import TaskCache
from agent_core.runtime.transaction import claim, run_claimed
from agent_core.runtime.undo import memory_write
from agent_core.runtime.worker_state import dump_state
from agent_core.store.base import MemoryWrite, Store, TaskChange, TaskSummary, store_now
from agent_core.store.memory import InMemoryStore
from agent_core.task_files import delete_workspace
from agent_core.telemetry import hooks as telemetry_hooks
from agent_core.tools.base import BaseTool
from agent_core.types import (
    AgentChatResponse,
    AgentState,
    RunLimits,
    StepAction,
    StepInput,
    StepKind,
    StepSnapshot,
    StepStatus,
    Task,
    TaskState,
    TaskStatus,
    TaskStep,
    TaskStepOutput,
    ToolOutput,
    short_id,
    utcnow,
)

__all__ = ["DEFAULT_MAX_INPUT_CHARS", "AgentRunner"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_INPUT_CHARS = 100_000
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate alone in a str: JSON lets `\\ud800` through, UTF-8 cannot encode it."""
_RUNNABLE = (StepStatus.UPCOMING, StepStatus.FAILED, StepStatus.RUNNING)


class AgentRunner(LlamaIndexRunnerAPI):
    """Runs a worker's tasks step by step: LlamaIndex's `AgentRunner` API plus undo and more.

    Beyond LlamaIndex: exact undo, steering (edit a step's input), human feedback,
    breakpoints (`run_until`), streaming events, and durable storage.

    Args:
        agent_worker: The step logic (e.g. `ReActAgentWorker`).
        store: Where tasks live; defaults to a new `InMemoryStore`. Use `SQLiteStore` to keep
            tasks across restarts.
        memory: The shared conversation that finalized tasks add to; loaded from the store's
            `conversation_id` when not given.
        conversation_id: Which stored conversation this runner continues; None gives every
            task a fresh start and keeps nothing after finalize.
        max_input_chars: Longest task input, step input or feedback accepted.
        delete_task_on_finish: Delete a task from the store once finalized.
        spec: The serialised `AgentSpec` this runner was built from; every task records it,
            so a restarted app can rebuild the worker for an active task.
        chat_history: LlamaIndex's: the conversation to start from (replaces the stored one).
        llm: LlamaIndex's: kept as `self.llm` (the worker's model when not given).
        init_task_state_kwargs: LlamaIndex's: the `extra_state` every new task starts with.
        default_tool_choice: LlamaIndex's: passed to every step as `tool_choice`.
        verbose: LlamaIndex's; accepted: every step is recorded, `stream_step` shows it live.
        callback_manager: LlamaIndex's; accepted and unused (see `stream_step` events).
    """

    def __init__(
        self,
        agent_worker: AgentWorker,
        *,
        store: Store | None = None,
        memory: ChatMemoryBuffer | None = None,
        conversation_id: str | None = "default",
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
        delete_task_on_finish: bool = False,
        spec: dict[str, Any] | None = None,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        init_task_state_kwargs: dict[str, Any] | None = None,
        default_tool_choice: str | dict[str, Any] | None = None,
        verbose: bool = False,
        callback_manager: object = None,
    ) -> None:
        self.agent_worker = agent_worker
        self.store: Store = store if store is not None else InMemoryStore()
        self.conversation_id = conversation_id
        if memory is None:
            history = self.store.load_conversation(conversation_id) if conversation_id else []
            memory = ChatMemoryBuffer(messages=history)
        self.memory = memory
        self.max_input_chars = max_input_chars
        self.delete_task_on_finish = delete_task_on_finish
        self.spec = spec
        self.state = AgentState()
        self.state.task_dict = TaskCache(self._in_use)  # Bounded: the store holds every task.
        self._owner = new_claim_owner()
        # A task's lock lives while someone holds or awaits it: no entry per task ever seen.
        self._locks: weakref.WeakValueDictionary[str, threading.RLock] = (
            weakref.WeakValueDictionary()
        )
        self._locks_guard = threading.Lock()
        self.llm = llm if llm is not None else getattr(agent_worker, "llm", None)
        self.init_task_state_kwargs = dict(init_task_state_kwargs or {})
        self.default_tool_choice = default_tool_choice
        self.verbose, self.callback_manager = verbose, callback_manager
        if chat_history is not None:
            replace_history(self, chat_history)

    @classmethod
    def from_llm(
        cls, tools: Sequence[BaseTool] | None = None, llm: LLM | None = None, **kwargs: Any
    ) -> AgentRunner:
        """LlamaIndex's: a `ReActAgent` over `llm` (any model can follow ReAct).

        `ReActAgent` lives in `agent_core.compat.llamaindex`, above the runtime, which hands
        its builder in (`llamaindex_api.provide_from_llm`): the runner never imports it.
        """
        return build_from_llm(tools, llm, **kwargs)

    # ----------------------------------------------------------------- state and storage

    def _lock(self, task_id: str) -> threading.RLock:
        with self._locks_guard:
            lock = self._locks.get(task_id)
            if lock is None:
                lock = self._locks[task_id] = threading.RLock()
            return lock

    def _in_use(self, task_id: str, state: TaskState) -> bool:
        """Whether the cache must keep the task.

        Its lock is taken or awaited, or a step of this runner runs on its cached state.
        """
        with self._locks_guard:
            if task_id in self._locks:
                return True
        return any(
            step.status is StepStatus.RUNNING and claim_owner(step.claimed_by) == self._owner
            for step in state.steps.values()
        )

    def _task_state(self, task_id: str) -> TaskState:
        """The task's state, reloaded from the store when another runner has moved it on."""
        if not isinstance(task_id, str):
            raise UserError(f"task_id must be a str, got {type(task_id).__name__}")
        cached = self.state.task_dict.get(task_id)
        version = self.store.task_version(task_id)
        if version is None:
            self.state.task_dict.pop(task_id, None)
            raise TaskNotFoundError(
                f"no task with id {task_id!r} in this runner's store",
                hint="list_tasks() shows the tasks there, create_task() makes a new one",
                remedy="new_task",
                task_id=task_id,
            )
        if cached is not None and cached.version == version:
            return cached
        loaded = self.store.load_task(task_id)
        if loaded is None:
            raise TaskNotFoundError(
                f"task {task_id!r} was deleted while being read", remedy="new_task", task_id=task_id
            )
        self.state.task_dict[task_id] = loaded
        return loaded

    def _commit(self, state: TaskState, change: TaskChange) -> None:
        state.task.updated_at = utcnow()
        base = state.version
        state.version = (change.base_version or 0) + 1
        try:
            self.store.commit(change)
        except BaseException:
            # Our in-memory copy holds changes the store refused: drop it, reload next time.
            # Its version goes back too: a step still running on this copy must meet the
            # same refusal when it commits, not pass on the version the refused write counted.
            state.version = base
            self.state.task_dict.pop(state.task_id, None)
            raise

    def _check_size(self, value: StepInput, what: str) -> None:
        """Refuse an input over `max_input_chars`, or one holding text no store can encode."""
        if value is None:
            return
        text = (
            value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        )
        lone = _LONE_SURROGATE.search(text)
        if lone is not None:  # Checked here, at the edge: past it, encoding would fail untyped.
            raise InvalidTextError(
                f"{what} holds a lone surrogate (\\u{ord(lone.group()):04x} at character "
                f"{lone.start():,}), which is no character: it cannot be stored or sent",
                hint="remove it, or send the text as UTF-8 (a JSON escape like \\ud800 must "
                "be one of a surrogate pair)",
                params={"what": what, "position": lone.start()},
            )
        size = len(text)
        if size > self.max_input_chars:
            raise InputTooLargeError(
                f"{what} is {size:,} characters; the limit is {self.max_input_chars:,}",
                hint="shorten it, or put large material in a file a tool can read (the limit "
                "is AgentRunner(max_input_chars=...))",
                remedy="shorten",
                params={"what": what, "size": size, "limit": self.max_input_chars},
            )

    @staticmethod
    def _check_input_type(value: object) -> None:
        if value is not None and not isinstance(value, str | dict):
            raise UserError(
                f"a step input must be a str, a dict (for tool calls) or None; "
                f"got {type(value).__name__}"
            )
        if too_deep(value):  # Whatever is stored must load again.
            raise UserError(
                f"the step input nests more than {MAX_NESTING} levels deep",
                hint="flatten it",
                remedy="edit_step",
            )

    def _active_state(self, task_id: str, action: str = "run") -> TaskState:
        """The task's live state, or `TaskNotActiveError` if it can no longer `action`.

        For subclasses: change the state only under `_lock(task_id)`, and only through a
        `TaskChange` given to `_commit`.
        """
        state = self._task_state(task_id)
        check_active(state, action)
        return state

    # ------------------------------------------------------------------------ tasks

    def create_task(self, input: str, **kwargs: Any) -> Task:
        """Create a task and queue its first step; nothing runs yet.

        The task starts from the runner's conversation (LlamaIndex's runner-level memory,
        which `chat()` grows; empty when the runner has no `conversation_id`), unless
        `continue_from` names a finalized task: then it starts from that task's whole
        conversation and joins its thread (`Task.thread_id`), the way a LangGraph thread
        goes on.

        Keyword arguments `extra_state` (initial worker state), `spec` (the agent's
        description) and `replay_of` (the case a replay runs) are stored on the task;
        `ledger_key` records the outside request the task answers in the store's task
        ledger, in the same transaction as the task (see `agent_core.store.ledger`); the rest
        go to the worker's `initialize_step`.
        """
        if not isinstance(input, str):
            raise UserError(f"a task input must be a str, got {type(input).__name__}")
        self._check_size(input, "the task input")
        continue_from: str | None = kwargs.pop("continue_from", None)
        history, thread_id = self._thread_start(continue_from)
        task = Task(
            input=input,
            memory=ChatMemoryBuffer(
                messages=history, token_limit=self.memory.token_limit or DEFAULT_TOKEN_LIMIT
            ),
            history_length=len(history),
            extra_state={**self.init_task_state_kwargs, **(kwargs.pop("extra_state", None) or {})},
            spec=kwargs.pop("spec", self.spec),
            thread_id=thread_id or "",
            continued_from=continue_from,
            replay_of=kwargs.pop("replay_of", None),
        )
        ledger_key: str | None = kwargs.pop("ledger_key", None)
        step = self.agent_worker.initialize_step(task, **kwargs)
        state = TaskState(task=task, steps={step.step_id: step}, queue=[step.step_id])
        state.set_extra_state_json(dump_state(task.extra_state, task_id=task.task_id, step_id=""))
        change = TaskChange(
            state=state,
            base_version=None,
            steps=[step],
            memory=MemoryWrite(keep=0, append=task.memory.get_all()),
            ledger_key=ledger_key,
        )
        self._commit(state, change)
        self.state.task_dict[task.task_id] = state
        return task

    def _thread_start(self, continue_from: str | None) -> tuple[list[ChatMessage], str | None]:
        """The conversation a new task starts from, and the thread it joins (None: its own)."""
        if continue_from is None:
            return self.memory.get_all(), None
        earlier = self._task_state(continue_from)
        if earlier.task.status is not TaskStatus.COMPLETED:
            raise UserError(
                f"task {short_id(continue_from)} is {earlier.task.status.value}; only a "
                "finalized task's conversation can be continued",
                hint="finalize it first, or start a new conversation",
                remedy="finalize",
                task_id=continue_from,
                code="thread_not_finished",
                params={"status": earlier.task.status.value},
            )
        self._check_own_conversation("continue a conversation")
        return earlier.task.memory.get_all(), earlier.task.thread_id

    def _check_own_conversation(self, action: str) -> None:
        reason = getattr(self.agent_worker, "keeps_own_conversation", None)
        if reason:
            raise UserError(
                f"this agent cannot {action}: {reason}",
                code="conversation_not_editable",
                params={"reason": reason, "action": action},
            )

    def get_task(self, task_id: str) -> Task:
        """The task with this id."""
        return self._task_state(task_id).task

    def get_task_state(self, task_id: str) -> TaskState:
        """The task with all its steps, outputs and queue (for views such as the DAG)."""
        return self._task_state(task_id)

    def snapshot_task_state(self, task_id: str) -> TaskState:
        """A copy of the task's state that steps running meanwhile leave alone.

        For views drawn while a step may commit (a page, an HTTP response): the live state
        changes under the reader's feet, and a half-drawn page would mix before and after.
        """
        state = self._task_state(task_id)
        with self._lock(task_id):
            return state.model_copy(
                update={
                    "task": state.task.model_copy(),
                    "steps": {step_id: step.model_copy() for step_id, step in state.steps.items()},
                    # A loaded task's outputs and snapshots stay unread until the view reads
                    # the few it draws.
                    "outputs": shallow_copy(state.outputs),
                    "queue": list(state.queue),
                    "completed": list(state.completed),
                    "snapshots": shallow_copy(state.snapshots),
                }
            )

    def list_tasks(self) -> list[TaskSummary]:
        """Every task in the store, newest first, as summaries (`get_task` loads one)."""
        return self.store.list_tasks()

    def get_completed_tasks(self) -> list[TaskSummary]:
        """The tasks that were finalized."""
        return [t for t in self.list_tasks() if t.status is TaskStatus.COMPLETED]

    def fork_task(
        self, task_id: str, step_id: str, *, agent: Any = None, registry: Any = None
    ) -> Task:
        """A new task that starts where `task_id` stood just after completed step `step_id`.

        The fork has the original's conversation, worker state and steps up to that step, a
        copy of its workspace files as they were then, and its next step upcoming; the
        original is left untouched. Its `forked_from` says where it came from.

        With `agent` (an `AgentSpec`, or a registered agent's name, built on this runner's
        model from `registry`, else the working folder's), the fork goes on with that agent
        instead, from the conversation up to the step; an imported task can be forked so.
        Run it with that agent's runner (`agent.build_runner(store=runner.store)`).

        Raises:
            UserError: `fork_tool_missing` (the agent lacks a tool the recording called),
                `fork_calls_unanswered`, `conversation_not_editable`, or as without `agent`.
        """
        original = self._task_state(task_id)
        chosen = None if agent is None else self._fork_agent(agent, registry)
        # `fork_state` only reads the original: under its lock no step commits meanwhile, and
        # no copy of the whole task is made first (the fork copies what it keeps).
        # Paused GC: the fork makes thousands of objects and no cycles, and each collection
        # would walk every object of the (long) task this process holds.
        with self._lock(task_id), paused_gc():
            fork, prompts = fork_with_prompts(original, step_id, agent=chosen)
            self._commit(fork, new_task_change(fork, prompts, same_store=True))
        self.state.task_dict[fork.task_id] = fork
        telemetry_hooks.task_event(fork, "task_forked", text=task_id)
        return fork.task

    def _fork_agent(self, agent: Any, registry: Any) -> ForkAgent:
        """The worker and spec of `agent`; this runner's worker when the spec is its own."""
        if isinstance(agent, str):
            agent = agent_named(agent, self.spec, registry)
        spec = agent.model_dump(mode="json")
        if spec == self.spec:
            return ForkAgent(worker=self.agent_worker, spec=spec)
        return ForkAgent(worker=agent.build_worker(registry=registry), spec=spec)

    def set_limits(self, task_id: str, **limits: int | float | None) -> Task:
        """Set bounds of one task's run; None gives a bound back to the agent's default.

        The bounds are `RunLimits`'s: `max_iterations`, `max_tokens` and `max_cost_usd`.

        A task stopped by a bound goes on once it is raised: run the failed step again.
        Bounds are not part of undo: they say what a person allows, not what the agent did.
        """
        unknown = set(limits) - set(RunLimits.model_fields)
        if unknown:
            raise UserError(
                f"unknown limit {sorted(unknown)[0]!r}; the limits are "
                f"{', '.join(RunLimits.model_fields)}"
            )
        state = self._task_state(task_id)
        with self._lock(task_id):
            check_active(state, "change its limits")
            try:
                merged = RunLimits.model_validate({**state.task.limits.model_dump(), **limits})
            except ValidationError as exc:
                raise UserError(
                    f"the limits are not valid: {exc.errors()[0]['msg']}",
                    hint="give whole numbers of at least 1 (dollars above 0), or None",
                    code="bad_request",
                ) from None
            state.task.limits = merged
            if state.task.status is TaskStatus.FAILED:  # A bound stopped it: it may go on.
                state.task.status = TaskStatus.ACTIVE
            self._commit(state, TaskChange(state=state, base_version=state.version))
        return state.task

    def delete_task(self, task_id: str) -> None:
        """Delete a task, its steps and its workspace folder (the shared conversation is kept).

        An imported copy shares no folder: its recorded workspace is another machine's.
        """
        try:
            state: TaskState | None = self._task_state(task_id)
        except StoreError:  # A damaged task can be deleted: that is how one gets rid of it.
            state = None
        with self._lock(task_id):
            self.store.delete_task(task_id)
            self.state.task_dict.pop(task_id, None)
        telemetry_hooks.task_deleted(task_id)
        if state is not None and not state.task.imported:
            try:
                delete_workspace(state.task)
            except (AgentCoreError, OSError) as exc:  # The task is gone: say what stayed.
                logger.warning("task %s deleted; its workspace could not be: %s", task_id, exc)

    def abandon_task(self, task_id: str) -> Task:
        """Stop a task for good; its steps stay visible and the shared memory is untouched."""
        state = self._task_state(task_id)
        with self._lock(task_id):
            check_active(state, "be abandoned")
            state.task.status = TaskStatus.ABANDONED
            self._commit(state, TaskChange(state=state, base_version=state.version))
            telemetry_hooks.task_event(state, "task_abandoned", end=True)
        return state.task

    def reset(self) -> None:
        """Forget the shared conversation and this runner's cache (stored tasks are kept)."""
        self.memory.reset()
        if self.conversation_id is not None:
            self.store.write_conversation(self.conversation_id, MemoryWrite(keep=0))
        self.state = type(self.state)()

    # ------------------------------------------------------------------------ steps

    def get_upcoming_steps(self, task_id: str) -> list[TaskStep]:
        """The steps still to run, in order (including failed and interrupted ones)."""
        return self._task_state(task_id).step_queue

    def get_completed_steps(self, task_id: str) -> list[TaskStepOutput]:
        """Outputs of the completed steps, oldest first (undone ones are not included)."""
        return self._task_state(task_id).completed_steps

    def get_steps(self, task_id: str) -> list[TaskStep]:
        """Every step the task ever had, undone and failed ones included, in creation order."""
        return list(self._task_state(task_id).steps.values())

    def get_step(self, task_id: str, step_id: str) -> TaskStep:
        """One step of a task, by id."""
        state = self._task_state(task_id)
        return step_of(state, step_id)

    def get_step_output(self, task_id: str, step_id: str) -> TaskStepOutput | None:
        """A step's output, if it completed (or was completed and then undone)."""
        state = self._task_state(task_id)
        step_of(state, step_id)
        return state.outputs.get(step_id)

    def get_task_output(self, task_id: str) -> TaskStepOutput:
        """The output of the task's most recent completed step."""
        state = self._task_state(task_id)
        if state.last_output is None:
            raise NothingToRunError(
                f"task {short_id(task_id)} has no completed step yet",
                hint="run_step() runs one",
                task_id=task_id,
                code="no_completed_step",
            )
        return state.last_output

    def get_messages_sent(self, task_id: str, step_id: str) -> list[ChatMessage]:
        """The messages a step sent to its model, exactly ([] when it called none).

        Stored apart from the step's output: `get_task_state` outputs leave them out.
        """
        state = self._task_state(task_id)
        step_of(state, step_id)
        return self.store.load_messages_sent(task_id, step_id)

    def preview_messages(
        self, task_id: str, step_id: str | None = None, input: StepInput = None
    ) -> list[ChatMessage]:
        """Exactly what the model would be sent if a step ran now; [] if it calls no model.

        The step is `step_id`, else the first ready one; `input` replaces its input, as
        `run_step(..., input=...)` would. The worker builds the preview with the code its
        run uses, on a copy of the task: nothing changes.
        """
        step, view = self._step_view(task_id, step_id, input)
        if step is None:
            return self.agent_worker.preview_messages(view)
        return self.agent_worker.preview_step(step, view)

    def _step_view(
        self, task_id: str, step_id: str | None, input: StepInput = None
    ) -> tuple[TaskStep | None, Task]:
        """A copy of step `step_id` (else the first ready one) and of the task, to write to."""
        state = self._task_state(task_id)
        with self._lock(task_id):
            view = state.task.model_copy(
                update={
                    "memory": state.task.memory.staged(),
                    "extra_state": json.loads(state.extra_state_json),
                }
            )
            ready = (s for s in state.step_queue if state.is_ready(s))
            step = step_of(state, step_id) if step_id is not None else next(ready, None)
        if step is None:
            return None, view
        step = step.model_copy(deep=True)
        if input is not None:
            step.set_input(input)
        return step, view

    # ---------------------------------------------------------------------- sampling

    @runs_on_runtime
    async def asample_step(
        self, task_id: str, step_id: str | None = None, *, n: int = DEFAULT_SAMPLES
    ) -> StepSample:
        """Send an upcoming model step's request `n` times; the replies grouped by what they do.

        The request is the one the step would send now (the worker's own code builds it); no
        tool runs and the task does not change. See `agent_core.runtime.sampling`.

        Raises:
            UserError: `sample_unsupported` (a tool step, or a framework's agent),
                `sample_count_invalid`, `nothing_to_run` or `task_finished`.
        """
        if not 1 <= n <= MAX_SAMPLES:
            raise UserError(
                f"a sample takes 1 to {MAX_SAMPLES} calls, not {n}",
                code="sample_count_invalid",
                params={"n": n, "max": MAX_SAMPLES},
            )
        step, call = await self._capture_call(task_id, step_id)
        replies = await sample_call(call, n)
        return StepSample(
            task_id=task_id,
            step_id=step.step_id,
            n=n,
            messages=call.messages,
            groups=group_replies(replies),
        )

    def sample_step(
        self, task_id: str, step_id: str | None = None, *, n: int = DEFAULT_SAMPLES
    ) -> StepSample:
        """Sync twin of `asample_step`."""
        return run_sync(self.asample_step(task_id, step_id, n=n), name="sample_step")

    def sample_refusal(self, task_id: str, step_id: str) -> str | None:
        """Why upcoming step `step_id` cannot be sampled (a face greys its control), else None."""
        return sample_refusal(self.agent_worker, self.get_step(task_id, step_id))

    async def _capture_call(self, task_id: str, step_id: str | None) -> tuple[TaskStep, Any]:
        step, view = self._step_view(task_id, step_id)
        if step is None:
            raise nothing_to_run(self._task_state(task_id))
        check_samplable(self.agent_worker, step)
        return step, await capture_call(self.agent_worker, step, view, self._step_kwargs({}))

    @runs_on_runtime
    async def acontinue_with_sample(
        self, task_id: str, sample: StepSample, group: int = 0
    ) -> TaskStepOutput:
        """Run the sampled step with group `group`'s reply as its model's: the task goes on.

        The step commits that reply (its tokens and cost too) without a model call. The
        sample must still be of the task's upcoming step: after Undo of a step continued so,
        continuing with another group grows a branch beside the first.

        Raises:
            UserError: `sample_stale` (the request the step would send now differs),
                `sample_group_unknown`, or what running the step raises.
        """
        reply = sample.reply(group)
        queued = self._task_state(task_id).queue
        step, call = await self._capture_call(
            task_id, sample.step_id if sample.step_id in queued else None
        )
        if _dumped(call.messages) != _dumped(sample.messages):
            raise UserError(
                "the task moved on since the step was sampled: its upcoming step would send "
                "another request now",
                hint="sample the step again",
                task_id=task_id,
                step_id=step.step_id,
                code="sample_stale",
            )
        with answering_with(reply):
            return await self._arun_step(task_id, step.step_id, None, {})

    def continue_with_sample(
        self, task_id: str, sample: StepSample, group: int = 0
    ) -> TaskStepOutput:
        """Sync twin of `acontinue_with_sample`."""
        coro = self.acontinue_with_sample(task_id, sample, group)
        return run_sync(coro, name="continue_with_sample")

    def is_interrupted(self, task_id: str, step_id: str) -> bool:
        """Whether a `running` step's process died (or stopped) mid-step, or its lease lapsed."""
        step = self.get_step(task_id, step_id)
        if step.status is not StepStatus.RUNNING:
            return False
        with judged_by(lambda: store_now(self.store)):  # The store's clock, as a claim's.
            return claim_is_stale(step.claimed_by, step_id)

    def edit_step(self, task_id: str, step_id: str, input: StepInput) -> TaskStep:
        """Change an upcoming step's input without running it (the proposal is kept)."""
        self._check_input_type(input)
        self._check_size(input, "the step input")

        def edit(state: TaskState, step: TaskStep) -> TaskChange:
            if input != step.input:
                check_can(step, StepAction.EDIT)
            step.set_input(input)
            return TaskChange(state=state, base_version=state.version, steps=[step])

        return self._change_upcoming(task_id, step_id, "edited", edit)

    def skip_step(self, task_id: str, step_id: str) -> TaskStep:
        """Leave an upcoming step out: it never runs, and steps depending on it may go on.

        A skip is a step of history: it gets a number, and `undo_step` brings the step back.
        """
        return self._change_upcoming(task_id, step_id, "skipped", self._skip)

    @staticmethod
    def _skip(state: TaskState, step: TaskStep) -> TaskChange:
        check_can(step, StepAction.SKIP)
        memory = state.task.memory
        snapshot = StepSnapshot(
            step_id=step.step_id,
            memory=memory.apply(memory.staged()),
            extra_state_json=state.extra_state_json,
        )
        mark_completed(state, step, [])
        step.status = StepStatus.SKIPPED
        output = TaskStepOutput(task_step=step, skipped=True)
        state.outputs[step.step_id] = output
        state.snapshots[step.step_id] = snapshot
        return TaskChange(
            state=state,
            base_version=state.version,
            steps=[step],
            outputs=[output],
            snapshots=[snapshot],
            memory=memory_write(snapshot, memory),
        )

    def _change_upcoming(
        self,
        task_id: str,
        step_id: str,
        verb: str,
        change: Callable[[TaskState, TaskStep], TaskChange],
    ) -> TaskStep:
        """Apply `change` to an upcoming (or failed) step that is not running, and commit."""
        state = self._task_state(task_id)
        with self._lock(task_id):
            check_active(state, f"have steps {verb}")
            step = step_of(state, step_id)
            running = step.status is StepStatus.RUNNING or not is_claimable(step)
            if step_id not in state.queue or running:
                status = "running" if running else step.status.value
                raise UserError(
                    f"step {step_id} is {status}; only upcoming or failed steps can be {verb}",
                    remedy="wait" if running else None,
                    task_id=task_id,
                    step_id=step_id,
                    code="step_running" if running else "step_not_runnable",
                    params={"status": status, "action": verb},
                )
            self._commit(state, change(state, step))
            telemetry_hooks.task_event(state, f"step_{verb}", step=step)
        return step

    # ---------------------------------------------------------------------- running

    async def _arun_step(
        self,
        task_id: str,
        step_id: str | None,
        input: StepInput,
        kwargs: dict[str, Any],
        *,
        stream: bool = False,
        on_run: Callable[[StepRun], None] | None = None,
        rejection: str | None = None,
        state: TaskState | None = None,
    ) -> TaskStepOutput:
        """Claim and run one step on the runtime loop; `stream` records its events.

        `rejection` is a person's reason for refusing the step's tool call (`reject_step`).
        `state` is the task's, when the caller just loaded it on this loop (no await since).
        """
        self._check_input_type(input)
        self._check_size(input, "the step input")
        kwargs = self._step_kwargs(kwargs)
        if state is None:
            state = self._task_state(task_id)
        step = claim(self, state, step_id, input, rejection)
        run = StepRun(task_id, step.step_id, asyncio.current_task())
        LIVE_RUNS.add(run)
        if on_run is not None:
            on_run(run)
        if stream:
            run.record(StepStartedEvent(task_id=task_id, step_id=step.step_id))
            kwargs = {**kwargs, "emit": run.record}
        if telemetry_hooks.observers:
            telemetry_hooks.step_started(task_id, step, input)
        output: TaskStepOutput | None = None
        error: BaseException | None = None
        try:
            output = await run_claimed(self, state, step, kwargs, run)
            if telemetry_hooks.observers:
                telemetry_hooks.step_ended(output)
            return output
        except BaseException as exc:
            error = exc
            raise
        finally:
            if stream:
                run.record(_end_event(step.step_id, output, error))
            run.finish(output, error)

    @runs_on_runtime
    async def arun_step(
        self,
        task_id: str,
        input: StepInput = None,
        step: TaskStep | str | None = None,
        *,
        step_id: str | None = None,
        **kwargs: Any,
    ) -> TaskStepOutput:
        """Run the next ready step (or `step`), with `input` replacing its input if given.

        LlamaIndex's order: `step` is a `TaskStep` or a step id (`step_id=` says the same).
        A step that fails is recorded as `failed` with its error, raises `StepError`, and
        stays in the queue to be edited and retried; nothing already completed changes.
        """
        state = self._task_state(task_id)  # Loaded once: each load asks the store its version.
        step_id, input = resolve_step(state, input, step, step_id)
        return await self._arun_step(task_id, step_id, input, kwargs, state=state)

    def run_step(
        self,
        task_id: str,
        input: StepInput = None,
        step: TaskStep | str | None = None,
        *,
        step_id: str | None = None,
        **kwargs: Any,
    ) -> TaskStepOutput:
        """Sync twin of `arun_step`."""
        coro = self.arun_step(task_id, input, step, step_id=step_id, **kwargs)
        return run_sync(coro, name="run_step")

    def _resolve_step(
        self, task_id: str, input: StepInput, step: TaskStep | str | None, step_id: str | None
    ) -> tuple[str | None, StepInput]:
        """`resolve_step`, reading the task only when there is something to resolve."""
        if step is None and not isinstance(input, str):
            return step_id, input  # Spares the store a version read before the step's own.
        return resolve_step(self._task_state(task_id), input, step, step_id)

    def _step_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.default_tool_choice is None or "tool_choice" in kwargs:
            return kwargs
        return {**kwargs, "tool_choice": self.default_tool_choice}

    @runs_on_runtime
    async def astart_step(
        self,
        task_id: str,
        step_id: str | None = None,
        input: StepInput = None,
        **kwargs: Any,
    ) -> StepRun:
        """Start a step in the runtime and return at once, with a `StepRun` to watch it.

        The step runs to its end whoever watches: the caller may go away (a page reloads, a
        request ends). Errors that stop it from starting (an unknown task, nothing ready, a
        step already running) are raised here; later ones come from `StepRun.result()`.
        """
        started: asyncio.Future[StepRun] = asyncio.get_running_loop().create_future()
        job = asyncio.ensure_future(
            self._arun_step(task_id, step_id, input, kwargs, stream=True, on_run=started.set_result)
        )
        job.add_done_callback(_settled)
        await asyncio.wait([started, job], return_when=asyncio.FIRST_COMPLETED)
        if started.done():
            return started.result()
        job.result()  # Raises why the step could not start.
        raise StepError(f"step of task {short_id(task_id)} ended before it started")

    def start_step(
        self,
        task_id: str,
        step_id: str | None = None,
        input: StepInput = None,
        **kwargs: Any,
    ) -> StepRun:
        """Sync twin of `astart_step`."""
        return run_sync(self.astart_step(task_id, step_id, input, **kwargs), name="start_step")

    def running_steps(self, task_id: str) -> list[StepRun]:
        """The task's steps running in this process now, whoever started them."""
        return LIVE_RUNS.of_task(task_id)

    def cancel_step(self, task_id: str, step_id: str, *, wait: float = 10.0) -> TaskStep:
        """Stop a running step: it is recorded as failed, "stopped by you", and can run again.

        Nothing completed is lost. Waits up to `wait` seconds for the step to stop (not when
        called from code the runtime runs), and returns the step as it is then.
        """
        step = self.get_step(task_id, step_id)
        run = LIVE_RUNS.get(step_id)
        if run is None or run.task_id != task_id:
            where = "in another process" if step.status is StepStatus.RUNNING else "now"
            raise UserError(
                f"step {step_id} of task {short_id(task_id)} is not running in this process "
                f"(it is {step.status.value} {where}); only a running step can be stopped"
            )
        run.cancel()
        if not on_runtime_thread():
            run.wait(wait)
        return self.get_step(task_id, step_id)

    async def astream_step(
        self,
        task_id: str,
        input: StepInput = None,
        step: TaskStep | str | None = None,
        *,
        step_id: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[StepEvent]:
        """Run one step like `arun_step`, yielding its events as they happen.

        The last event is `StepCompletedEvent`; a failure yields `StepFailedEvent` and then
        raises `StepError`. A consumer that stops early leaves the step running to its end.
        """
        step_id, input = self._resolve_step(task_id, input, step, step_id)
        run = await self.astart_step(task_id, step_id, input, **kwargs)
        async for event in run.awatch():
            yield event
        run.result()  # Raises the step's error after its `step_failed` event.

    def stream_step(
        self,
        task_id: str,
        input: StepInput = None,
        step: TaskStep | str | None = None,
        *,
        step_id: str | None = None,
        **kwargs: Any,
    ) -> Iterator[StepEvent]:
        """Sync twin of `astream_step`."""
        step_id, input = self._resolve_step(task_id, input, step, step_id)
        run = self.start_step(task_id, step_id, input, **kwargs)
        yield from run.watch()
        run.result()

    @runs_on_runtime
    async def areject_step(
        self, task_id: str, step_id: str | None = None, *, message: str = ""
    ) -> TaskStepOutput:
        """Refuse a tool call awaiting approval; the model sees `message` instead of a result."""
        state = self._task_state(task_id)
        step = pick_step(state, step_id)
        if step.kind is not StepKind.TOOL or not isinstance(step.input, dict):
            raise UserError(
                f"step {step.step_id} is a {step.kind.value} step; only a tool call awaiting "
                "approval can be rejected"
            )
        reason = message.strip() or "no reason given"
        return await self._arun_step(task_id, step.step_id, None, {}, rejection=reason)

    def reject_step(
        self, task_id: str, step_id: str | None = None, *, message: str = ""
    ) -> TaskStepOutput:
        """Sync twin of `areject_step`."""
        return run_sync(self.areject_step(task_id, step_id, message=message), name="reject_step")

    @runs_on_runtime
    async def arun_until(
        self,
        task_id: str,
        *,
        stop: Breakpoint | Iterable[Breakpoint] | None = None,
        max_steps: int | None = None,
        resume: bool = False,
    ) -> RunUntilResult:
        """Run steps until the last step, a tool call awaiting approval, an error or a breakpoint.

        `stop` holds breakpoints checked before each step; `max_steps` bounds this call.
        `resume=True` is a debugger's continue: the first step runs even if a breakpoint
        stands on it (a tool call awaiting approval still stops).
        """
        return await self._run_until(task_id, stop, max_steps, resume=resume, stream=False)

    def run_until(
        self,
        task_id: str,
        *,
        stop: Breakpoint | Iterable[Breakpoint] | None = None,
        max_steps: int | None = None,
        resume: bool = False,
    ) -> RunUntilResult:
        """Sync twin of `arun_until`."""
        coro = self.arun_until(task_id, stop=stop, max_steps=max_steps, resume=resume)
        return run_sync(coro, name="run_until")

    def start_until(
        self,
        task_id: str,
        *,
        stop: Breakpoint | Iterable[Breakpoint] | None = None,
        max_steps: int | None = None,
        resume: bool = False,
    ) -> concurrent.futures.Future[RunUntilResult]:
        """Start `run_until` in the runtime and return at once; its steps stream as they run.

        Each step is a `StepRun` that `running_steps` finds, so a page can show it and stop
        it. Cancelling the returned future stops the run: the step running then goes back
        to upcoming, untouched.
        """
        self._task_state(task_id)  # An unknown task is an error now, not in the future.
        return submit(self._run_until(task_id, stop, max_steps, resume=resume, stream=True))

    async def _run_until(
        self,
        task_id: str,
        stop: Breakpoint | Iterable[Breakpoint] | None,
        max_steps: int | None,
        *,
        resume: bool,
        stream: bool,
    ) -> RunUntilResult:
        breakpoints = [stop] if callable(stop) else list(stop or [])
        kwargs = tool_hold(breakpoints)
        result = RunUntilResult(reason="no_step")
        while True:
            if max_steps is not None and len(result.outputs) >= max_steps:
                return result.model_copy(update={"reason": "max_steps"})
            state = self._task_state(task_id)
            check_active(state, "run")
            try:
                step = pick_step(state, None)
            except UserError as exc:
                return result.model_copy(update={"reason": "no_step", "detail": str(exc)})
            checked = breakpoints if result.outputs or not resume else []
            hit = next((why for bp in checked if (why := bp(state, step))), None)
            if hit:
                return result.model_copy(update={"reason": "breakpoint", "detail": hit})
            if step.needs_approval:
                detail = f"step {step.step_id} is a tool call awaiting approval"
                return result.model_copy(update={"reason": "tool_approval", "detail": detail})
            if step.awaits_answer:
                detail = f"step {step.step_id} asks a person; give the answer as its input"
                return result.model_copy(update={"reason": "question", "detail": detail})
            try:
                output = await self._arun_step(task_id, step.step_id, None, kwargs, stream=stream)
            except StepError as exc:
                stopped = {"reason": "error", "detail": str(exc), "error": exc.to_data()}
                return result.model_copy(update=stopped)
            except StepNotFoundError:  # Undone or dropped by someone else since it was picked.
                raise ConflictError(
                    f"task {short_id(task_id)} changed while run_until ran (another client "
                    "undid or changed its steps); reload it and try again",
                    hint="reload the task, then run it again from where it stands",
                    remedy="wait",
                    task_id=task_id,
                    code="task_changed",
                ) from None
            result.outputs.append(output)
            if output.is_last:
                return result.model_copy(update={"reason": "last_step"})

    # ------------------------------------------------------------- steering and undo

    def add_feedback(self, task_id: str, text: str) -> TaskStep:
        """Put a person's message into the task before its next step (a `human` step)."""
        if not isinstance(text, str) or not text.strip():
            raise UserError("feedback must be non-empty text")
        self._check_size(text, "the feedback")
        state = self._task_state(task_id)
        with self._lock(task_id):
            check_active(state, "take feedback")
            self._check_a_step_follows(state, "feedback_after_finish")
            following = next((s for s in state.step_queue if state.is_ready(s)), None)
            if following is not None:
                check_can(following, StepAction.FEEDBACK)
            staged = state.task.memory.staged()
            staged.put(ChatMessage(role="user", content=text))
            step = self._record_human_step(state, TaskStep(task_id=task_id, input=text), staged)
            telemetry_hooks.task_event(state, "feedback", step=step, text=text)
        return step

    def edit_conversation(self, task_id: str, messages: Sequence[ChatMessage]) -> TaskStep:
        """Replace the conversation the model reads next with `messages` (a `human` step).

        Change a message's text, drop messages, add some: the edit is recorded as a step
        named "edit conversation" that `undo_step` reverts exactly, and the next step reads
        the edited conversation. `preview_messages` shows the result before anything runs.
        """
        edited = conversation_of(messages)
        dumped = [m.model_dump(mode="json") for m in edited]
        self._check_size(json.dumps(dumped, ensure_ascii=False), "the edit")
        state = self._task_state(task_id)
        with self._lock(task_id):
            check_active(state, "edit its conversation")
            self._check_a_step_follows(state, "edit_after_finish")
            self._check_own_conversation("edit its conversation")
            before = state.task.memory.get_all()
            change = describe_edit(before, edited)
            if change is None:
                raise UserError(
                    "the edited conversation is the same as the current one",
                    hint="change, drop or add a message",
                    code="conversation_unchanged",
                )
            staged = state.task.memory.staged()
            staged.set(edited)
            step = TaskStep(
                task_id=task_id,
                input=change.summary,
                name=CONVERSATION_EDIT,
                step_state={CONVERSATION_EDIT_KEY: change.model_dump()},
            )
            step = self._record_human_step(state, step, staged)
            telemetry_hooks.task_event(state, "conversation_edited", step=step, text=change.summary)
        return step

    @staticmethod
    def _check_a_step_follows(state: TaskState, code: str) -> None:
        """Refuse a person's input that no step would read: the task already finished."""
        last = state.last_output
        if last is not None and last.is_last and not state.queue:
            raise NothingToRunError(
                f"task {short_id(state.task_id)} already finished at step "
                f"{last.task_step.number}, so no step would read it",
                hint="undo_step() first and give it before the last step runs again",
                remedy="undo",
                task_id=state.task_id,
                code=code,
                params={"finished_at": last.task_step.number},
            )

    def _record_human_step(
        self, state: TaskState, step: TaskStep, staged: StagedMemory
    ) -> TaskStep:
        """Commit a person's `human` step: `staged` holds its change to the conversation.

        It is completed at once, before the upcoming steps, with the snapshot undo needs.
        """
        last = state.last_output
        step.kind = StepKind.HUMAN
        step.prev_step_ids = [last.task_step.step_id] if last else []
        step.branch_id = last.task_step.branch_id if last else "main"
        snapshot = StepSnapshot(
            step_id=step.step_id,
            memory=state.task.memory.apply(staged),
            extra_state_json=state.extra_state_json,
        )
        state.steps[step.step_id] = step
        state.queue.insert(0, step.step_id)
        mark_completed(state, step, [])
        undo.link_feedback(state, step)
        output = TaskStepOutput(output=step.input, task_step=step)
        state.outputs[step.step_id] = output
        state.snapshots[step.step_id] = snapshot
        change = TaskChange(
            state=state,
            base_version=state.version,
            steps=[state.steps[s] for s in (step.step_id, *state.queue)],
            outputs=[output],
            snapshots=[snapshot],
            memory=memory_write(snapshot, state.task.memory),
        )
        self._commit(state, change)
        return step

    def undo_step(self, task_id: str, *, steps: int = 1) -> TaskStep:
        """Revert the last completed step exactly (or the last `steps` steps).

        Memory and worker state return to their snapshot from before the step, the steps it
        queued leave the queue, and the step is upcoming again (as a new step on a new branch;
        the undone one stays in history). Returns the step that is now next (or, when
        nothing is queued, the last completed step, else the step just undone).
        """
        if steps < 1:
            raise UserError(f"steps must be at least 1, got {steps}")
        state = self._task_state(task_id)
        with self._lock(task_id):
            check_active(state, "undo steps")
            if len(state.completed) < steps:
                done = len(state.completed)
                raise NothingToRunError(
                    f"task {short_id(task_id)} has {done} completed "
                    f"step{'' if done == 1 else 's'}; cannot undo {steps}",
                    task_id=task_id,
                    code="nothing_to_undo",
                    params={"completed": done, "requested": steps},
                )
            if not all(is_claimable(state.steps[s]) for s in state.queue):  # Live runs only.
                raise ConflictError(
                    f"a step of task {short_id(task_id)} is running",
                    hint="undo after it finishes",
                    remedy="wait",
                    task_id=task_id,
                    code="step_running",
                )
            change = TaskChange(state=state, base_version=state.version)
            undone = undo.undo_steps(state, change, steps)
            if state.task.status is TaskStatus.FAILED:
                state.task.status = TaskStatus.ACTIVE
            self._commit(state, change)
            telemetry_hooks.task_event(state, "step_undone", step=undone)
        if state.queue:
            return state.steps[state.queue[0]]
        return state.steps[state.completed[-1]] if state.completed else undone

    # ----------------------------------------------------------------- finishing

    def finalize_response(
        self, task_id: str, step_output: TaskStepOutput | None = None, **kwargs: Any
    ) -> AgentChatResponse:
        """Finish a task whose last step ran: merge it into the shared conversation.

        `step_output` is LlamaIndex's argument, accepted: the task's last output is used.
        """
        state = self._task_state(task_id)
        with self._lock(task_id):
            last = state.last_output
            if last is None or not last.is_last:
                raise NothingToRunError(
                    f"task {short_id(task_id)} has not reached its last step "
                    f"({len(state.queue)} upcoming)",
                    hint="run it further (run_step or run_until) before finalize_response()",
                    remedy="run_first",
                    task_id=task_id,
                    code="task_not_finished",
                    params={"upcoming": len(state.queue)},
                )
            if state.task.status is not TaskStatus.COMPLETED:
                check_active(state, "be finalized")
                self._merge_into_conversation(state, **kwargs)
            response = AgentChatResponse(
                response="" if last.output is None else str(last.output),
                sources=[*_sources(state.completed_steps), *extra_sources(state.task)],
                task_id=task_id,
            )
        if self.delete_task_on_finish:
            self.delete_task(task_id)
        return response

    def _merge_into_conversation(self, state: TaskState, **kwargs: Any) -> None:
        messages = self.agent_worker.finalize_task(state.task, **kwargs)
        if messages is None:  # LlamaIndex's contract: the worker merged nothing itself.
            messages = new_messages(state.task)
        if self.conversation_id is not None:
            keep = len(self.memory)
            self.store.write_conversation(self.conversation_id, MemoryWrite(keep, list(messages)))
            self.memory.put_messages(messages)
        state.task.status = TaskStatus.COMPLETED
        self._commit(state, TaskChange(state=state, base_version=state.version))
        telemetry_hooks.task_event(state, "task_finalized", end=True)

    @runs_on_runtime
    async def achat(self, message: str, **kwargs: Any) -> AgentChatResponse:
        """Create a task, run it to its last step (approving tool calls), and finalize it.

        LlamaIndex's `chat_history=` replaces the conversation first; `tool_choice=` is taken.
        """
        if telemetry_hooks.observers:
            telemetry_hooks.chat_started(message)
        use_chat_history(self, kwargs)
        task = self.create_task(message, **kwargs)
        while True:
            output = await self.arun_step(task.task_id)
            if output.is_last:
                response = self.finalize_response(task.task_id)
                if telemetry_hooks.observers:
                    telemetry_hooks.chat_ended(response)
                return response

    def chat(self, message: str, **kwargs: Any) -> AgentChatResponse:
        """Sync twin of `achat`."""
        return run_sync(self.achat(message, **kwargs), name="chat")


def _end_event(
    step_id: str, output: TaskStepOutput | None, error: BaseException | None
) -> StepEvent:
    if output is not None:
        return StepCompletedEvent(step_id=step_id, output=output)
    return StepFailedEvent(step_id=step_id, error=str(error) if error else "stopped")


def _dumped(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


def _settled(job: asyncio.Future[Any]) -> None:
    if not job.cancelled():
        job.exception()  # Read by its `StepRun`; retrieved here so asyncio does not warn.


def _sources(outputs: Iterable[TaskStepOutput]) -> list[ToolOutput]:
    return [call for output in outputs for call in output.tool_calls]
