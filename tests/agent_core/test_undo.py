"""Undo is exact: memory, worker state, queue and usage return to their pre-step snapshot."""

from __future__ import annotations

import pytest

from agent_core import StepStatus
from agent_core.dag import build_dag
from agent_core.errors import NothingToRunError, TaskNotActiveError, UserError
from agent_core.store import InMemoryStore, SQLiteStore

from .conftest import CALLS, SEED_REPLIES, action, answer

QUESTION = "What is (121 * 3) + 42?"


def _snapshot(agent, task_id):
    task = agent.get_task(task_id)
    return (
        task.memory.get_all(),
        dict(task.extra_state),
        [s.input for s in agent.get_upcoming_steps(task_id)],
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "undo.db")


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_undo_one_two_and_all_steps_restores_each_snapshot(make_agent, store, depth):
    agent, _ = make_agent(store=store)
    task = agent.create_task(QUESTION)
    before = [_snapshot(agent, task.task_id)]
    for _ in range(3):
        agent.run_step(task.task_id)
        before.append(_snapshot(agent, task.task_id))
    for undone in range(1, depth + 1):
        agent.undo_step(task.task_id)
        assert _snapshot(agent, task.task_id) == before[3 - undone]
    assert len(agent.get_completed_steps(task.task_id)) == 3 - depth
    # A fresh runner on the same store sees the same restored state.
    fresh, _ = make_agent(store=store)
    assert _snapshot(fresh, task.task_id) == before[3 - depth]


def test_undo_several_steps_at_once_equals_undoing_them_one_by_one(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    initial = _snapshot(agent, task.task_id)
    agent.run_until(task.task_id)
    agent.undo_step(task.task_id, steps=3)
    assert _snapshot(agent, task.task_id) == initial
    assert agent.get_task(task.task_id).usage.total_tokens == 0
    with pytest.raises(NothingToRunError, match="0 completed"):
        agent.undo_step(task.task_id)
    with pytest.raises(UserError):
        agent.undo_step(task.task_id, steps=0)


def test_undone_step_stays_in_history_and_is_upcoming_again_as_a_copy(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    second = agent.run_step(task.task_id).task_step
    assert len(agent.get_upcoming_steps(task.task_id)) == 1
    again = agent.undo_step(task.task_id)
    assert agent.get_step(task.task_id, second.step_id).status is StepStatus.UNDONE
    assert agent.get_step_output(task.task_id, second.step_id).tool_calls[0].content == "405"
    upcoming = agent.get_upcoming_steps(task.task_id)
    assert [s.step_id for s in upcoming] == [again.step_id]  # Its queued child left the queue.
    assert again.prev_step_ids == second.prev_step_ids
    assert again.branch_id != second.branch_id


def test_rerun_after_undo_makes_a_new_branch_and_the_dag_holds_both(make_agent):
    replies = [*SEED_REPLIES[:2], action("add", '{"a": 363, "b": 40}'), answer("403")]
    agent, _ = make_agent(replies)
    task = agent.create_task(QUESTION)
    first = agent.run_step(task.task_id).task_step
    old = agent.run_step(task.task_id).task_step
    agent.undo_step(task.task_id)
    new = agent.run_step(task.task_id).task_step
    assert CALLS[-1] == ("add", 363, 40)
    graph = build_dag(agent.get_task_state(task.task_id))
    assert set(graph.successors(first.step_id)) >= {old.step_id, new.step_id}
    assert graph.nodes[old.step_id]["status"] == "undone"
    assert graph.nodes[new.step_id]["status"] == "completed"
    assert graph.nodes[old.step_id]["branch_id"] != graph.nodes[new.step_id]["branch_id"]
    assert new.number == old.number == 2


def test_undo_then_edit_then_rerun_records_both_inputs(make_agent):
    agent, llm = make_agent([*SEED_REPLIES[:1], *SEED_REPLIES])
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    again = agent.undo_step(task.task_id)
    agent.edit_step(task.task_id, again.step_id, "Compute 121 * 3 + 42.")
    out = agent.run_step(task.task_id)
    assert out.task_step.proposed_input == QUESTION
    assert llm.requests[-1][1].content == "Compute 121 * 3 + 42."
    assert [m.content for m in llm.requests[-1]].count(QUESTION) == 0


def test_undo_after_finalize_and_on_abandoned_tasks_is_refused(make_agent):
    agent, _ = make_agent()
    done = agent.chat(QUESTION)
    with pytest.raises(TaskNotActiveError, match="finished"):
        agent.undo_step(done.task_id)
    agent2, _ = make_agent()
    task = agent2.create_task(QUESTION)
    agent2.run_step(task.task_id)
    agent2.abandon_task(task.task_id)
    with pytest.raises(TaskNotActiveError, match="abandoned"):
        agent2.undo_step(task.task_id)


def test_undo_restores_worker_state(make_agent):
    agent, _ = make_agent()
    task = agent.create_task(QUESTION)
    agent.run_step(task.task_id)
    agent.run_step(task.task_id)
    assert agent.get_task(task.task_id).extra_state == {"iterations": 2}
    agent.undo_step(task.task_id)
    assert agent.get_task(task.task_id).extra_state == {"iterations": 1}
