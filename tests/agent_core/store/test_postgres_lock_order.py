"""Commits of one task on PostgreSQL take the task row's lock first, so they never deadlock.

A commit made against a version that has moved on used to take no lock on the task row (its
compare-and-update matched nothing) and still wrote its step rows before the version check
was read: with a current commit writing the same steps in another order, each held a row
the other wanted, and PostgreSQL broke the deadlock by failing one with its own words
(process ids, lock names), answered 503 over HTTP. Now every commit waits for the task row
first, and a stale one is a plain `ConflictError` (`task_changed`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from agent_core import AgentRunner
from agent_core.errors import ConflictError
from agent_core.llms import ScriptedLLM
from agent_core.store import PostgresStore
from agent_core.store.base import TaskChange
from agent_core.types import TaskStep
from agent_core.workers import ReActAgentWorker

ROUNDS = 40
STEPS = 30


@pytest.fixture
def store(postgres_url: str, postgres_schema: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, schema=postgres_schema, max_connections=8)
    yield opened
    opened.close()


def _steps(task_id: str) -> list[TaskStep]:
    return [TaskStep(task_id=task_id, step_id=f"s{i:03d}", input=f"{i}") for i in range(STEPS)]


def _at_once(store: PostgresStore, changes: list[TaskChange]) -> list[BaseException | None]:
    """Commit `changes` on threads released together; what each raised (None: it landed)."""
    start = threading.Barrier(len(changes))
    outcomes: list[BaseException | None] = [None] * len(changes)

    def commit(i: int) -> None:
        start.wait(timeout=30)
        try:
            store.commit(changes[i])
        except BaseException as exc:  # Recorded, judged by the test.
            outcomes[i] = exc

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(changes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


def _stale_and_current(store: PostgresStore, task_id: str) -> list[TaskChange]:
    """Two changes writing the same steps in opposite orders: one current, one stale."""
    stale = store.load_task(task_id)
    assert stale is not None
    # Another runner moves the task on, so `stale` (read before) no longer matches.
    moved = store.load_task(task_id)
    assert moved is not None
    moved.version += 1
    store.commit(TaskChange(state=moved, base_version=stale.version, task_row=False))
    current = store.load_task(task_id)
    assert current is not None
    steps = _steps(task_id)
    changes = []
    for state, order in ((current, steps), (stale, list(reversed(steps)))):
        base, state.version = state.version, state.version + 1
        changes.append(TaskChange(state=state, base_version=base, steps=order))
    return changes


def test_a_stale_commit_racing_a_current_one_is_a_conflict_never_a_deadlock(
    store: PostgresStore,
) -> None:
    runner = AgentRunner(ReActAgentWorker([], ScriptedLLM(["Answer: 1"])), store=store)
    for _ in range(ROUNDS):
        task_id = runner.create_task("race").task_id
        landed, refused = _at_once(store, _stale_and_current(store, task_id))
        assert landed is None, landed  # The current change always lands...
        assert isinstance(refused, ConflictError), refused  # ...the stale one is refused,
        assert refused.code == "task_changed"  # as a changed task, never a deadlock.
        assert "deadlock" not in str(refused)
        stored = store.load_task(task_id)
        assert stored is not None and {s.step_id for s in _steps(task_id)} <= set(stored.steps)
