"""A fork's rows (issue 33): carried over as stored, its prompts read back, reloads and undoes."""

from __future__ import annotations

import pytest

from agent_core.store import InMemoryStore, SQLiteStore

from ..conftest import action

ADD = '{"a": 1, "b": 2}'


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "t.db")


def _task_of(make_agent, store, steps: int):
    """A runner on `store` and a task of `steps` completed tool steps."""
    agent, llm = make_agent([action("add", ADD)] * (steps + 2), store=store)
    task_id = agent.create_task("add 1 and 2, again").task_id
    for _ in range(steps):
        agent.run_step(task_id)
    return agent, llm, task_id


def test_a_forks_steps_read_back_the_prompts_their_originals_sent(make_agent, store):
    agent, llm, task_id = _task_of(make_agent, store, 5)
    original = agent.get_task_state(task_id)
    fork = agent.fork_task(task_id, original.completed[2])
    kept = agent.get_task_state(fork.task_id).completed
    assert [agent.get_messages_sent(fork.task_id, s) for s in kept] == llm.requests[:3]
    agent.run_step(fork.task_id)  # Its own prompt runs into the copied log.
    last = agent.get_task_state(fork.task_id).completed[-1]
    assert store.load_messages_sent(fork.task_id, last) == llm.requests[-1]


def test_a_fork_of_a_reloaded_task_undoes_and_leaves_the_original_unchanged(make_agent, tmp_path):
    path = tmp_path / "t.db"
    agent, _, task_id = _task_of(make_agent, SQLiteStore(path), 6)
    agent.store.close()
    reloaded, _ = make_agent([action("add", ADD)] * 4, store=SQLiteStore(path))
    before = reloaded.get_task_state(task_id)
    before_rows = {s: o.model_dump() for s, o in before.outputs.items()}
    before_memory = [m.content for m in before.task.memory.get_all()]
    fork = reloaded.fork_task(task_id, before.completed[3])
    reloaded.undo_step(fork.task_id, steps=2)
    fresh = SQLiteStore(path)
    forked = fresh.load_task(fork.task_id)
    assert forked is not None and len(forked.completed) == 2
    assert [s.number for s in (forked.steps[i] for i in forked.completed)] == [1, 2]
    assert len(forked.task.memory.get_all()) < len(before_memory)
    original = fresh.load_task(task_id)
    assert original is not None and original.completed == before.completed
    assert {s: o.model_dump() for s, o in original.outputs.items()} == before_rows
    assert [m.content for m in original.task.memory.get_all()] == before_memory
