"""Threads, forks, conversation edits and a task's limits (issue 22, items 1, 3 and 6).

A task starts a conversation of its own unless it continues a finalized task's thread; a
fork starts a new task at a completed step and leaves the original alone; a person edits the
conversation the model reads next as a step that undo reverts; a bound of the run can be
raised from outside the worker's constructor and the task goes on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import NothingToRunError, StepError, UserError
from agent_core.llms import ChatMessage, ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.store import InMemoryStore, SQLiteStore
from agent_core.task_files import workspace_folder
from agent_core.types import StepKind, StepStatus, TaskStatus

from .conftest import SEED_REPLIES, action, answer

QUESTION = "What is (121 * 3) + 42?"


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "t.db")


def _texts(messages: list[ChatMessage]) -> list[str]:
    return [m.content for m in messages]


def _finish(runner: AgentRunner, question: str) -> str:
    task = runner.create_task(question)
    runner.run_until(task.task_id)
    runner.finalize_response(task.task_id)
    return task.task_id


# ------------------------------------------------------------------------------ threads


def test_a_spec_runner_gives_every_task_a_conversation_of_its_own(tmp_path):
    """The leak: a finalized task's messages reached every later task's prompt."""
    spec = AgentSpec(provider="openai", model="gpt-4o-mini", workspace=str(tmp_path / "ws"))
    store = SQLiteStore(tmp_path / "app.db")
    first = spec.build_runner(store=store, api_key="sk-test")
    first.agent_worker.llm = ScriptedLLM([answer("Paris")])  # type: ignore[attr-defined]
    _finish(first, "Capital of France? (secret: hunter2)")
    second = spec.build_runner(store=store, api_key="sk-test")  # Another browser session.
    task = second.create_task("What is 2 + 2?")
    seen = " ".join(_texts(second.preview_messages(task.task_id)))
    assert "hunter2" not in seen and "Paris" not in seen
    assert task.history_length == 0


def test_continue_from_starts_with_the_finalized_tasks_conversation_and_thread(make_agent, store):
    runner, _ = make_agent(
        [*SEED_REPLIES, answer("It was 405.")], store=store, conversation_id=None
    )
    first = _finish(runner, QUESTION)
    follow = runner.create_task("And what was the result?", continue_from=first)
    earlier = runner.get_task(first).memory.get_all()
    assert follow.memory.get_all() == earlier
    assert follow.history_length == len(earlier)
    assert follow.thread_id == runner.get_task(first).thread_id == first
    assert follow.continued_from == first
    alone = runner.create_task("Unrelated")
    assert alone.thread_id == alone.task_id and alone.history_length == 0
    threads = {t.task_id: t.thread_id for t in runner.list_tasks()}
    assert threads == {first: first, follow.task_id: first, alone.task_id: alone.task_id}
    assert "405" in " ".join(_texts(runner.preview_messages(follow.task_id)))


def test_only_a_finalized_task_can_be_continued(make_agent):
    runner, _ = make_agent(conversation_id=None)
    open_task = runner.create_task(QUESTION)
    with pytest.raises(UserError) as caught:
        runner.create_task("go on", continue_from=open_task.task_id)
    assert caught.value.code == "thread_not_finished"
    assert caught.value.params["status"] == "active"


def test_the_python_api_keeps_llamaindex_runner_memory(make_agent):
    """`AgentRunner()` keeps LlamaIndex's behaviour: `chat()` turns share one conversation."""
    runner, _ = make_agent([*SEED_REPLIES, answer("Yes, 405.")])
    runner.chat(QUESTION)
    second = runner.create_task("Sure?")
    assert second.history_length > 0
    assert "405" in " ".join(_texts(second.memory.get_all()))


# -------------------------------------------------------------------------------- forks


def test_a_fork_starts_after_the_chosen_step_and_leaves_the_original_alone(make_agent, store):
    runner, _ = make_agent([*SEED_REPLIES, action("multiply", '{"a": 2, "b": 2}')], store=store)
    task = runner.create_task(QUESTION)
    runner.run_until(task.task_id)
    original = runner.snapshot_task_state(task.task_id)
    first = original.completed[0]

    fork = runner.fork_task(task.task_id, first)

    after = runner.snapshot_task_state(task.task_id)
    assert after.version == original.version and after.completed == original.completed
    state = runner.get_task_state(fork.task_id)
    assert len(state.completed) == 1 and fork.status is TaskStatus.ACTIVE
    assert fork.forked_from is not None and fork.forked_from.task_id == task.task_id
    assert fork.forked_from.number == 1
    assert state.steps[state.completed[0]].input == original.steps[first].input
    assert all(s.status is not StepStatus.UNDONE for s in state.steps.values())
    assert state.task.memory.get_all() == _memory_after(original, first)
    assert state.task.usage == original.outputs[first].usage
    # The fork runs on its own: its next step is the re-run of the original's second.
    runner.run_step(fork.task_id)
    assert runner.snapshot_task_state(task.task_id).version == original.version


def _memory_after(state, step_id):
    """The task's conversation right after `step_id`: the next step's undo snapshot."""
    following = state.completed[state.completed.index(step_id) + 1]
    snapshot = state.snapshots[following].memory
    return (snapshot.messages or state.task.memory.get_all())[: snapshot.length]


def test_a_fork_copies_the_workspace_and_reverts_later_writes_only_in_its_copy(tmp_path):
    def write(path: str, content: str) -> str:
        return action("write_file", json.dumps({"path": path, "content": content}))

    spec = AgentSpec(tools=("files",), workspace=str(tmp_path / "workspaces"))
    runner = spec.build_runner()
    replies = [write("a.txt", "one"), write("a.txt", "two"), write("b.txt", "new"), answer("ok")]
    runner.agent_worker.llm = ScriptedLLM(replies)  # type: ignore[attr-defined]
    task = runner.create_task("Write files.")
    for _ in range(4):
        runner.run_step(task.task_id)
    first_write = runner.get_task_state(task.task_id).completed[0]

    fork = runner.fork_task(task.task_id, first_write)  # Just after a.txt = "one".

    mine, theirs = workspace_folder(fork), workspace_folder(runner.get_task(task.task_id))
    assert mine is not None and theirs is not None and mine != theirs
    assert (mine / "a.txt").read_text() == "one" and not (mine / "b.txt").exists()
    assert (theirs / "a.txt").read_text() == "two" and (theirs / "b.txt").read_text() == "new"


def test_a_fork_needs_a_completed_step_of_a_live_task(make_agent, tmp_path):
    from agent_core.trace import export_trace, import_trace

    runner, _ = make_agent()
    task = runner.create_task(QUESTION)
    upcoming = runner.get_upcoming_steps(task.task_id)[0]
    with pytest.raises(UserError) as caught:
        runner.fork_task(task.task_id, upcoming.step_id)
    assert caught.value.code == "fork_point_not_completed"
    runner.run_step(task.task_id)
    copy = import_trace(export_trace(runner.get_task_state(task.task_id)), runner.store)
    done = runner.get_task_state(copy).completed[0]
    with pytest.raises(UserError) as caught:
        runner.fork_task(copy, done)
    assert caught.value.code == "fork_of_imported"


# -------------------------------------------------------------------- conversation edits


def test_an_edit_of_the_conversation_is_a_step_the_model_reads_and_undo_reverts(make_agent, store):
    runner, llm = make_agent(store=store)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)  # multiply(121, 3)
    runner.run_step(task.task_id)  # its result, 363, in memory
    before = runner.get_task(task.task_id).memory.get_all()
    observation = next(i for i, m in enumerate(before) if "363" in m.content)
    edited = list(before)
    edited[observation] = before[observation].model_copy(
        update={"content": before[observation].content.replace("363", "484")}
    )
    edited.append(ChatMessage(role="user", content="Use 484, please."))

    step = runner.edit_conversation(task.task_id, edited)

    assert step.kind is StepKind.HUMAN and step.name == "edit conversation"
    assert step.input == f"message {observation + 1} changed; 1 message added"
    preview = _texts(runner.preview_messages(task.task_id))
    assert any("484" in text for text in preview) and "Use 484, please." in preview
    assert not any("Observation: 363" in text for text in preview)
    runner.run_step(task.task_id)
    assert any("484" in m.content for m in llm.requests[-1])

    runner.undo_step(task.task_id)  # The model's step...
    runner.undo_step(task.task_id)  # ... and the edit.
    assert runner.get_task(task.task_id).memory.get_all() == before
    fresh = AgentRunner(runner.agent_worker, store=store)
    assert fresh.get_task(task.task_id).memory.get_all() == before


def test_an_edit_names_each_message_by_the_number_it_had_before_it(make_agent):
    # Dropping message 1 and changing message 3 read "message 2 changed": renumbered.
    runner, _ = make_agent()
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    before = runner.get_task(task.task_id).memory.get_all()
    assert len(before) >= 3 and not before[0].tool_calls and not before[0].tool_call_id
    last = len(before) - 1
    edited = [*before[1:last], before[last].model_copy(update={"content": "changed"})]
    edited.append(ChatMessage(role="user", content="A new one."))

    step = runner.edit_conversation(task.task_id, edited)

    n = len(before)
    assert step.step_state["conversation_edit"] == {
        "changed": [n],
        "dropped": [1],
        "added": [n + 1],
    }
    assert step.input == f"message {n} changed; message 1 dropped; 1 message added"


def test_an_edit_that_breaks_the_conversation_or_changes_nothing_is_refused(make_agent):
    from agent_core.llms.base import ToolCall

    runner, _ = make_agent()
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    messages = runner.get_task(task.task_id).memory.get_all()
    with pytest.raises(UserError) as caught:
        runner.edit_conversation(task.task_id, messages)
    assert caught.value.code == "conversation_unchanged"
    call = ChatMessage(role="assistant", tool_calls=(ToolCall(id="c1", name="add"),))
    with pytest.raises(UserError) as caught:
        runner.edit_conversation(task.task_id, [*messages, call])
    assert caught.value.code == "invalid_conversation"
    orphan = ChatMessage(role="tool", tool_call_id="zz", content="3")
    with pytest.raises(UserError) as caught:
        runner.edit_conversation(task.task_id, [*messages, orphan])
    assert caught.value.code == "invalid_conversation"
    with pytest.raises(UserError) as caught:
        runner.edit_conversation(task.task_id, [{"role": "nobody", "content": "x"}])
    assert caught.value.code == "invalid_conversation"
    runner.run_until(task.task_id)
    with pytest.raises(NothingToRunError) as caught:
        runner.edit_conversation(task.task_id, [*messages, ChatMessage(role="user", content="x")])
    assert caught.value.code == "edit_after_finish"


# ------------------------------------------------------------------------------- limits


def _loop(n: int) -> list[str]:
    return [action("add", '{"a": 1, "b": 1}') for _ in range(n)]


def test_a_task_stopped_by_max_iterations_goes_on_once_the_limit_is_raised(make_agent, store):
    runner, _ = make_agent(
        [*_loop(3), answer("2")], store=store, worker_kwargs={"max_iterations": 3}
    )
    task = runner.create_task("Loop")
    for _ in range(3):
        runner.run_step(task.task_id)
    with pytest.raises(StepError) as caught:
        runner.run_step(task.task_id)
    assert caught.value.params["cause_code"] == "max_iterations"
    assert caught.value.params["cause_params"] == {"limit": 3}
    assert "set_limits" in caught.value.params["cause_message"]

    runner.set_limits(task.task_id, max_iterations=4)

    assert runner.get_task(task.task_id).limits.max_iterations == 4
    assert runner.run_until(task.task_id).reason == "last_step"
    assert runner.get_task_output(task.task_id).output == "2"


def test_a_token_bound_stops_the_next_step_until_it_is_raised(make_agent):
    runner, _ = make_agent()
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    spent = runner.get_task(task.task_id).usage.total_tokens
    assert spent > 0
    runner.set_limits(task.task_id, max_tokens=spent)
    with pytest.raises(UserError) as caught:
        runner.run_step(task.task_id)
    assert caught.value.code == "limit_reached" and caught.value.remedy == "raise_limits"
    assert caught.value.params == {"limit_name": "max_tokens", "limit": spent, "used": spent}
    runner.set_limits(task.task_id, max_tokens=None)
    runner.run_step(task.task_id)


def test_bad_limits_are_refused_with_what_to_give(make_agent):
    runner, _ = make_agent()
    task = runner.create_task(QUESTION)
    with pytest.raises(UserError, match="unknown limit 'steps'"):
        runner.set_limits(task.task_id, steps=3)
    with pytest.raises(UserError, match="not valid"):
        runner.set_limits(task.task_id, max_iterations=0)


def test_threads_and_limits_survive_a_restart(make_agent, tmp_path: Path):
    store = SQLiteStore(tmp_path / "r.db")
    runner, _ = make_agent(store=store, conversation_id=None)
    first = _finish(runner, QUESTION)
    follow = runner.create_task("More?", continue_from=first)
    runner.set_limits(follow.task_id, max_iterations=50, max_cost_usd=0.5)
    again = AgentRunner(runner.agent_worker, store=SQLiteStore(tmp_path / "r.db"))
    loaded = again.get_task(follow.task_id)
    assert loaded.thread_id == first
    assert (loaded.limits.max_iterations, loaded.limits.max_cost_usd) == (50, 0.5)


def test_a_fork_leaves_out_edits_and_undone_steps_from_after_its_point(make_agent):
    """Issue 32 item 3: the fork stood where the original stood, before either happened."""
    runner, _ = make_agent([*SEED_REPLIES[:2], *SEED_REPLIES[1:]])
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    runner.undo_step(task.task_id)
    runner.run_step(task.task_id)  # The undone step 2 stays as a branch after step 1.
    state = runner.snapshot_task_state(task.task_id)
    upcoming = state.steps[state.queue[0]]
    runner.edit_step(task.task_id, upcoming.step_id, "Think again.")
    first = state.completed[0]

    fork = runner.get_task_state(runner.fork_task(task.task_id, first).task_id)

    assert all(s.status is not StepStatus.UNDONE for s in fork.steps.values())
    queued = fork.steps[fork.queue[0]]
    assert not queued.edited and queued.input != "Think again."
    assert queued.input == state.steps[state.completed[1]].input
    last = runner.get_task_state(runner.fork_task(task.task_id, state.completed[1]).task_id)
    assert not last.steps[last.queue[0]].edited
    assert last.steps[last.queue[0]].input == upcoming.input


def test_a_fork_of_a_reloaded_task_undoes_and_keeps_the_original_as_it_was(
    make_agent, tmp_path: Path
):
    """Issue 33: a reloaded task's outputs and snapshots are read lazily; a fork of it is exact."""
    runner, _ = make_agent(store=SQLiteStore(tmp_path / "f.db"))
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)
    runner.run_step(task.task_id)
    again = AgentRunner(runner.agent_worker, store=SQLiteStore(tmp_path / "f.db"))
    original = again.get_task_state(task.task_id)
    first, second = original.completed
    fork = again.get_task_state(again.fork_task(task.task_id, first).task_id)
    assert len(fork.completed) == 1 and fork.outputs[fork.completed[0]].task_step.number == 1
    assert fork.snapshots[fork.completed[0]].step_id == fork.completed[0]
    assert len(fork.task.memory) == original.snapshots[second].memory.length
    again.undo_step(fork.task_id)
    assert again.get_task_state(fork.task_id).completed == []
    reread = AgentRunner(runner.agent_worker, store=SQLiteStore(tmp_path / "f.db"))
    assert reread.get_task_state(task.task_id).completed == [first, second]
