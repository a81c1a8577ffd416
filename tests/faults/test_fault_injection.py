"""Seeded fault injection: the demo tasks under a model that fails at random steps.

Each run plays one demo scenario on a SQLite file with a `FaultyLLM` around the demo model,
driven by a random mix of what a person does in the UI: run a step, run the ready steps in
parallel, stream a step, retry a failed step, fix a bad plan by hand, add feedback, undo.
After every action a fresh runner on the same file (a reload, a second tab) must find the
task intact:

- every completed step is stored exactly as the live runner returned it, numbered 1..n, and
  keeps its output when later undone;
- every failure is recorded on its step (status `failed`, its error) and names the fault
  that caused it; every provider error fails the action it happens in;
- the queue holds only upcoming or failed steps, nothing is left `running`;
- the stored memory and worker state equal the live runner's, equal what they were right
  after the last completed step, and an undo restores exactly what they were before it.

At the end, with faults off, every failed step can be retried, an undo followed by a re-run
works, and the task runs to its last step and finalizes. Crashes (a killed process) are
covered by tests/agent_core/test_restart.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent_core import AgentRunner, ParallelAgentRunner, StepKind, StepStatus, TaskStatus
from agent_core.demos import SCENARIOS
from agent_core.errors import NothingToRunError, NotReadyError, StepError, UserError
from agent_core.events import StepCompletedEvent, StepFailedEvent
from agent_core.llms import demo as demo_module
from agent_core.llms.base import ChatMessage
from agent_core.store import SQLiteStore
from agent_core.types import TaskState, TaskStepOutput
from tests.faults._faulty import (
    FC_GARBAGE,
    PLAN_GARBAGE,
    PROVIDER_FAULTS,
    REACT_GARBAGE,
    Fault,
    FaultyLLM,
)
from tests.faults._patches import PatchNotReached, patch_callable

# 200 runs in all. The haiku scenario runs a real Python sandbox for its page, so it gets a
# smaller share; its runs are longer anyway (plan, two delegates, page, aggregate).
RUNS = {"arithmetic": 90, "parallel": 80, "haiku": 30}
MAX_ACTIONS = 40
FAULT_RATE = 0.3
STOP_AT_LAST_STEP = 0.6
"""Chance to stop at the last step; otherwise the run goes on (undo, run with nothing left)."""
GARBAGE = {
    "arithmetic": REACT_GARBAGE,
    "parallel": (*FC_GARBAGE, *REACT_GARBAGE[:2]),
    "haiku": (*PLAN_GARBAGE, *REACT_GARBAGE),
}
_OWN_FAILURES = ("max_iterations",)
"""Failures a task may reach without a fault in the same action (too many garbage turns)."""

Outcome = Sequence[TaskStepOutput]


@dataclass(frozen=True)
class Memo:
    """A task's memory and worker state at one moment, comparable with `==`."""

    messages: tuple[ChatMessage, ...]
    extra_state: str

    @classmethod
    def of(cls, state: TaskState) -> Memo:
        extra = json.dumps(state.task.extra_state, sort_keys=True)
        return cls(tuple(state.task.memory.get_all()), extra)


@dataclass
class Mark:
    """What memory held just before a completed step and just after it, where observed."""

    before: Memo | None = None
    after: Memo | None = None


def fingerprint(output: TaskStepOutput) -> dict[str, Any]:
    """Everything a completed step's output says that must never change afterwards."""
    # The prompt is stored apart (load_messages_sent); a load leaves it out.
    data = output.model_dump(mode="json", exclude={"task_step", "next_steps", "messages_sent"})
    step = output.task_step
    data["step"] = step.model_dump(
        mode="json", include={"step_id", "kind", "input", "number", "branch_id", "depends_on"}
    )
    return data


class FaultRun:
    """One seeded run of a demo scenario under faults, checking the store after each action."""

    def __init__(self, scenario: str, seed: int, tmp_path: Path, llm: FaultyLLM) -> None:
        self.name = scenario
        self.rng = random.Random(f"actions:{scenario}:{seed}")
        self.llm = llm
        self.db = tmp_path / "stepwise.db"
        spec = SCENARIOS[scenario].spec.model_copy(update={"workspace": str(tmp_path / "ws")})
        self.runner: ParallelAgentRunner = spec.build_runner(store=SQLiteStore(self.db))
        self.check_store = SQLiteStore(self.db)  # Its own connection: what a reload reads.
        self.task_id = self.runner.create_task(SCENARIOS[scenario].task).task_id
        self.seen: dict[str, dict[str, Any]] = {}
        self.marks: dict[str, Mark] = {}
        self.completed: list[str] = []
        self.actions: list[str] = []
        self.errors = 0
        first = self.load()
        self.initial = self.previous = Memo.of(first)

    def close(self) -> None:
        self.runner.store.close()
        self.check_store.close()

    # ------------------------------------------------------------------ reading

    def load(self) -> TaskState:
        """The task as a fresh runner on the same file sees it."""
        fresh = AgentRunner(self.runner.agent_worker, store=self.check_store, conversation_id=None)
        return fresh.get_task_state(self.task_id)

    def live(self) -> TaskState:
        return self.runner.get_task_state(self.task_id)

    def failed_steps(self, state: TaskState) -> list[str]:
        return [s for s in state.queue if state.steps[s].status is StepStatus.FAILED]

    # ------------------------------------------------------------------ actions

    def _run_step(self) -> Outcome:
        return [self.runner.run_step(self.task_id)]

    def _run_wave(self) -> Outcome:
        return self.runner.run_steps_in_queue(self.task_id)

    def _stream_step(self) -> Outcome:
        events = []
        try:
            for event in self.runner.stream_step(self.task_id):
                events.append(event)
        except StepError as exc:
            assert isinstance(events[-1], StepFailedEvent), "a failed stream must say so first"
            assert events[-1].error == str(exc)
            raise
        assert isinstance(events[-1], StepCompletedEvent)
        return [events[-1].output]

    def _retry(self) -> Outcome:
        failed = self.rng.choice(self.failed_steps(self.live()))
        return [self.runner.run_step(self.task_id, step_id=failed)]

    def _valid_plan(self) -> str:
        """The plan the real demo model writes for the task, as a person would paste it."""
        request = [ChatMessage(role="user", content=SCENARIOS[self.name].task)]
        return asyncio.run(self.llm.inner.chat(request)).text

    def _fix_plan(self) -> Outcome:
        state = self.live()
        [step_id] = [s for s in self.failed_steps(state) if state.steps[s].kind is StepKind.PLAN]
        proposed = state.steps[step_id].input
        output = self.runner.run_step(self.task_id, step_id=step_id, input=self._valid_plan())
        step = self.load().steps[step_id]
        assert step.edited and step.proposed_input == proposed, "the proposal must be kept"
        return [output]

    def _undo(self) -> Outcome:
        count = len(self.live().completed)
        self.runner.undo_step(
            self.task_id, steps=2 if count >= 2 and self.rng.random() < 0.2 else 1
        )
        return []

    def _feedback(self) -> Outcome:
        self.runner.add_feedback(self.task_id, f"Please go on (note {len(self.actions)}).")
        return []

    def _choices(self) -> dict[str, tuple[Callable[[], Outcome], int]]:
        state = self.live()
        failed = self.failed_steps(state)
        choices: dict[str, tuple[Callable[[], Outcome], int]] = {
            "step": (self._run_step, 30),
            "wave": (self._run_wave, 20),
            "stream": (self._stream_step, 10),
        }
        if failed:
            choices["retry"] = (self._retry, 20)
        if any(state.steps[s].kind is StepKind.PLAN for s in failed):
            choices["fix_plan"] = (self._fix_plan, 10)
        if state.completed:
            choices["undo"] = (self._undo, 15)
        if state.completed and state.queue:
            # Feedback before the first step would change the demo model's script (it picks
            # its replies by the conversation's first user message); feedback after the last
            # step strands the task (test_feedback_after_the_last_step_keeps_it_finalizable).
            choices["feedback"] = (self._feedback, 4)
        return choices

    def act(self) -> None:
        """Do one random action, then check the store."""
        choices = self._choices()
        name = self.rng.choices(list(choices), weights=[w for _, w in choices.values()])[0]
        self.actions.append(name)
        self.perform(choices[name][0])

    def perform(self, action: Callable[[], Outcome]) -> bool:
        """Run `action`, check the store; False when it failed as a step failure may."""
        faults_before = len(self.llm.injected)
        try:
            outputs = action()
        except StepError as exc:
            self.errors += 1
            faults = self.llm.injected[faults_before:]
            self.check(failure=(exc, faults))
            return False
        except (NothingToRunError, NotReadyError):
            self.check()
            return False
        # A provider error fails its step, unless it hit a tool that calls the model (the image
        # tool draws with it): then the tool's error is what the model reads.
        tool_errors = [c.content for o in outputs for c in o.tool_calls if c.is_error]
        for fault in self.llm.injected[faults_before:]:
            if fault.raises:
                assert any(fault.marker in e for e in tool_errors), f"{fault} was swallowed"
        self.check(outputs=outputs)
        return True

    def done(self) -> bool:
        """Whether to stop: the budget is spent, or the last step ran (sometimes undo it)."""
        if len(self.actions) >= MAX_ACTIONS:
            return True
        return self.finished and self.rng.random() < STOP_AT_LAST_STEP

    @property
    def finished(self) -> bool:
        last = self.live().last_output
        return last is not None and last.is_last

    # ------------------------------------------------------------------ checks

    def check(
        self,
        *,
        outputs: Outcome = (),
        failure: tuple[StepError, list[Fault]] | None = None,
    ) -> None:
        """Every invariant of the issue, on the task as a fresh runner loads it."""
        stored = self.load()
        self._check_against_live(stored)
        self._check_completed(stored, outputs)
        self._check_queue(stored)
        self._check_memory(stored)
        if failure is not None:
            self._check_failure(stored, *failure)
        [summary] = [s for s in self.runner.list_tasks() if s.task_id == self.task_id]
        assert (summary.steps_completed, summary.steps_upcoming) == (
            len(stored.completed),
            len(stored.queue),
        )

    def _check_against_live(self, stored: TaskState) -> None:
        live = self.live()
        assert stored.version == live.version
        assert stored.queue == live.queue
        assert stored.completed == live.completed
        statuses = {i: (s.status, s.error, s.input) for i, s in stored.steps.items()}
        assert statuses == {i: (s.status, s.error, s.input) for i, s in live.steps.items()}
        assert Memo.of(stored) == Memo.of(live), "the store's memory differs from the runner's"
        assert stored.task.status == live.task.status

    def _check_completed(self, stored: TaskState, outputs: Outcome) -> None:
        numbers = [stored.steps[s].number for s in stored.completed]
        assert numbers == list(range(1, len(numbers) + 1)), f"completed numbers {numbers}"
        assert set(stored.snapshots) == set(stored.completed), "one undo snapshot per step"
        for output in outputs:  # What the live runner returned is what was stored.
            step_id = output.task_step.step_id
            assert fingerprint(stored.outputs[step_id]) == fingerprint(output)
        live = self.live()
        for step_id in stored.completed:
            assert stored.steps[step_id].status is StepStatus.COMPLETED
            seen = self.seen.setdefault(step_id, fingerprint(live.outputs[step_id]))
            assert fingerprint(stored.outputs[step_id]) == seen, f"step {step_id} changed"
        for step_id, step in stored.steps.items():
            if step.status is StepStatus.UNDONE:  # History keeps what an undone step did.
                assert fingerprint(stored.outputs[step_id]) == self.seen[step_id]

    def _check_queue(self, stored: TaskState) -> None:
        assert len(set(stored.queue)) == len(stored.queue), "a step is queued twice"
        assert not set(stored.queue) & set(stored.completed)
        for step_id in stored.queue:
            step = stored.steps[step_id]
            assert step.status in (StepStatus.UPCOMING, StepStatus.FAILED), step.status
        for step_id, step in stored.steps.items():
            if step.status is StepStatus.FAILED:
                assert step_id in stored.queue, "a failed step must stay runnable"
                assert step.error, "a failed step must say why"
        if stored.task.status is TaskStatus.FAILED:
            assert self.failed_steps(stored), "the task is failed but no step is"

    def _check_memory(self, stored: TaskState) -> None:
        now = Memo.of(stored)
        old, new = self.completed, stored.completed
        if new[: len(old)] == old:
            added = new[len(old) :]
            if added:
                self.marks.setdefault(added[0], Mark()).before = self.previous
                self.marks.setdefault(added[-1], Mark()).after = now
        else:
            assert old[: len(new)] == new, f"completed steps rewritten: {old} -> {new}"
            undone = self.marks.get(old[len(new)], Mark())
            if undone.before is not None:
                assert now == undone.before, "undo did not restore memory as it was before"
        expected = self.marks.get(new[-1], Mark()).after if new else self.initial
        if expected is not None:
            assert now == expected, "memory differs from right after the last completed step"
        for step_id in new:
            before = self.marks.get(step_id, Mark()).before
            if before is not None:
                assert stored.snapshots[step_id].memory.length == len(before.messages)
        self.completed, self.previous = list(new), now

    def _check_failure(self, stored: TaskState, exc: StepError, faults: list[Fault]) -> None:
        if exc.step_id:
            step = stored.steps[exc.step_id]
            assert step.status is StepStatus.FAILED
            assert step.error and step.error in str(exc), "the step must record its error"
        errors = [stored.steps[s].error or "" for s in self.failed_steps(stored)]
        explained = any(f.marker in e for f in faults for e in errors)
        allowed = any(reason in str(exc) for reason in _OWN_FAILURES)
        assert explained or allowed, f"unexplained failure {exc!s:.500} (faults {faults})"

    # ------------------------------------------------------------------ ending

    def finish(self) -> None:
        """With faults off: retry each failed step, undo and re-run, then run to the end."""
        self.llm.enabled = False
        state = self.live()
        for step_id in self.failed_steps(state):
            if state.is_ready(state.steps[step_id]):
                self.perform(lambda s=step_id: [self.runner.run_step(self.task_id, step_id=s)])
        if self.live().completed:
            assert self.perform(self._undo)
            # Only a task that used up its iterations may fail here (checked in perform).
            assert self.perform(self._run_step) or self.failed_steps(self.live())
        self.perform(lambda: self.runner.run_until(self.task_id, max_steps=60).outputs)
        if self.finished:
            last = self.live().last_output
            assert last is not None
            assert self.runner.finalize_response(self.task_id).response == str(last.output)
            assert self.load().task.status is TaskStatus.COMPLETED
        else:
            state = self.live()
            reasons = [state.steps[s].error or "" for s in self.failed_steps(state)]
            assert any("max_iterations" in r for r in reasons), f"cannot finish: {reasons}"


CASES = [(name, seed) for name, count in RUNS.items() for seed in range(count)]

FAULT_KINDS = {*PROVIDER_FAULTS, "garbage"}
FIRST_FAULT_WITHIN = 3
"""Every run meets its first fault within this many model calls (short runs may draw none)."""


def play(
    scenario: str,
    seed: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    factory: tuple[Any, str] = (demo_module, "demo_llm"),
) -> FaultyLLM:
    """One seeded run under faults injected through `factory`; fails if none was injected.

    The spec builds its model (and the planner's sub-agents' model) through `demo_llm`, so
    that is where the faulty model goes in. Were it built elsewhere, the run would play the
    plain demo model and prove nothing: the check at the end fails it instead.
    """
    real = demo_module.demo_llm()
    llm = FaultyLLM(
        real,
        random.Random(f"faults:{scenario}:{seed}"),
        rate=FAULT_RATE,
        garbage=GARBAGE[scenario],
        first_fault_by=1 + seed % FIRST_FAULT_WITHIN,
    )
    built = patch_callable(monkeypatch, *factory, lambda: llm)
    run = FaultRun(scenario, seed, tmp_path, llm)
    try:
        while not run.done():
            run.act()
        run.finish()
    finally:
        run.close()
    built.assert_reached()
    assert llm.calls > 0 and llm.injected, f"no fault injected in {llm.calls} model calls"
    assert {fault.kind for fault in llm.injected} <= FAULT_KINDS
    return llm


@pytest.mark.parametrize(("scenario", "seed"), CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_seeded_faults_never_corrupt_a_task(
    scenario: str, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    play(scenario, seed, tmp_path, monkeypatch)


def test_the_runs_meet_every_kind_of_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kinds: set[str] = set()
    for seed in range(6):
        with monkeypatch.context() as patch:
            (tmp_path / str(seed)).mkdir()
            llm = play("arithmetic", seed, tmp_path / str(seed), patch)
        kinds |= {fault.kind for fault in llm.injected}
    assert kinds == FAULT_KINDS


def test_a_run_whose_faults_go_nowhere_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where `demo_llm` was before a move: nothing calls it there, so nothing is injected.
    moved_away = ModuleType("agent_core.old_demos")
    moved_away.demo_llm = demo_module.demo_llm  # type: ignore[attr-defined]
    with pytest.raises(PatchNotReached, match=r"agent_core\.old_demos\.demo_llm"):
        play("arithmetic", 0, tmp_path, monkeypatch, factory=(moved_away, "demo_llm"))


def test_feedback_after_the_last_step_keeps_it_finalizable(tmp_path: Path) -> None:
    scenario = SCENARIOS["arithmetic"]
    spec = scenario.spec.model_copy(update={"workspace": str(tmp_path / "ws")})
    runner = spec.build_runner(store=SQLiteStore(tmp_path / "stepwise.db"))
    task_id = runner.create_task(scenario.task).task_id
    assert runner.run_until(task_id).reason == "last_step"
    with contextlib.suppress(UserError):  # Refusing the feedback would be fine too.
        runner.add_feedback(task_id, "Thanks, that is all.")
    assert runner.finalize_response(task_id).response == "(121 * 3) + 42 = 405"
