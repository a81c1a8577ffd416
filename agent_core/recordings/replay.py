"""Replay a case on the current code, step by step, and judge it.

The driver creates the case's task on a runner of the agent as its code is now (see
`agent_core.recordings.agents`) and runs it the way a person would, one step at a time:
before each recorded step it tells the `ReplayLog` which step it is, then repeats what the
person did there (feedback, an edited input or call, a rejection, a skip) or simply runs the
step. The model is answered from the recording while the request equals the recorded one;
after each step its tool results are compared with the recorded ones. The first difference
stops the replay: that is the case's divergence. A replay that reaches the end is judged by
the case's expectations.

`live=True` runs the agent's own model instead (no divergence: models vary), repeating the
person's acts where the steps line up, and judges by the expectations alone.

The steps run in one coroutine on the runtime loop (the runner's async twins), as `run_until`
runs them, not one sync hop per step; creating and finalizing the task, and judging it, stay
in the caller's thread as they are in the user's own code. The whole replay normalises with
one `Normaliser` (`requests.normalising`): the environment's secrets are read once, and each
text and recorded request is normalised once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.errors import AgentCoreError
from agent_core.recordings._secrets import redact_text
from agent_core.recordings.agents import build_replay_runner, discard_workspace
from agent_core.recordings.cases import Case, CaseStep, HumanAct, ToolsMode
from agent_core.recordings.expectations import (
    ExpectationResult,
    Outcome,
    check_expectations,
)
from agent_core.recordings.from_task import case_from_task
from agent_core.recordings.requests import Normaliser, normalise_text, normalising, text_diff
from agent_core.recordings.stand_ins import Divergence, RecordedLLM, ReplayLog
from agent_core.runtime.breakpoints import HOLD_TOOL
from agent_core.runtime.loop import run_sync
from agent_core.runtime.parallel import ParallelAgentRunner
from agent_core.store.base import Store
from agent_core.types import StepStatus, TaskStep, TaskStepOutput, ToolOutput
from agent_core.user_code.registry import UserCodeRegistry

__all__ = ["CaseResult", "replay_case"]

_LIVE_STEP_FACTOR = 3
"""A live run may take this many times the recorded steps (at least 20) before it is cut."""


@dataclass
class CaseResult:
    """How a case's replay went."""

    case: str
    """The case's name."""
    passed: bool
    steps: int
    """Steps the replay completed."""
    task_id: str = ""
    """The replayed task, in the replay's store."""
    divergence: Divergence | None = None
    expectations: list[ExpectationResult] = field(default_factory=list)
    error: AgentCoreError | None = None
    """What kept the case from replaying (an agent that cannot be built, a check that raised)."""
    updated: Case | None = None
    """With `update=True`: the case re-recorded from this replay (when it finished)."""
    runner: ParallelAgentRunner | None = field(default=None, repr=False)
    """The runner the replay ran on (its store holds the replayed task)."""

    @property
    def failed_expectations(self) -> list[ExpectationResult]:
        """The expectations that did not hold."""
        return [r for r in self.expectations if not r.passed]

    @property
    def reason(self) -> str:
        """Why the case failed, in one line ("" when it passed)."""
        if self.error is not None:
            return f"error [{self.error.code}]: {self.error}"
        if self.divergence is not None:
            return f"diverged at step {self.divergence.step}: {self.divergence.message}"
        failed = self.failed_expectations
        if failed:
            return "; ".join(f"{r.name}: {r.detail}" for r in failed)
        return ""

    def report(self) -> str:
        """The failure as a person reads it: the reason, then the diff when there is one."""
        if self.divergence is not None and self.divergence.diff:
            return f"{self.reason}\n{self.divergence.diff}"
        return self.reason


def replay_case(
    case: Case,
    *,
    agent: tuple[str, str] | None = None,
    tools: ToolsMode | None = None,
    ignore_system_prompt: bool | None = None,
    live: bool = False,
    model: str | None = None,
    update: bool = False,
    registry: UserCodeRegistry | None = None,
    store: Store | None = None,
    project: str | Path = ".",
    label: bool = True,
) -> CaseResult:
    """Run `case` on the current code of its agent and judge it.

    Args:
        case: The case (`load_case`).
        agent: An override `(name, target)` (`--agent NAME=TARGET`): it replaces the case's
            agent of that name, or a case's built-in worker.
        tools: How tools are answered (default: the case's, `auto`).
        ignore_system_prompt: Compare requests without their system messages.
        live: Run the agent's own model instead of the recording.
        model: With `live`: run this model ("provider:model", as `infer_model` reads it)
            instead of the agent's own.
        update: Re-record: answer from the recording past request differences, and give the
            new recording in `CaseResult.updated` when the replay finishes.
        registry: The user-code registry (default: one on `project` with the override).
        store: Where the replayed task is kept (default: in memory).
        project: The user's project folder (targets and checks are found from it).
        label: Record on the replayed task that it replays this case (`Task.replay_of`).

    Returns:
        The result; errors of the user's code or the case are in `error`, not raised.

    Raises:
        UserError: Called inside a running event loop, or from code the runtime runs.
    """
    ignore = (
        case.replay.ignore_system_prompt if ignore_system_prompt is None else ignore_system_prompt
    )
    log = ReplayLog(case, ignore_system_prompt=ignore, lenient=update)
    result = CaseResult(case=case.name, passed=False, steps=0)
    normaliser = Normaliser()
    try:
        runner = build_replay_runner(
            case,
            llm=None if live else RecordedLLM(log, model=f"recorded:{case.name}"),
            log=None if live else log,
            tools=tools or case.replay.tools,
            agent=agent,
            registry=registry,
            store=store,
            project=project,
            model=model if live else None,
        )
        result.runner = runner
        replay_of = case.name if label else None
        task_id = runner.create_task(case.input, replay_of=replay_of).task_id
        result.task_id = task_id
        if live:
            finished = run_sync(_arun_live(runner, task_id, case), name="replay_case")
        else:
            drive = _areplay(runner, task_id, case, log, normaliser)
            result.divergence = run_sync(drive, name="replay_case")
            finished = result.divergence is None and bool(case.steps) and case.steps[-1].is_last
        if finished:  # Where the recorded task reached its last step, as a user's code would.
            runner.finalize_response(task_id)
        result.steps = len(runner.get_completed_steps(task_id))
        outcome = _outcome(runner, task_id, normaliser)
        result.expectations = check_expectations(case.expectations, outcome, project=project)
    except AgentCoreError as exc:
        result.error = exc
        return result
    finally:
        if store is None and result.runner is not None:  # Nobody can open this task later.
            discard_workspace(result.runner)
    result.passed = result.divergence is None and not result.failed_expectations
    if update and result.divergence is None:
        result.updated = _rerecorded(case, runner, task_id, log)
    return result


# ----------------------------------------------------------------------------- replay


async def _areplay(
    runner: ParallelAgentRunner, task_id: str, case: Case, log: ReplayLog, normaliser: Normaliser
) -> Divergence | None:
    """Replay every recorded step on the runtime loop; the first divergence, if any."""
    with normalising(normaliser):
        for index, recorded in enumerate(case.steps):
            log.begin(recorded)
            held = _held_tools(case, index)
            divergence = await _areplay_step(runner, task_id, recorded, log, held)
            if divergence is not None:
                return divergence
    return None


def _held_tools(case: Case, index: int) -> frozenset[str]:
    """The tools whose calls the recorded step `index` left as tool steps of their own.

    A tool breakpoint (Run until's "before tools", the MCP face's `before_tools`) makes a
    worker that reasons and acts in one step propose its call as a separate `tool` step
    instead: the replay asks the worker to hold the same calls, so the steps line up.
    """
    held: set[str] = set()
    for later in case.steps[index + 1 :]:
        if later.kind != "tool":
            break
        held.update(call.tool for call in later.tool_calls)
        if isinstance(later.input, dict) and isinstance(later.input.get("tool"), str):
            held.add(later.input["tool"])
    return frozenset(held)


async def _areplay_step(
    runner: ParallelAgentRunner,
    task_id: str,
    recorded: CaseStep,
    log: ReplayLog,
    held: frozenset[str] = frozenset(),
) -> Divergence | None:
    feedback = _act(recorded, "feedback")
    if feedback is not None:
        runner.add_feedback(task_id, feedback.text)
        return None
    step = _next_step(runner, task_id)
    if step is None:
        return log.here(
            "end",
            f"step {recorded.number}: the replayed task has no step left; the recording goes "
            f"on with a {recorded.kind} step",
        )
    if step.kind.value != recorded.kind:
        return log.here(
            "step",
            f"step {recorded.number}: the agent queued a {step.kind.value} step where the "
            f"recording has a {recorded.kind} step",
        )
    try:
        output = await _arun_with_acts(runner, task_id, step, recorded, held)
    except AgentCoreError as exc:
        if log.divergence is not None:
            return log.divergence
        return log.here("error", f"step {recorded.number} ({recorded.kind}) failed: {exc}")
    if log.divergence is not None:
        return log.divergence
    return _compare_output(recorded, output, log)


def _act(recorded: CaseStep, kind: str) -> HumanAct | None:
    return next((act for act in recorded.human if act.act == kind), None)


def _next_step(runner: ParallelAgentRunner, task_id: str) -> TaskStep | None:
    state = runner.get_task_state(task_id)
    return next((s for s in state.step_queue if state.is_ready(s)), None)


async def _arun_with_acts(
    runner: ParallelAgentRunner,
    task_id: str,
    step: TaskStep,
    recorded: CaseStep,
    held: frozenset[str] = frozenset(),
) -> TaskStepOutput | None:
    """Run `step` as the person did at the recorded step; None for a skip.

    `held`: tools whose calls the worker proposes as steps of their own (see `_held_tools`).
    """
    if _act(recorded, "skipped") is not None:
        runner.skip_step(task_id, step.step_id)
        return None
    rejected = _act(recorded, "rejected_call")
    if rejected is not None:
        return await runner.areject_step(task_id, step.step_id, message=rejected.text)
    hold: dict[str, Any] = {HOLD_TOOL: held.__contains__} if held else {}
    edited = _act(recorded, "edited_input") or _act(recorded, "edited_call")
    if edited is not None:
        return await runner.arun_step(task_id, input=edited.input, step_id=step.step_id, **hold)
    return await runner.arun_step(task_id, step_id=step.step_id, **hold)


def _compare_output(
    recorded: CaseStep, output: TaskStepOutput | None, log: ReplayLog
) -> Divergence | None:
    if output is None:
        return None
    if recorded.request is not None and log.calls_this_step == 0:
        return log.here(
            "missing_call",
            f"step {recorded.number} ({recorded.kind}): the recording called the model here "
            "and the replay did not (does the agent call a model of its own?)",
        )
    divergence = _compare_calls(recorded, output.tool_calls, log)
    if divergence is None and output.is_last != recorded.is_last:
        ended = "ended the task" if output.is_last else "did not end the task"
        divergence = log.here(
            "end", f"step {recorded.number} ({recorded.kind}) {ended}, unlike the recording"
        )
    return divergence


def _compare_calls(
    recorded: CaseStep, calls: list[ToolOutput], log: ReplayLog
) -> Divergence | None:
    names = [c.tool for c in recorded.tool_calls], [c.tool_name for c in calls]
    if names[0] != names[1]:
        return log.here(
            "tool_call",
            f"step {recorded.number} ({recorded.kind}): the tools called were {names[0]} in "
            f"the recording and {names[1]} now",
        )
    for was, now in zip(recorded.tool_calls, calls, strict=True):
        before, after = normalise_text(was.result), normalise_text(now.content)
        if before != after or was.is_error != now.is_error:
            return log.here(
                "tool_result",
                f"step {recorded.number} ({recorded.kind}): tool {was.tool} returned something "
                "else than in the recording",
                text_diff(before, after, what=f"result of {was.tool}"),
            )
    return None


# ----------------------------------------------------------------------------- live


async def _arun_live(runner: ParallelAgentRunner, task_id: str, case: Case) -> bool:
    """Run the agent's own model on the runtime loop; whether it reached its last step."""
    bound = max(20, _LIVE_STEP_FACTOR * len(case.steps))
    for number in range(1, bound + 1):
        recorded = case.steps[number - 1] if number <= len(case.steps) else None
        feedback = _act(recorded, "feedback") if recorded is not None else None
        if feedback is not None:
            runner.add_feedback(task_id, feedback.text)
            continue
        step = _next_step(runner, task_id)
        if step is None:
            return False
        lined_up = recorded is not None and recorded.kind == step.kind.value
        try:
            if lined_up and recorded is not None:
                held = _held_tools(case, number - 1)
                output = await _arun_with_acts(runner, task_id, step, recorded, held)
            else:
                output = await runner.arun_step(task_id, step_id=step.step_id)
        except AgentCoreError:
            return False  # The failed step counts against `no_failed_step`.
        if output is not None and output.is_last:
            return True
    return False


# ----------------------------------------------------------------------------- judging


def _outcome(runner: ParallelAgentRunner, task_id: str, normaliser: Normaliser) -> Outcome:
    state = runner.get_task_state(task_id)
    steps = state.completed_steps
    last = steps[-1] if steps else None
    answer = None
    if last is not None and last.is_last:
        answer = redact_text(_text(last.output), normaliser.secrets)
    failed = sum(1 for s in state.steps.values() if s.status is StepStatus.FAILED)
    return Outcome(
        task=state.task,
        answer=answer,
        steps=steps,
        failed_steps=failed,
        cost_usd=state.task.usage.cost_usd or 0.0,
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _rerecorded(case: Case, runner: ParallelAgentRunner, task_id: str, log: ReplayLog) -> Case:
    """The case as this replay recorded it: same name, agent, expectations; new steps."""
    fresh = case_from_task(runner, task_id, name=case.name, expectations=case.expectations)
    for step in fresh.steps:
        seen = log.requests.get(step.number)
        if step.request is not None and seen is not None:
            step.request = seen  # With the tools and settings the store does not keep.
    return fresh.model_copy(update={"agent": case.agent, "replay": case.replay})
