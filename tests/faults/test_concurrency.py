"""Two tabs on one task: two threads, each with its own runner on the same SQLite file.

Both tabs keep pressing Run step, Undo and Add feedback on the same task. A tab may be told
that the other one holds the task (`ConflictError`, `NotReadyError`, `NothingToRunError`, or a
step that failed because the other tab committed meanwhile), but at the end no step may be
lost or counted twice: the completed steps are numbered 1..n, the worker's count equals the
counting steps that completed, and every step a tab saw complete is still completed, or undone
with its output kept.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_core import (
    AgentRunner,
    StepKind,
    StepStatus,
    Task,
    TaskState,
    TaskStep,
)
from agent_core.errors import ConflictError, NothingToRunError, NotReadyError, StepError
from agent_core.runtime import transaction
from agent_core.store import SQLiteStore
from agent_core.types import TaskStepOutput
from agent_core.workers import CustomSimpleAgentWorker
from tests.faults._patches import patch_callable, patch_global

TARGET = 50
MAX_CLICKS = 600
"""Clicks per tab; far more than the task needs, so both tabs run until it is done."""
EXPECTED = (ConflictError, NotReadyError, NothingToRunError)


class Tracker:
    """Which steps are inside a worker right now, across both tabs, and any overlaps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running: set[str] = set()
        self.runs: Counter[str] = Counter()
        self.overlaps: list[str] = []

    def enter(self, step_id: str) -> None:
        with self._lock:
            if step_id in self.running:
                self.overlaps.append(step_id)
            self.running.add(step_id)
            self.runs[step_id] += 1

    def leave(self, step_id: str) -> None:
        with self._lock:
            self.running.discard(step_id)


def _as_another_tab(action: Callable[[], object]) -> None:
    """Run `action` on a thread of its own, as a second tab's rerun would, and wait for it.

    Not inline in the worker's thread: that is code the runtime runs, where sync twins are
    refused.
    """
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:
            errors.append(exc)

    tab = threading.Thread(target=run)
    tab.start()
    tab.join()
    if errors:
        raise errors[0]


class CountingWorker(CustomSimpleAgentWorker):
    """Counts one up per step until `target`; its count lives in the task's worker state."""

    def __init__(
        self,
        tracker: Tracker,
        *,
        target: int = TARGET,
        pause: float = 0.001,
        meanwhile: Callable[[], object] | None = None,
    ) -> None:
        super().__init__()
        self.tracker = tracker
        self.target = target
        self.pause = pause
        self.meanwhile = meanwhile
        """What the other tab does while a step runs (for scripted interleavings)."""

    async def arun_step(self, step: TaskStep, task: Task, **kwargs: Any) -> TaskStepOutput:
        self.tracker.enter(step.step_id)
        try:
            return await super().arun_step(step, task, **kwargs)
        finally:
            self.tracker.leave(step.step_id)

    def _run_step(self, state: dict[str, Any], task: Task, input: str | None) -> tuple[str, bool]:
        time.sleep(self.pause)  # A worker thread: the other tab acts meanwhile.
        if self.meanwhile is not None:
            _as_another_tab(self.meanwhile)
        state["count"] = state.get("count", 0) + 1
        return f"count={state['count']}", state["count"] >= self.target


@dataclass
class TabLog:
    """What one tab saw: the outputs it got back, typed refusals, and anything else."""

    outputs: list[TaskStepOutput] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    unexpected: list[BaseException] = field(default_factory=list)


def _is_conflict(exc: StepError) -> bool:
    """A step failed because the other tab committed while it ran: a typed refusal too."""
    return isinstance(exc.__cause__, ConflictError)


def _click(runner: AgentRunner, task_id: str, rng: random.Random, log: TabLog) -> None:
    roll = rng.random()
    if roll < 0.75:
        log.outputs.append(runner.run_step(task_id))
    elif roll < 0.9:
        runner.undo_step(task_id)
    else:
        runner.add_feedback(task_id, "keep counting")


def _finished(runner: AgentRunner, task_id: str) -> bool:
    last = runner.get_task_state(task_id).last_output
    return last is not None and last.is_last


def tab(
    runner: AgentRunner, task_id: str, seed: int, log: TabLog, start: threading.Barrier
) -> None:
    """One browser tab: click at random until the task's last step has run."""
    rng = random.Random(seed)
    start.wait()
    try:
        for _ in range(MAX_CLICKS):
            if _finished(runner, task_id):
                return
            time.sleep(rng.uniform(0, 0.002))  # People click at their own pace.
            try:
                _click(runner, task_id, rng, log)
            except EXPECTED as exc:
                log.refusals[type(exc).__name__] += 1
            except StepError as exc:
                if not _is_conflict(exc):
                    raise
                log.refusals["StepError(conflict)"] += 1
    except BaseException as exc:
        log.unexpected.append(exc)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[list[SQLiteStore]]:
    opened = [SQLiteStore(tmp_path / "stepwise.db") for _ in range(3)]
    yield opened
    for store in opened:
        store.close()


def _check_no_lost_or_duplicated_steps(state: TaskState, logs: list[TabLog]) -> None:
    numbers = [state.steps[s].number for s in state.completed]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(set(state.completed)) == len(state.completed)
    counting = [
        state.outputs[s].output for s in state.completed if state.steps[s].kind is StepKind.CUSTOM
    ]
    assert counting == [f"count={n}" for n in range(1, len(counting) + 1)], (
        "a count was lost or repeated"
    )
    assert state.task.extra_state["state"]["count"] == len(counting)
    for step_id in state.queue:
        assert state.steps[step_id].status in (StepStatus.UPCOMING, StepStatus.FAILED)
    for output in (o for log in logs for o in log.outputs):
        step = state.steps[output.task_step.step_id]
        assert step.status in (StepStatus.COMPLETED, StepStatus.UNDONE), "a completed step was lost"
        assert state.outputs[step.step_id].output == output.output


def test_two_tabs_on_one_task_lose_and_duplicate_no_step(
    stores: list[SQLiteStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    tracker = Tracker()
    tabs = [AgentRunner(CountingWorker(tracker), store=store) for store in stores[:2]]
    task_id = tabs[0].create_task("count to 50").task_id
    logs = [TabLog(), TabLog()]
    start = threading.Barrier(2)
    threads = [
        threading.Thread(target=tab, args=(runner, task_id, seed, log, start))
        for seed, (runner, log) in enumerate(zip(tabs, logs, strict=True))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a tab hung"
    assert [log.unexpected for log in logs] == [[], []]
    assert not tracker.overlaps, f"steps ran in both tabs at once: {tracker.overlaps}"

    reloaded = AgentRunner(CountingWorker(Tracker()), store=stores[2])
    state = reloaded.get_task_state(task_id)
    _check_no_lost_or_duplicated_steps(state, logs)
    assert sum(len(log.outputs) for log in logs) >= TARGET
    assert sum(sum(log.refusals.values()) for log in logs) > 0, "the tabs never met"
    assert state.outputs[state.completed[-1]].output == f"count={TARGET}"
    assert reloaded.finalize_response(task_id).response == f"count={TARGET}"


def _stored_status(store: SQLiteStore, task_id: str, step_id: str) -> StepStatus:
    state = store.load_task(task_id)
    assert state is not None
    return state.steps[step_id].status


@pytest.mark.parametrize("claim_stored", [False, True], ids=["claim-not-stored-yet", "stored"])
def test_a_step_running_in_one_tab_is_not_run_by_the_other(
    stores: list[SQLiteStore], monkeypatch: pytest.MonkeyPatch, claim_stored: bool
) -> None:
    # The claim reaches the file after CLAIM_PERSIST_DELAY_S; pin it either side of the race.
    patch_global(monkeypatch, transaction, "CLAIM_PERSIST_DELAY_S", 0.0 if claim_stored else 60.0)
    tracker = Tracker()
    seen: list[object] = []

    def other_tab_clicks_run() -> None:
        step_id = first.get_upcoming_steps(task_id)[0].step_id
        deadline = time.monotonic() + 10
        while claim_stored and _stored_status(stores[2], task_id, step_id) is StepStatus.UPCOMING:
            assert time.monotonic() < deadline, "the claim never reached the file"
            time.sleep(0.005)
        seen.append(_stored_status(stores[2], task_id, step_id))
        try:
            second.run_step(task_id)
        except ConflictError as exc:
            seen.append(exc)

    first = AgentRunner(CountingWorker(tracker, meanwhile=other_tab_clicks_run), store=stores[0])
    second = AgentRunner(CountingWorker(tracker), store=stores[1])
    task_id = first.create_task("count to 50").task_id

    result = first.run_step(task_id)

    expected = StepStatus.RUNNING if claim_stored else StepStatus.UPCOMING
    assert seen[0] is expected
    assert isinstance(seen[1], ConflictError) and "already running" in str(seen[1])
    assert tracker.runs[result.task_step.step_id] == 1
    assert _stored_status(stores[2], task_id, result.task_step.step_id) is StepStatus.COMPLETED


def test_a_failure_is_recorded_even_when_the_other_tab_commits_meanwhile(
    stores: list[SQLiteStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    second = AgentRunner(CountingWorker(Tracker()), store=stores[1])
    first = AgentRunner(
        CountingWorker(Tracker(), meanwhile=lambda: second.add_feedback(task_id, "meanwhile")),
        store=stores[0],
    )
    task_id = first.create_task("count to 50").task_id
    commit = stores[0].commit
    interfered: list[str] = []

    def commit_after_the_other_tab(change: Any) -> None:
        if any(step.status is StepStatus.FAILED for step in change.steps):
            interfered.append(change.state.task_id)
            second.add_feedback(task_id, "and again, while the failure is recorded")
        commit(change)

    commits = patch_callable(monkeypatch, stores[0], "commit", commit_after_the_other_tab)
    step_id = first.get_upcoming_steps(task_id)[0].step_id
    with pytest.raises((StepError, ConflictError)):
        first.run_step(task_id)
    commits.assert_reached()
    assert interfered, "the other tab never committed while the failure was recorded"

    reader = AgentRunner(CountingWorker(Tracker()), store=stores[2])
    step = reader.get_step(task_id, step_id)
    # Every try to record the failure lost to the other tab here, so the step may stay
    # `running` in the store: then it must read as interrupted (re-runnable), not as live.
    if step.status is StepStatus.RUNNING:
        assert reader.is_interrupted(task_id, step_id), "nothing runs the step any more"
    if step.status is StepStatus.FAILED:
        assert step.error, "a failed step must say why"
    second.undo_step(task_id)  # Nothing runs, so the feedback can be taken back.
