"""Stores keep a task whole: a second runner (or a reopened file) sees and continues it."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core import AgentRunner, StepStatus, TaskState, TaskStatus
from agent_core.errors import ConflictError, StepError, StoreError, TaskNotFoundError
from agent_core.llms import ChatMessage, FunctionLLM, ScriptedLLM, ToolSpec
from agent_core.runtime.claims import CLAIM_PERSIST_DELAY_S
from agent_core.store import InMemoryStore, MemoryWrite, SQLiteStore, Store, TaskChange
from agent_core.store.sqlite import _LAYOUT_VERSION
from agent_core.tools import FunctionTool
from agent_core.types import TaskStep
from agent_core.workers import ReActAgentWorker

QUESTION = "What is 1 + 2?"
CALL_ADD = 'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
ANSWER = "Thought: done.\nAnswer: 3"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_worker(llm: ScriptedLLM | FunctionLLM) -> ReActAgentWorker:
    return ReActAgentWorker.from_tools([FunctionTool.from_defaults(fn=add)], llm=llm)


def make_runner(store: Store, *replies: str) -> tuple[AgentRunner, ScriptedLLM]:
    llm = ScriptedLLM(replies)
    return AgentRunner(make_worker(llm), store=store), llm


def contents(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    opened: Store = SQLiteStore(tmp_path / "x.db") if request.param == "sqlite" else InMemoryStore()
    yield opened
    opened.close()


@pytest.fixture
def reopen(store: Store) -> Iterator[Callable[[], Store]]:
    """Another view of `store`'s data: a new connection to the file, or the same object."""
    opened: list[SQLiteStore] = []

    def _reopen() -> Store:
        if isinstance(store, SQLiteStore):
            opened.append(SQLiteStore(store.path))
            return opened[-1]
        return store

    yield _reopen
    for each in opened:
        each.close()


def views(store: Store, reopen: Callable[[], Store]) -> list[Store]:
    """The same store object and, for SQLite, a second store on the same file."""
    return [store, reopen()] if isinstance(store, SQLiteStore) else [store]


def assert_same_task(got: TaskState, live: TaskState) -> None:
    """`got` (loaded by another runner) holds exactly what the live runner holds."""
    assert got is not live
    assert got.task.memory is not live.task.memory
    assert got.version == live.version
    assert got.queue == live.queue
    assert got.completed == live.completed
    assert {k: s.model_dump(mode="json") for k, s in got.steps.items()} == {
        k: s.model_dump(mode="json") for k, s in live.steps.items()
    }
    assert list(got.steps) == list(live.steps)  # creation order survives
    # The task row: status, usage, timestamps, memory (messages and token limit), extra_state.
    assert got.task.model_dump(mode="json") == live.task.model_dump(mode="json")
    assert set(got.outputs) == set(live.outputs)
    for step_id, output in live.outputs.items():
        other = got.outputs[step_id]
        assert other.output == output.output
        assert [c.model_dump() for c in other.tool_calls] == [
            c.model_dump() for c in output.tool_calls
        ]
        assert (other.is_last, other.thought, other.usage) == (
            output.is_last,
            output.thought,
            output.usage,
        )
        assert other.task_step.step_id == step_id
    assert {k: s.model_dump() for k, s in got.snapshots.items()} == {
        k: s.model_dump() for k, s in live.snapshots.items()
    }


# ---------------------------------------------------------------------------- round trip


def test_second_runner_sees_the_task_exactly(
    store: Store, reopen: Callable[[], Store], tmp_path: Path
) -> None:
    agent, llm = make_runner(store, CALL_ADD, ANSWER)
    task_id = agent.create_task(QUESTION).task_id

    agent.run_step(task_id)
    live = agent.get_task_state(task_id)
    first_id, second_id = live.completed[0], live.queue[0]
    version_after_one = live.version
    for view in views(store, reopen):
        got = AgentRunner(make_worker(ScriptedLLM([])), store=view).get_task_state(task_id)
        assert_same_task(got, live)
        assert got.steps[second_id].status is StepStatus.UPCOMING
        [summary] = view.list_tasks()
        assert (summary.steps_completed, summary.steps_upcoming) == (1, 1)

    output = agent.run_step(task_id)
    assert output.is_last and llm.exhausted
    live = agent.get_task_state(task_id)
    assert live.version > version_after_one
    # The live state is not trivially empty, so comparing against it means something.
    assert live.completed == [first_id, second_id]
    assert [live.steps[s].number for s in live.completed] == [1, 2]
    assert contents(live.task.memory.get_all()) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
        ("assistant", ANSWER),
    ]
    assert live.task.extra_state == {"iterations": 2}

    for view in views(store, reopen):
        other = AgentRunner(make_worker(ScriptedLLM([])), store=view)
        got = other.get_task_state(task_id)
        assert_same_task(got, live)
        assert [got.steps[s].status for s in got.completed] == [StepStatus.COMPLETED] * 2
        assert [got.steps[s].input for s in got.completed] == [QUESTION, None]
        assert got.queue == []
        [call] = got.outputs[first_id].tool_calls
        assert (call.tool_name, call.args, call.content) == ("add", {"a": 1, "b": 2}, "3")
        assert got.outputs[second_id].output == "3"
        assert got.task.extra_state == {"iterations": 2}
        [summary] = other.list_tasks()
        assert summary.task_id == task_id
        assert summary.input == QUESTION
        assert summary.status is TaskStatus.ACTIVE
        assert (summary.steps_completed, summary.steps_upcoming) == (2, 0)
        assert summary.usage == live.task.usage
        assert summary.usage.prompt_tokens > 0
    finalizer = AgentRunner(make_worker(ScriptedLLM([])), store=reopen())
    assert finalizer.finalize_response(task_id).response == "3"
    assert agent.get_task(task_id).status is TaskStatus.COMPLETED


def test_token_limit_and_worker_state_round_trip(store: Store, reopen: Callable[[], Store]) -> None:
    from agent_core import ChatMemoryBuffer

    llm = ScriptedLLM([CALL_ADD])
    agent = AgentRunner(make_worker(llm), store=store, memory=ChatMemoryBuffer(token_limit=5000))
    state = {"plan": ["add", "answer"], "nested": {"ok": True, "n": None}, "ratio": 0.5}
    task_id = agent.create_task(QUESTION, extra_state=state).task_id
    agent.run_step(task_id)

    got = AgentRunner(make_worker(ScriptedLLM([])), store=reopen()).get_task(task_id)
    assert got.memory.token_limit == 5000
    assert got.extra_state == {**state, "iterations": 1}


def test_list_tasks_newest_first_with_counts_and_status(
    store: Store, reopen: Callable[[], Store]
) -> None:
    agent, _ = make_runner(store, CALL_ADD, ANSWER)
    done = agent.create_task(QUESTION).task_id
    agent.run_step(done)
    agent.run_step(done)
    agent.finalize_response(done)
    dropped = agent.create_task("abandon me").task_id
    agent.abandon_task(dropped)
    fresh = agent.create_task("not started").task_id

    other = AgentRunner(make_worker(ScriptedLLM([])), store=reopen())
    summaries = other.list_tasks()
    assert [s.task_id for s in summaries] == [fresh, dropped, done]
    assert [(s.status, s.steps_completed, s.steps_upcoming) for s in summaries] == [
        (TaskStatus.ACTIVE, 0, 1),
        (TaskStatus.ABANDONED, 0, 1),
        (TaskStatus.COMPLETED, 2, 0),
    ]
    assert [s.task_id for s in other.get_completed_tasks()] == [done]


def test_finalized_answer_is_in_the_conversation_a_new_runner_loads(
    store: Store, reopen: Callable[[], Store]
) -> None:
    agent, _ = make_runner(store, CALL_ADD, ANSWER)
    agent.chat(QUESTION)

    later, llm = make_runner(reopen(), ANSWER)
    assert contents(later.memory.get_all()) == [("user", QUESTION), ("assistant", "3")]
    task = later.create_task("And again?")
    assert task.history_length == 2
    later.run_step(task.task_id)
    assert contents(llm.requests[0][1:]) == [
        ("user", QUESTION),
        ("assistant", "3"),
        ("user", "And again?"),
    ]


# ------------------------------------------------------------------------------ conflict


def test_stale_runner_reloads_and_runs_the_next_step(store: Store) -> None:
    llm = ScriptedLLM([CALL_ADD, ANSWER])
    worker = make_worker(llm)
    runner_a = AgentRunner(worker, store=store)
    runner_b = AgentRunner(worker, store=store)
    task_id = runner_a.create_task(QUESTION).task_id
    cached = runner_b.get_task_state(task_id)
    [first_id] = cached.queue

    runner_a.run_step(task_id)
    output = runner_b.run_step(task_id)  # B's cache still says the first step is upcoming

    second_id = runner_a.get_task_state(task_id).steps[first_id].next_step_ids[0]
    assert output.task_step.step_id == second_id
    assert output.task_step.number == 2
    assert output.is_last and output.output == "3"
    assert llm.exhausted  # the first step did not run twice
    # B's model saw A's step: it reloaded memory instead of using its stale copy.
    assert contents(llm.requests[1][1:]) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
    ]
    for runner in (runner_a, runner_b):
        state = runner.get_task_state(task_id)
        assert state.completed == [first_id, second_id]
        assert set(state.steps) == {first_id, second_id}
        assert [state.steps[s].number for s in state.completed] == [1, 2]
        assert len(state.task.memory) == 4
        [summary] = runner.list_tasks()
        assert summary.steps_completed == 2
    assert runner_a.finalize_response(task_id).response == "3"


def test_stale_runner_undoes_the_latest_step(store: Store) -> None:
    worker = make_worker(ScriptedLLM([CALL_ADD, ANSWER]))
    runner_a = AgentRunner(worker, store=store)
    runner_b = AgentRunner(worker, store=store)
    task_id = runner_a.create_task(QUESTION).task_id
    runner_a.run_step(task_id)
    runner_b.get_task_state(task_id)
    last = runner_a.run_step(task_id)

    runner_b.undo_step(task_id)

    state = runner_a.get_task_state(task_id)
    assert state.steps[last.task_step.step_id].status is StepStatus.UNDONE
    assert len(state.completed) == 1
    assert len(state.task.memory) == 3


@pytest.mark.parametrize("claim_stored", ["before", "after"])
def test_step_whose_task_moved_on_meanwhile_fails_without_losing_either_write(
    store: Store, claim_stored: str
) -> None:
    """Another runner commits while the step runs, before or after the step's claim is stored.

    "after": the claim's write is refused; the step's own commit must be refused too, not
    slip through on the version the refused claim counted.
    """
    holder: dict[str, Any] = {}
    claim_due = CLAIM_PERSIST_DELAY_S * 3

    async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        holder.setdefault("requests", []).append(contents(messages[1:]))
        if len(holder["requests"]) == 1:  # another runner commits while this step runs
            if claim_stored == "before":
                await asyncio.sleep(claim_due)
            holder["other"].add_feedback(holder["task_id"], "Use the add tool.")
            await asyncio.sleep(claim_due)
        return CALL_ADD

    runner_a = AgentRunner(make_worker(FunctionLLM(reply)), store=store)
    holder["other"] = AgentRunner(make_worker(ScriptedLLM([])), store=store)
    task_id = holder["task_id"] = runner_a.create_task(QUESTION).task_id
    [step_id] = runner_a.get_task_state(task_id).queue

    with pytest.raises(ConflictError, match="another runner") as caught:
        runner_a.run_step(task_id)
    assert isinstance(caught.value, StepError)  # The step is recorded as failed, too.
    assert caught.value.step_id == step_id
    assert isinstance(caught.value.__cause__, ConflictError)

    state = AgentRunner(make_worker(ScriptedLLM([])), store=store).get_task_state(task_id)
    [feedback_id] = state.completed
    assert state.steps[feedback_id].input == "Use the add tool."
    assert state.steps[step_id].status is StepStatus.FAILED
    assert state.queue == [step_id]
    # The refused step left nothing half-written: only the feedback is in memory.
    assert contents(state.task.memory.get_all()) == [("user", "Use the add tool.")]

    output = runner_a.run_step(task_id)
    assert output.task_step.step_id == step_id
    assert output.task_step.attempts == 2
    assert output.task_step.number == 2
    assert holder["requests"][1][0] == ("user", "Use the add tool.")
    state = runner_a.get_task_state(task_id)
    assert state.completed == [feedback_id, step_id]
    assert state.task.status is TaskStatus.ACTIVE


def _stale_change(state: TaskState) -> TaskChange:
    """A change that touches every kind of record, made from an outdated copy of a task."""
    intruder = TaskStep(task_id=state.task_id, input="intruder")
    first = state.steps[state.completed[0]]
    first.input = "rewritten"
    state.steps[intruder.step_id] = intruder
    state.queue.append(intruder.step_id)
    state.task.status = TaskStatus.ABANDONED
    state.task.input = "rewritten"
    base = state.version
    state.version = base + 1
    return TaskChange(
        state=state,
        base_version=base,
        steps=[first, intruder],
        outputs=[state.outputs[first.step_id].model_copy(update={"output": "rewritten"})],
        dropped_snapshots=list(state.snapshots),
        memory=MemoryWrite(keep=0, append=[ChatMessage(role="user", content="rewritten")]),
    )


def test_commit_on_a_stale_version_raises_and_writes_nothing(store: Store) -> None:
    agent, _ = make_runner(store, CALL_ADD, ANSWER)
    task_id = agent.create_task(QUESTION).task_id
    agent.run_step(task_id)
    stale = store.load_task(task_id)
    assert stale is not None
    agent.run_step(task_id)
    before = store.load_task(task_id)
    assert before is not None and before.version > stale.version
    summaries = [s.model_dump() for s in store.list_tasks()]

    with pytest.raises(ConflictError) as caught:
        store.commit(_stale_change(stale))

    message = str(caught.value)
    assert task_id in message
    assert f"version {before.version}" in message
    after = store.load_task(task_id)
    assert after is not None
    assert after.model_dump(mode="json") == before.model_dump(mode="json")
    assert store.task_version(task_id) == before.version
    assert [s.model_dump() for s in store.list_tasks()] == summaries


def test_creating_an_existing_task_or_updating_a_missing_one_conflicts(store: Store) -> None:
    agent, _ = make_runner(store)
    task_id = agent.create_task(QUESTION).task_id
    state = store.load_task(task_id)
    assert state is not None
    with pytest.raises(ConflictError):
        store.commit(TaskChange(state=state, base_version=None))
    assert store.task_version(task_id) == state.version

    ghost = state.model_copy(deep=True)
    ghost.task.task_id = "0" * 32
    with pytest.raises(ConflictError):
        store.commit(TaskChange(state=ghost, base_version=state.version))
    assert store.task_version(ghost.task_id) is None
    assert store.load_task(ghost.task_id) is None
    assert [s.task_id for s in store.list_tasks()] == [task_id]


# ---------------------------------------------------------------------------------- undo


def test_undo_persists_and_a_fresh_runner_reruns_the_step(
    store: Store, reopen: Callable[[], Store]
) -> None:
    agent, _ = make_runner(store, CALL_ADD, ANSWER)
    task_id = agent.create_task(QUESTION).task_id
    first = agent.run_step(task_id)
    undone = agent.run_step(task_id)
    again = agent.undo_step(task_id)
    undone_id = undone.task_step.step_id

    fresh, llm = make_runner(reopen(), "Thought: sure.\nAnswer: three")
    state = fresh.get_task_state(task_id)
    assert state.steps[undone_id].status is StepStatus.UNDONE
    assert state.outputs[undone_id].output == "3"  # the undone output stays in history
    assert state.queue == [again.step_id]
    assert state.steps[again.step_id].status is StepStatus.UPCOMING
    assert state.steps[again.step_id].branch_id != undone.task_step.branch_id
    assert state.completed == [first.task_step.step_id]
    assert undone_id not in state.snapshots
    assert contents(state.task.memory.get_all()) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
    ]
    assert state.task.extra_state == {"iterations": 1}
    assert state.task.usage == first.usage
    [summary] = fresh.list_tasks()
    assert (summary.steps_completed, summary.steps_upcoming) == (1, 1)
    assert summary.usage == first.usage

    output = fresh.run_step(task_id)
    assert output.task_step.step_id == again.step_id
    assert output.task_step.number == 2
    assert output.is_last and output.output == "three"
    assert contents(llm.requests[0][1:]) == [
        ("user", QUESTION),
        ("assistant", CALL_ADD),
        ("user", "Observation: 3"),
    ]
    assert fresh.finalize_response(task_id).response == "three"
    assert (
        AgentRunner(make_worker(ScriptedLLM([])), store=reopen()).get_task(task_id).status
        is TaskStatus.COMPLETED
    )


def test_undone_output_agrees_with_its_step_after_reload(
    store: Store, reopen: Callable[[], Store]
) -> None:
    agent, _ = make_runner(store, CALL_ADD, ANSWER)
    task_id = agent.create_task(QUESTION).task_id
    agent.run_step(task_id)
    undone_id = agent.run_step(task_id).task_step.step_id
    agent.undo_step(task_id)
    live = agent.get_step_output(task_id, undone_id)
    assert live is not None and live.task_step.status is StepStatus.UNDONE

    fresh = AgentRunner(make_worker(ScriptedLLM([])), store=reopen())
    assert fresh.get_step(task_id, undone_id).status is StepStatus.UNDONE
    reloaded = fresh.get_step_output(task_id, undone_id)
    assert reloaded is not None
    assert reloaded.task_step.status is StepStatus.UNDONE


# -------------------------------------------------------------------------------- delete


def test_delete_task_removes_everything(store: Store, reopen: Callable[[], Store]) -> None:
    agent, _ = make_runner(store, CALL_ADD, CALL_ADD)
    task_id = agent.create_task(QUESTION).task_id
    agent.run_step(task_id)
    kept = agent.create_task("keep me").task_id
    agent.run_step(kept)
    stale = AgentRunner(make_worker(ScriptedLLM([])), store=reopen())
    stale.get_task_state(task_id)  # cached before the delete

    agent.delete_task(task_id)

    for runner in (agent, stale):
        assert [s.task_id for s in runner.list_tasks()] == [kept]
        with pytest.raises(TaskNotFoundError) as caught:
            runner.get_task(task_id)
        assert task_id in str(caught.value)
    assert store.load_task(task_id) is None
    assert store.task_version(task_id) is None
    assert store.delete_task(task_id) is False
    with pytest.raises(TaskNotFoundError, match=task_id):
        agent.delete_task(task_id)
    # The other task is untouched.
    other = stale.get_task_state(kept)
    assert len(other.completed) == 1 and len(other.task.memory) == 3

    agent.delete_task(kept)
    assert agent.list_tasks() == [] and stale.list_tasks() == []


def test_delete_task_leaves_no_rows_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    store = SQLiteStore(path)
    agent, _ = make_runner(store, CALL_ADD, ANSWER)
    task_id = agent.create_task(QUESTION).task_id
    agent.run_step(task_id)
    agent.run_step(task_id)
    agent.undo_step(task_id)

    agent.delete_task(task_id)
    store.close()

    db = sqlite3.connect(path)
    try:
        counts = {
            table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("tasks", "steps")
        }
        messages = db.execute(
            "SELECT COUNT(*) FROM messages WHERE owner = ?", (task_id,)
        ).fetchone()[0]
    finally:
        db.close()
    assert counts == {"tasks": 0, "steps": 0}
    assert messages == 0


# -------------------------------------------------------------------------------- SQLite


def test_sqlite_file_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


def test_sqlite_in_a_missing_folder_is_a_store_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "no-such-folder" / "x.db"
    with pytest.raises(StoreError) as caught:
        SQLiteStore(path)
    assert str(path) in str(caught.value)
    assert not path.parent.exists()


def test_a_megabyte_output_round_trips(store: Store, reopen: Callable[[], Store]) -> None:
    # Quotes, backslashes, newlines and non-ASCII, so escaping mistakes show up too.
    chunk = 'line "quoted" \\ back\\slash — ünïcödé 🧮\n'
    big = "x" + (chunk * (1_000_000 // len(chunk) + 1))[: 1_000_000 - 4] + "end"
    reply = f"Thought: big.\nAnswer: {big}"
    agent, _ = make_runner(store, reply)
    task_id = agent.create_task(QUESTION).task_id
    output = agent.run_step(task_id)
    assert output.output == big

    state = AgentRunner(make_worker(ScriptedLLM([])), store=reopen()).get_task_state(task_id)
    [step_id] = state.completed
    assert len(state.outputs[step_id].output) == 1_000_000
    assert state.outputs[step_id].output == big
    assert state.task.memory.get_all()[-1].content == reply


_LAYOUT_0_STEPS = (
    "CREATE TABLE steps (step_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, data TEXT NOT NULL, "
    "output TEXT, snapshot TEXT); CREATE INDEX steps_by_task ON steps (task_id);"
)


def test_a_file_from_the_first_layout_is_migrated_and_keeps_every_step(tmp_path: Path) -> None:
    current = tmp_path / "current.db"
    agent = AgentRunner(make_worker(ScriptedLLM([CALL_ADD, CALL_ADD])), store=SQLiteStore(current))
    task_id = agent.create_task(QUESTION).task_id
    agent.run_step(task_id)
    agent.undo_step(task_id)  # An undone step and its re-queued copy: order matters.
    agent.run_step(task_id)
    expected = agent.get_task_state(task_id)

    old = tmp_path / "layout0.db"
    with sqlite3.connect(old) as db:  # What the first layout wrote, rows in creation order.
        db.execute(f"ATTACH '{current}' AS cur")
        for table in ("tasks", "messages"):
            db.execute(f"CREATE TABLE {table} AS SELECT * FROM cur.{table}")
        db.executescript(_LAYOUT_0_STEPS)
        db.execute(
            "INSERT INTO steps SELECT step_id, task_id, data, output, snapshot FROM cur.steps "
            "ORDER BY rowid"
        )
        db.commit()

    store = SQLiteStore(old)
    loaded = AgentRunner(make_worker(ScriptedLLM(["Answer: 3"])), store=store)
    state = loaded.get_task_state(task_id)
    assert list(state.steps) == list(expected.steps)
    assert state.completed == expected.completed and state.queue == expected.queue
    assert loaded.run_step(task_id).is_last
    assert store._db.execute("PRAGMA user_version").fetchone() == (_LAYOUT_VERSION,)
    names = {n for (n,) in store._db.execute("SELECT name FROM sqlite_master")}
    assert "steps_layout_0" not in names and "steps_by_task" not in names
    SQLiteStore(old)  # Opening it again finds nothing left to migrate.


def test_a_reloaded_task_lists_its_steps_in_the_order_they_ran(
    store: Store, reopen: Callable[[], Store]
) -> None:
    """Issue 32 item 6: after feedback the cards read 8, 7, 5, 6, 4 once the task was reloaded.

    The feedback step is created after the step queued before it, yet runs first.
    """
    runner = AgentRunner(make_worker(ScriptedLLM([CALL_ADD, ANSWER])), store=store)
    task = runner.create_task("What is (121 * 3) + 42?")
    runner.run_step(task.task_id)
    runner.add_feedback(task.task_id, "Check the product first.")
    runner.run_step(task.task_id)
    live = runner.get_task_state(task.task_id)

    for view in views(store, reopen):
        got = view.load_task(task.task_id)
        assert got is not None
        assert [o.task_step.number for o in got.outputs.values()] == [1, 2, 3]
        assert list(got.outputs) == list(live.outputs)
