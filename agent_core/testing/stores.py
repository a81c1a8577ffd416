"""A conformance suite for stores: what every `Store` must do, as pytest tests you can import.

Subclass `StoreConformance` in a test module and give it a `store_harness` fixture that
yields a `StoreHarness` on fresh, empty data (and closes it after)::

    import pytest
    from agent_core.testing.stores import SQLiteHarness, StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store_harness(self, tmp_path):
            harness = SQLiteHarness(tmp_path / "x.db")  # or your own harness
            yield harness
            harness.close()

Every test then runs on your store: round trips, version checks (`ConflictError`,
`task_changed`), concurrent writers (threads on two store objects on one database), claims
(a live run's claim holds; a dead process's claim, or another machine's whose lease has
passed, is taken over and the step runs again once),
undo snapshots, settings, the task ledger and damaged rows. The settings and ledger tests
are skipped for a store that does not keep them (`SettingsStore`, `TaskLedger`); the
damaged-row tests for a harness that cannot damage a record. `SQLiteHarness`,
`InMemoryHarness` and `PostgresHarness` are the built-in stores' harnesses.

Needs pytest (the tests are pytest tests); nothing here is imported by the runtime.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

from agent_core.errors import ConflictError, NothingToRunError, StoreError
from agent_core.llms import ChatMessage, FunctionLLM, ScriptedLLM, ToolSpec
from agent_core.runtime import claims
from agent_core.runtime.claims import claim_owner, claim_stamp
from agent_core.runtime.runner import AgentRunner
from agent_core.store.base import MemoryWrite, SettingsStore, Store, TaskChange, store_now
from agent_core.store.ledger import TaskLedger
from agent_core.store.memory import InMemoryStore
from agent_core.store.sqlite import SQLiteStore
from agent_core.tools import FunctionTool
from agent_core.types import StepStatus, TaskState, TaskStatus, TaskStep, utcnow
from agent_core.workers import ReActAgentWorker

__all__ = [
    "DAMAGES",
    "InMemoryHarness",
    "PostgresHarness",
    "SQLiteHarness",
    "StoreConformance",
    "StoreHarness",
]

QUESTION = "What is 1 + 2?"
CALL_ADD = 'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 2}'
ANSWER = "Thought: done.\nAnswer: 3"
SPEC = {"provider": "openai", "model": "qwen2.5", "base_url": "http://gpu-box:8000/v1"}
_WAIT = 30.0
"""Seconds a test waits for another thread before it fails (never a timing assertion)."""

# What a damaged record looks like, by part: (table, column, value, key column). Each is
# something a disk, an old version or a person with a SQL shell could leave behind.
DAMAGES: dict[str, tuple[str, str, str, str]] = {
    "step": ("steps", "data", "{not json", "task_id"),
    "output": ("steps", "output", "[]", "task_id"),
    "snapshot": ("steps", "snapshot", "null", "task_id"),
    "message": ("messages", "data", '{"role": 7}', "owner"),
    "status": ("tasks", "status", "exploded", "task_id"),
    "usage": ("tasks", "usage", "nope", "task_id"),
}
"""Parts whose damage must make `load_task` a `StoreError` naming the task ("step", "output",
"snapshot", "message") or `list_tasks` list the task as damaged ("status", "usage")."""

_LOAD_DAMAGES = ("step", "output", "snapshot", "message")
_LIST_DAMAGES = ("status", "usage")


class StoreHarness(Protocol):
    """A store's data for one test, and the ways the suite reaches it."""

    def open(self) -> Store:
        """A store on the harness's data, which the harness closes.

        A new connection each call where the store has them; the same object where it has
        not (`InMemoryStore`).
        """
        ...

    def damage(self, task_id: str, part: str) -> None:
        """Spoil the task's stored records of `part` (a key of `DAMAGES`), behind the store.

        Raise `NotImplementedError` when the store's records cannot be damaged.
        """
        ...

    def close(self) -> None:
        """Close every store opened and remove the data."""
        ...


class _Opened:
    def __init__(self) -> None:
        self._stores: list[Store] = []

    def _keep(self, store: Store) -> Store:
        self._stores.append(store)
        return store

    def close(self) -> None:
        """Close every store opened and remove the data."""
        for store in self._stores:
            store.close()
        self._stores.clear()


class SQLiteHarness(_Opened):
    """`SQLiteStore`s on one file."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)

    def open(self) -> Store:
        """A store on this harness's data."""
        return self._keep(SQLiteStore(self.path))

    def damage(self, task_id: str, part: str) -> None:
        """Write `DAMAGES[part]` over the task's records."""
        import sqlite3

        table, column, value, key = DAMAGES[part]
        with sqlite3.connect(self.path) as db:
            db.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (value, task_id))
        db.close()


class InMemoryHarness(_Opened):
    """One `InMemoryStore`: every `open` is that object (it has no second view)."""

    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()

    def open(self) -> Store:
        """A store on this harness's data."""
        return self.store

    def damage(self, task_id: str, part: str) -> None:
        """Write `DAMAGES[part]` over the task's records."""
        raise NotImplementedError("an InMemoryStore holds only records it wrote itself")

    def close(self) -> None:
        """Close every store opened and remove the data."""
        self.store.close()


class PostgresHarness(_Opened):
    """`PostgresStore`s on one database and schema; `close` drops the schema."""

    def __init__(self, url: str, schema: str) -> None:
        super().__init__()
        self.url, self.schema = url, schema

    def open(self) -> Store:
        """A store on this harness's data."""
        from agent_core.store.postgres import PostgresStore

        return self._keep(PostgresStore(self.url, schema=self.schema))

    def _execute(self, statement: Any, params: tuple[Any, ...] = ()) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(statement, params)

    def damage(self, task_id: str, part: str) -> None:
        """Write `DAMAGES[part]` over the task's records."""
        from psycopg import sql

        table, column, value, key = DAMAGES[part]
        statement = sql.SQL("UPDATE {}.{} SET {} = %s WHERE {} = %s").format(
            *map(sql.Identifier, (self.schema, table, column, key))
        )
        self._execute(statement, (value, task_id))

    def close(self) -> None:
        """Close every store opened and remove the data."""
        from psycopg import sql

        super().close()
        self._execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema))
        )


# ------------------------------------------------------------------------------ helpers


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _runner(store: Store, llm: ScriptedLLM | FunctionLLM | None = None) -> AgentRunner:
    worker = ReActAgentWorker.from_tools(
        [FunctionTool.from_defaults(fn=add)], llm=llm or ScriptedLLM([])
    )
    return AgentRunner(worker, store=store)


def _contents(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in messages]


def _same_task(got: TaskState, live: TaskState) -> None:
    """`got` (loaded through another store) holds exactly what the live runner holds."""
    assert got is not live
    assert (got.version, got.queue, got.completed) == (live.version, live.queue, live.completed)
    assert list(got.steps) == list(live.steps)  # Creation order survives.
    assert {k: s.model_dump(mode="json") for k, s in got.steps.items()} == {
        k: s.model_dump(mode="json") for k, s in live.steps.items()
    }
    assert got.task.model_dump(mode="json") == live.task.model_dump(mode="json")
    assert set(got.outputs) == set(live.outputs)
    for step_id, output in live.outputs.items():
        other = got.outputs[step_id]
        assert (other.output, other.is_last, other.thought, other.usage) == (
            output.output,
            output.is_last,
            output.thought,
            output.usage,
        )
        assert [c.model_dump() for c in other.tool_calls] == [
            c.model_dump() for c in output.tool_calls
        ]
    assert {k: s.model_dump() for k, s in got.snapshots.items()} == {
        k: s.model_dump() for k, s in live.snapshots.items()
    }


def _in_threads(count: int, work: Callable[[int], None]) -> None:
    """Run `work(0..count-1)` in threads started together; re-raise the first failure."""
    start = threading.Barrier(count)
    failures: list[BaseException] = []

    def each(index: int) -> None:
        try:
            start.wait(timeout=_WAIT)
            work(index)
        except BaseException as exc:  # Reported below, in the test's thread.
            failures.append(exc)

    threads = [threading.Thread(target=each, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=_WAIT * 2)
    assert not any(t.is_alive() for t in threads), "a writer thread did not finish"
    if failures:
        raise failures[0]


def _dead_pid() -> int:
    """The id of a process of this machine that has exited (a crashed run's)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + _WAIT
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {_WAIT:g} s")
        time.sleep(0.01)


# -------------------------------------------------------------------------------- suite


class StoreConformance:
    """The tests every store must pass; subclass it with a `store_harness` fixture."""

    @pytest.fixture
    def store(self, store_harness: StoreHarness) -> Store:
        """The store a test writes through."""
        return store_harness.open()

    @pytest.fixture
    def other(self, store_harness: StoreHarness) -> Store:
        """A second store on the same data (another connection, where there are such)."""
        return store_harness.open()

    # -- round trips

    def test_another_store_sees_the_task_exactly(self, store: Store, other: Store) -> None:
        """Another store sees the task exactly."""
        agent = _runner(store, ScriptedLLM([CALL_ADD, ANSWER]))
        task_id = agent.create_task(QUESTION).task_id
        agent.run_step(task_id)
        _same_task(_runner(other).get_task_state(task_id), agent.get_task_state(task_id))
        [summary] = other.list_tasks()
        assert (summary.steps_completed, summary.steps_upcoming) == (1, 1)

        assert agent.run_step(task_id).is_last
        live = agent.get_task_state(task_id)
        got = _runner(other).get_task_state(task_id)
        _same_task(got, live)
        assert [got.steps[s].number for s in got.completed] == [1, 2]
        assert _contents(got.task.memory.get_all()) == [
            ("user", QUESTION),
            ("assistant", CALL_ADD),
            ("user", "Observation: 3"),
            ("assistant", ANSWER),
        ]
        [summary] = other.list_tasks()
        assert (summary.task_id, summary.input, summary.status) == (
            task_id,
            QUESTION,
            TaskStatus.ACTIVE,
        )
        assert summary.usage == live.task.usage and summary.usage.prompt_tokens > 0
        assert summary.thread_id == live.task.thread_id
        assert _runner(other).finalize_response(task_id).response == "3"
        assert agent.get_task(task_id).status is TaskStatus.COMPLETED

    def test_worker_state_token_limit_and_odd_text_round_trip(
        self, store: Store, other: Store
    ) -> None:
        """Worker state, the token limit and odd text (NUL, quotes, emoji) round-trip."""
        from agent_core.memory import ChatMemoryBuffer

        text = 'nul \x00 "quoted" \\ back — ünïcödé 🧮\n' * 3
        agent = AgentRunner(
            ReActAgentWorker([], ScriptedLLM([f"Thought: ok.\nAnswer: {text}"])),
            store=store,
            memory=ChatMemoryBuffer(token_limit=5000),
        )
        state = {"plan": ["add", text], "nested": {"ok": True, "n": None}, "ratio": 0.5}
        task_id = agent.create_task(text, extra_state=state).task_id
        agent.run_step(task_id)
        got = _runner(other).get_task(task_id)
        assert got.memory.token_limit == 5000
        assert got.extra_state == {**state, "iterations": 1}
        assert got.input == text and other.list_tasks()[0].input == text
        assert text.strip() in got.memory.get_all()[-1].content

    def test_a_megabyte_output_round_trips(self, store: Store, other: Store) -> None:
        """A megabyte output round trips."""
        chunk = 'line "quoted" \\ back\\slash — ünïcödé 🧮\n'
        big = "x" + (chunk * (1_000_000 // len(chunk) + 1))[: 1_000_000 - 4] + "end"
        agent = _runner(store, ScriptedLLM([f"Thought: big.\nAnswer: {big}"]))
        task_id = agent.create_task(QUESTION).task_id
        assert agent.run_step(task_id).output == big
        state = _runner(other).get_task_state(task_id)
        assert state.outputs[state.completed[0]].output == big

    def test_the_messages_a_step_sent_are_kept_apart(self, store: Store, other: Store) -> None:
        """The messages a step sent are kept apart."""
        agent = _runner(store, ScriptedLLM([CALL_ADD]))
        task_id = agent.create_task(QUESTION).task_id
        step_id = agent.run_step(task_id).task_step.step_id
        loaded = other.load_task(task_id)
        assert loaded is not None and loaded.outputs[step_id].messages_sent == []
        sent = other.load_messages_sent(task_id, step_id)
        assert ("user", QUESTION) in _contents(sent)
        assert other.load_messages_sent(task_id, "no-such-step") == []

    def test_every_prompt_reads_back_exactly_across_undo_and_writers(
        self, store: Store, other: Store
    ) -> None:
        """Every step's prompt reads back as sent: repeated texts, undo, and a second writer.

        Prompts are stored as runs into the task's log of messages; each store object keeps a
        copy of the log, which must follow what the other wrote.
        """
        llm = ScriptedLLM([CALL_ADD] * 9)
        first, second = _runner(store, llm), _runner(other, llm)
        task_id = first.create_task(QUESTION).task_id
        ran = [first.run_step(task_id).task_step.step_id for _ in range(3)]
        first.undo_step(task_id, steps=2)
        ran += [first.run_step(task_id).task_step.step_id for _ in range(2)]
        ran += [second.run_step(task_id).task_step.step_id for _ in range(2)]
        ran += [first.run_step(task_id).task_step.step_id]  # It reloads, then writes on.
        assert len(llm.requests) == len(ran)
        for each in (store, other):
            assert [each.load_messages_sent(task_id, s) for s in ran] == llm.requests

    def test_a_forks_steps_read_back_the_prompts_the_original_sent(
        self, store: Store, other: Store
    ) -> None:
        """A fork's kept steps show what the model saw; its own next step's prompt too.

        The fork's prompt rows are the original's, naming a copy of its log's prefix, which the
        fork's next prompt then runs into.
        """
        llm = ScriptedLLM([CALL_ADD] * 6)
        agent = _runner(store, llm)
        task_id = agent.create_task(QUESTION).task_id
        for _ in range(4):
            agent.run_step(task_id)
        original = agent.get_task_state(task_id)
        fork = agent.fork_task(task_id, original.completed[1])
        agent.run_step(fork.task_id)
        kept = agent.get_task_state(fork.task_id).completed
        assert len(kept) == 3
        for each in (store, other):
            got = [each.load_messages_sent(fork.task_id, s) for s in kept]
            assert got == [*llm.requests[:2], llm.requests[-1]]
            assert [each.load_messages_sent(task_id, s) for s in original.completed] == (
                llm.requests[:4]
            )

    def test_list_tasks_is_newest_first_with_counts_and_status(
        self, store: Store, other: Store
    ) -> None:
        """List tasks is newest first with counts and status."""
        agent = _runner(store, ScriptedLLM([CALL_ADD, ANSWER]))
        done = agent.create_task(QUESTION).task_id
        agent.run_step(done)
        agent.run_step(done)
        agent.finalize_response(done)
        dropped = agent.create_task("abandon me").task_id
        agent.abandon_task(dropped)
        fresh = agent.create_task("not started").task_id

        summaries = other.list_tasks()
        assert [s.task_id for s in summaries] == [fresh, dropped, done]
        assert [(s.status, s.steps_completed, s.steps_upcoming) for s in summaries] == [
            (TaskStatus.ACTIVE, 0, 1),
            (TaskStatus.ABANDONED, 0, 1),
            (TaskStatus.COMPLETED, 2, 0),
        ]

    def test_the_conversation_is_shared_and_rewritten(self, store: Store, other: Store) -> None:
        """The conversation is shared and rewritten."""
        _runner(store, ScriptedLLM([CALL_ADD, ANSWER])).chat(QUESTION)
        later = _runner(other)
        assert _contents(later.memory.get_all()) == [("user", QUESTION), ("assistant", "3")]
        other.write_conversation("c", MemoryWrite(keep=0, append=[_msg("a"), _msg("b")]))
        store.write_conversation("c", MemoryWrite(keep=1, append=[_msg("c")]))
        assert _contents(other.load_conversation("c")) == [("user", "a"), ("user", "c")]
        assert other.load_conversation("nobody") == []

    def test_delete_task_removes_everything_and_leaves_the_rest(
        self, store: Store, other: Store
    ) -> None:
        """Delete task removes everything and leaves the rest."""
        agent = _runner(store, ScriptedLLM([CALL_ADD, CALL_ADD]))
        task_id = agent.create_task(QUESTION).task_id
        step_id = agent.run_step(task_id).task_step.step_id
        kept = agent.create_task("keep me").task_id
        agent.run_step(kept)

        assert other.delete_task(task_id) is True
        for each in (store, other):
            assert each.load_task(task_id) is None and each.task_version(task_id) is None
            assert each.load_messages_sent(task_id, step_id) == []
            assert [s.task_id for s in each.list_tasks()] == [kept]
        assert store.delete_task(task_id) is False
        state = other.load_task(kept)
        assert state is not None and len(state.completed) == 1 and len(state.task.memory) == 3

    # -- version checks

    def test_a_stale_commit_is_task_changed_and_writes_nothing(
        self, store: Store, other: Store
    ) -> None:
        """A stale commit is task changed and writes nothing."""
        agent = _runner(store, ScriptedLLM([CALL_ADD, ANSWER]))
        task_id = agent.create_task(QUESTION).task_id
        agent.run_step(task_id)
        stale = other.load_task(task_id)
        assert stale is not None
        agent.run_step(task_id)
        before = store.load_task(task_id)
        assert before is not None and before.version > stale.version
        summaries = [s.model_dump() for s in store.list_tasks()]
        stale_version = stale.version

        with pytest.raises(ConflictError) as caught:
            other.commit(_stale_change(stale))

        assert caught.value.code == "task_changed"
        assert caught.value.params["version"] == before.version
        assert caught.value.params["expected"] == stale_version
        assert task_id in str(caught.value)
        after = store.load_task(task_id)
        assert after is not None
        assert after.model_dump(mode="json") == before.model_dump(mode="json")
        assert [s.model_dump() for s in other.list_tasks()] == summaries

    def test_a_commit_listener_hears_each_durable_commit_until_removed(
        self, store: Store, other: Store
    ) -> None:
        """A commit listener hears each durable commit of its store, never a refused one."""
        heard: list[tuple[str, int]] = []
        remove = store.add_commit_listener(
            lambda state: heard.append((state.task_id, state.version))
        )
        agent = _runner(store, ScriptedLLM([CALL_ADD, ANSWER]))
        task_id = agent.create_task(QUESTION).task_id
        agent.run_step(task_id)
        version = store.task_version(task_id)
        assert heard and heard[-1] == (task_id, version)
        assert [v for _, v in heard] == sorted(v for _, v in heard)
        stale = other.load_task(task_id)
        assert stale is not None
        agent.run_step(task_id)
        told = len(heard)
        with pytest.raises(ConflictError):
            store.commit(_stale_change(stale))
        assert len(heard) == told, "a refused commit was told"
        remove()
        agent.finalize_response(task_id)
        assert len(heard) == told, "a removed listener still hears"

    def test_creating_an_existing_task_or_updating_a_missing_one_conflicts(
        self, store: Store
    ) -> None:
        """Creating an existing task or updating a missing one conflicts."""
        task_id = _runner(store).create_task(QUESTION).task_id
        state = store.load_task(task_id)
        assert state is not None
        with pytest.raises(ConflictError) as created:
            store.commit(TaskChange(state=state, base_version=None))
        assert created.value.code == "task_changed"
        assert store.task_version(task_id) == state.version

        ghost = state.model_copy(deep=True)
        ghost.task.task_id = "0" * 32
        with pytest.raises(ConflictError) as updated:
            store.commit(TaskChange(state=ghost, base_version=state.version))
        assert updated.value.params["version"] is None
        assert updated.value.params["expected"] == state.version
        assert store.load_task(ghost.task_id) is None
        assert [s.task_id for s in store.list_tasks()] == [task_id]

    def test_of_two_commits_from_one_version_exactly_one_lands(
        self, store: Store, other: Store
    ) -> None:
        """Of two commits from one version exactly one lands."""
        task_id = _runner(store).create_task(QUESTION).task_id
        stores = [store, other]
        for round_ in range(10):
            copies = [each.load_task(task_id) for each in stores]
            outcome: list[str] = []

            def write(
                index: int,
                copies: list[Any] = copies,
                outcome: list[str] = outcome,
                n: int = round_,
            ) -> None:
                state = copies[index]
                base = state.version
                state.version = base + 1
                step = TaskStep(task_id=task_id, input=f"round {n} writer {index}")
                state.steps[step.step_id] = step
                state.queue.append(step.step_id)
                try:
                    stores[index].commit(TaskChange(state=state, base_version=base, steps=[step]))
                    outcome.append(f"wrote {index}")
                except ConflictError as exc:
                    assert exc.code == "task_changed"
                    outcome.append("refused")

            _in_threads(2, write)
            assert sorted(outcome)[0] == "refused" and len(outcome) == 2, outcome
            winner = int(next(o for o in outcome if o.startswith("wrote"))[-1])
            loaded, won = other.load_task(task_id), copies[winner]
            assert loaded is not None and won is not None and loaded.version == won.version
            assert loaded.queue == won.queue  # Nothing of the loser's.

    def test_a_stale_runner_reloads_and_runs_the_next_step(
        self, store: Store, other: Store
    ) -> None:
        """A stale runner reloads and runs the next step."""
        llm = ScriptedLLM([CALL_ADD, ANSWER])
        runner_a, runner_b = _runner(store, llm), _runner(other, llm)
        task_id = runner_a.create_task(QUESTION).task_id
        [first_id] = runner_b.get_task_state(task_id).queue
        runner_a.run_step(task_id)
        output = runner_b.run_step(task_id)  # B's copy still says the first step is upcoming.
        assert output.task_step.number == 2 and output.is_last
        assert llm.exhausted  # The first step did not run twice.
        state = runner_a.get_task_state(task_id)
        assert state.completed == [first_id, output.task_step.step_id]

    # -- concurrent writers

    def test_concurrent_writers_on_two_stores_lose_nothing(
        self, store: Store, other: Store
    ) -> None:
        """Concurrent writers on two stores lose nothing."""
        shared = _runner(store).create_task("shared").task_id
        stores, created, noted = [store, other], [[] for _ in range(6)], [0] * 6

        def work(index: int) -> None:
            each = stores[index % 2]
            agent = _runner(each, ScriptedLLM([CALL_ADD, ANSWER] * 3))
            for _ in range(3):
                task_id = agent.create_task(f"writer {index}").task_id
                created[index].append(task_id)
                agent.run_step(task_id)
                agent.run_step(task_id)
            for n in range(3):  # All writers contend for one task.
                while True:
                    try:
                        _runner(each).add_feedback(shared, f"{index}.{n}")
                        break
                    except ConflictError:
                        continue
                noted[index] += 1

        _in_threads(6, work)

        listed = {s.task_id: s for s in other.list_tasks()}
        assert len(listed) == 6 * 3 + 1
        for index, task_ids in enumerate(created):
            for task_id in task_ids:
                state = store.load_task(task_id)
                assert state is not None and state.task.input == f"writer {index}"
                assert len(state.completed) == 2 and len(state.task.memory) == 4
                assert listed[task_id].steps_completed == 2
        state = other.load_task(shared)
        assert state is not None
        inputs = [str(state.steps[s].input) for s in state.completed]
        assert sorted(inputs) == sorted(f"{i}.{n}" for i in range(6) for n in range(3))
        assert [state.steps[s].number for s in state.completed] == list(range(1, 19))
        assert sum(noted) == 18

    # -- claims

    def test_a_live_claim_keeps_every_other_runner_off_the_step(
        self, store: Store, other: Store
    ) -> None:
        """A live claim keeps every other runner off the step."""
        go, calls = threading.Event(), []

        async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
            calls.append(len(messages))
            if len(calls) == 1:
                while not go.is_set():  # Held until the other runner has been refused.
                    await _sleep(0.01)
                return CALL_ADD
            return ANSWER

        holder = _runner(store, FunctionLLM(reply))
        task_id = holder.create_task(QUESTION).task_id
        [step_id] = holder.get_task_state(task_id).queue
        running = threading.Thread(target=holder.run_step, args=(task_id,), daemon=True)
        running.start()
        try:
            _until(
                lambda: _claimed(other, task_id, step_id),
                "the running step's claim was not stored",
            )
            watcher = _runner(other)
            assert not watcher.is_interrupted(task_id, step_id)
            with pytest.raises(ConflictError, match="already running"):
                watcher.run_step(task_id)
        finally:
            go.set()
            running.join(timeout=_WAIT)
        assert not running.is_alive()
        state = _runner(other).get_task_state(task_id)
        assert state.completed == [step_id] and state.steps[step_id].attempts == 1
        assert _runner(other, FunctionLLM(reply)).run_step(task_id).is_last
        assert len(calls) == 2  # Each step's model call ran once.

    def test_a_dead_processs_claim_expires_and_the_step_runs_again_once(
        self, store: Store, other: Store
    ) -> None:
        """A dead process's claim expires and the step runs again once."""
        task_id = _runner(store).create_task(QUESTION).task_id
        state = store.load_task(task_id)
        assert state is not None
        [step_id] = state.queue
        step = state.steps[step_id]  # What a process killed mid-step left in the store.
        step.status, step.attempts, step.started_at = StepStatus.RUNNING, 1, utcnow()
        step.claimed_by = f"{socket.gethostname()}:{_dead_pid()}:deadbeef"
        base, state.version = state.version, state.version + 1
        store.commit(TaskChange(state=state, base_version=base, steps=[step], task_row=False))

        llm = ScriptedLLM([CALL_ADD, ANSWER])
        agent = _runner(other, llm)
        assert agent.is_interrupted(task_id, step_id)
        rerun = agent.run_step(task_id)
        assert rerun.task_step.step_id == step_id
        assert (rerun.task_step.attempts, rerun.task_step.number) == (2, 1)
        assert agent.run_step(task_id).is_last and llm.exhausted
        state = _runner(store).get_task_state(task_id)
        assert state.completed[0] == step_id and len(state.completed) == 2
        assert state.steps[step_id].status is StepStatus.COMPLETED

    def test_another_machines_lapsed_claim_is_taken_over_exactly_once(
        self, store: Store, other: Store
    ) -> None:
        """Another machine's claim whose lease has passed is taken over, by one runner only."""
        task_id = _runner(store).create_task(QUESTION).task_id
        state = store.load_task(task_id)
        assert state is not None
        [step_id] = state.queue
        step = state.steps[step_id]  # What a machine that died mid-step left in the store.
        step.status, step.attempts, step.started_at = StepStatus.RUNNING, 1, utcnow()
        step.claimed_by = claim_stamp("elsewhere:4242:deadbeef", store_now(store) - 1)
        base, state.version = state.version, state.version + 1
        store.commit(TaskChange(state=state, base_version=base, steps=[step], task_row=False))

        go, calls = threading.Event(), []

        async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
            calls.append(len(messages))
            while not go.is_set():  # Held until the second runner has been refused.
                await _sleep(0.01)
            return CALL_ADD

        taker = _runner(store, FunctionLLM(reply))
        assert taker.is_interrupted(task_id, step_id)
        running = threading.Thread(target=taker.run_step, args=(task_id,), daemon=True)
        running.start()
        try:
            _until(
                lambda: (_owner(other, task_id, step_id) or "elsewhere").startswith(_HOSTNAME),
                "the taker's claim was not stored",
            )
            with pytest.raises(ConflictError, match="already running"):
                _runner(other, FunctionLLM(reply)).run_step(task_id)
        finally:
            go.set()
            running.join(timeout=_WAIT)
        assert not running.is_alive()
        state = _runner(other).get_task_state(task_id)
        assert state.completed == [step_id] and state.steps[step_id].attempts == 2
        assert len(calls) == 1  # Its model call ran once, by the taker.

    def test_runners_racing_on_one_task_run_each_step_once(
        self, store: Store, other: Store
    ) -> None:
        """Runners racing on one task run each step once."""
        steps = 6
        calls: list[str] = []
        replies = [CALL_ADD] * (steps - 1) + [ANSWER]

        async def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
            calls.append("call")
            await _sleep(claims.CLAIM_PERSIST_DELAY_S * 2)  # Long enough for claims to be stored.
            return replies[min(len(calls), steps) - 1]

        task_id = _runner(store).create_task(QUESTION).task_id
        stores = [store, other]

        def work(index: int) -> None:
            agent = _runner(stores[index % 2], FunctionLLM(reply))
            while True:
                state = agent.get_task_state(task_id)
                if len(state.completed) >= steps or not state.queue:
                    return
                try:
                    agent.run_step(task_id)
                except NothingToRunError:  # Another runner ran the last step meanwhile.
                    return
                except ConflictError:
                    time.sleep(0.005)

        _in_threads(4, work)
        state = _runner(other).get_task_state(task_id)
        assert len(state.completed) == steps
        assert [state.steps[s].number for s in state.completed] == list(range(1, steps + 1))
        assert all(state.steps[s].attempts == 1 for s in state.completed)
        assert len(calls) == steps  # No step's model call ran twice.

    # -- undo snapshots

    def test_undo_persists_and_another_store_reruns_the_step(
        self, store: Store, other: Store
    ) -> None:
        """Undo persists and another store reruns the step."""
        agent = _runner(store, ScriptedLLM([CALL_ADD, ANSWER]))
        task_id = agent.create_task(QUESTION).task_id
        first = agent.run_step(task_id)
        undone = agent.run_step(task_id)
        before_undo = other.load_task(task_id)
        assert before_undo is not None and undone.task_step.step_id in before_undo.snapshots
        again = agent.undo_step(task_id)
        undone_id = undone.task_step.step_id

        llm = ScriptedLLM(["Thought: sure.\nAnswer: three"])
        fresh = _runner(other, llm)
        state = fresh.get_task_state(task_id)
        assert state.steps[undone_id].status is StepStatus.UNDONE
        assert state.outputs[undone_id].output == "3"  # The undone output stays in history.
        assert state.outputs[undone_id].task_step.status is StepStatus.UNDONE
        assert undone_id not in state.snapshots
        assert first.task_step.step_id in state.snapshots
        assert state.queue == [again.step_id] and state.completed == [first.task_step.step_id]
        assert _contents(state.task.memory.get_all()) == [
            ("user", QUESTION),
            ("assistant", CALL_ADD),
            ("user", "Observation: 3"),
        ]
        assert state.task.extra_state == {"iterations": 1}
        assert state.task.usage == first.usage
        [summary] = other.list_tasks()
        assert (summary.steps_completed, summary.steps_upcoming) == (1, 1)

        output = fresh.run_step(task_id)
        assert (output.task_step.step_id, output.task_step.number) == (again.step_id, 2)
        assert output.output == "three"
        assert _contents(llm.requests[0][1:]) == [
            ("user", QUESTION),
            ("assistant", CALL_ADD),
            ("user", "Observation: 3"),
        ]

    def test_undo_to_the_start_restores_the_first_snapshot(
        self, store: Store, other: Store
    ) -> None:
        """Undo to the start restores the first snapshot."""
        agent = _runner(store, ScriptedLLM([CALL_ADD, ANSWER]))
        task_id = agent.create_task(QUESTION).task_id
        agent.run_step(task_id)
        agent.run_step(task_id)
        agent.undo_step(task_id)
        agent.undo_step(task_id)
        state = _runner(other).get_task_state(task_id)
        assert state.completed == [] and state.snapshots == {}
        assert state.task.memory.get_all() == [] and state.task.extra_state == {}
        _same_task(state, agent.get_task_state(task_id))

    # -- settings

    @pytest.fixture
    def settings(self, store: Store, other: Store) -> tuple[SettingsStore, SettingsStore]:
        """The two stores as settings stores (skipped for a store that keeps none)."""
        if not (isinstance(store, SettingsStore) and isinstance(other, SettingsStore)):
            pytest.skip(f"{type(store).__name__} keeps no settings (SettingsStore)")
        return store, other

    @pytest.mark.parametrize(
        "value", [SPEC, {"m": [0.2, 0.6]}, ["a", 1, 2.5, True, None], "text \x00", 0, False]
    )
    def test_a_setting_round_trips_as_json(
        self, settings: tuple[SettingsStore, SettingsStore], value: Any
    ) -> None:
        """A setting round-trips as JSON, read through the other store."""
        mine, theirs = settings
        mine.put_setting("name", value)
        assert theirs.get_setting("name") == value

    def test_settings_are_replaced_removed_and_read_as_copies(
        self, settings: tuple[SettingsStore, SettingsStore]
    ) -> None:
        """Settings are replaced removed and read as copies."""
        mine, theirs = settings
        assert theirs.get_setting("spec") is None
        mine.put_setting("spec", SPEC)
        mine.put_setting("prices", {"m": [1.0, 2.0]})
        theirs.put_setting("spec", {"provider": "demo"})
        got = mine.get_setting("spec")
        assert isinstance(got, dict) and got == {"provider": "demo"}
        got["provider"] = "changed"
        assert mine.get_setting("spec") == {"provider": "demo"}
        assert mine.get_setting("prices") == {"m": [1.0, 2.0]}
        theirs.put_setting("spec", None)
        theirs.put_setting("spec", None)  # Removing what is not there is fine.
        assert mine.get_setting("spec") is None

    @pytest.mark.parametrize("value", [{"price": float("nan")}, {1, 2}, object()])
    def test_a_value_that_is_not_plain_json_is_refused_and_nothing_is_saved(
        self, settings: tuple[SettingsStore, SettingsStore], value: Any
    ) -> None:
        """A value that is not plain JSON is refused, and nothing is saved."""
        mine, _ = settings
        mine.put_setting("spec", SPEC)
        with pytest.raises(TypeError, match="must be plain JSON data"):
            mine.put_setting("spec", value)
        assert mine.get_setting("spec") == SPEC

    def test_deleting_a_task_leaves_the_settings(
        self, settings: tuple[SettingsStore, SettingsStore], store: Store
    ) -> None:
        """Deleting a task leaves the settings."""
        task_id = _runner(store).create_task("Say hi.").task_id
        settings[0].put_setting("spec", SPEC)
        assert store.delete_task(task_id)
        assert settings[1].get_setting("spec") == SPEC

    # -- the task ledger

    @pytest.fixture
    def ledger(self, store: Store, other: Store) -> tuple[TaskLedger, TaskLedger]:
        """The two stores as task ledgers (skipped for a store that keeps none)."""
        if not (isinstance(store, TaskLedger) and isinstance(other, TaskLedger)):
            pytest.skip(f"{type(store).__name__} keeps no task ledger (TaskLedger)")
        return store, other

    def test_a_task_is_recorded_under_its_key_then_its_result(
        self, ledger: tuple[TaskLedger, TaskLedger], store: Store
    ) -> None:
        """A task is recorded under its key then its result."""
        mine, theirs = ledger
        before = utcnow()
        task = _runner(store).create_task("hi", ledger_key="svc:m1")
        entry = theirs.ledger_entry("svc:m1")
        assert entry is not None and (entry.task_id, entry.result) == (task.task_id, None)
        assert before <= entry.created_at <= utcnow() and entry.finished_at is None
        assert theirs.ledger_entry("svc:other") is None

        mine.finish_ledger_entry("svc:m1", "done \x00")
        finished = theirs.ledger_entry("svc:m1")
        assert finished is not None and finished.result == "done \x00"
        assert finished.finished_at is not None and finished.finished_at >= entry.created_at

    def test_a_key_already_in_the_ledger_refuses_the_new_task_whole(
        self, ledger: tuple[TaskLedger, TaskLedger], store: Store, other: Store
    ) -> None:
        """A key already in the ledger refuses the new task whole."""
        first = _runner(store).create_task("hi", ledger_key="svc:m1")
        with pytest.raises(ConflictError, match="already names task") as refused:
            _runner(other).create_task("hi again", ledger_key="svc:m1")
        assert refused.value.task_id == first.task_id
        assert [t.task_id for t in other.list_tasks()] == [first.task_id]

    def test_of_two_tasks_racing_for_one_key_exactly_one_is_created(
        self, ledger: tuple[TaskLedger, TaskLedger], store: Store, other: Store
    ) -> None:
        """Of two tasks racing for one key exactly one is created."""
        stores, made = [store, other], []

        def create(index: int) -> None:
            try:
                made.append(_runner(stores[index % 2]).create_task("hop", ledger_key="k").task_id)
            except ConflictError:
                pass

        _in_threads(4, create)
        assert len(made) == 1
        entry = ledger[1].ledger_entry("k")
        assert entry is not None and entry.task_id == made[0]
        assert [t.task_id for t in other.list_tasks()] == made

    def test_trimming_drops_old_finished_entries_then_the_oldest_past_the_bound(
        self, ledger: tuple[TaskLedger, TaskLedger], store: Store
    ) -> None:
        """Trimming drops old finished entries then the oldest past the bound."""
        mine, theirs = ledger
        runner = _runner(store)
        for key in "abcde":
            runner.create_task(key, ledger_key=key)
            time.sleep(0.002)  # Distinct creation times: "b" is older than "c".
        mine.finish_ledger_entry("a", "A")
        time.sleep(0.002)
        cut = utcnow()
        time.sleep(0.002)
        mine.finish_ledger_entry("d", "D")

        assert theirs.trim_ledger(finished_before=cut, keep_at_most=3) == 2
        assert {key for key in "abcde" if mine.ledger_entry(key) is not None} == {"c", "d", "e"}
        assert len(store.list_tasks()) == 5  # Trimming the ledger leaves the tasks.
        assert theirs.trim_ledger(finished_before=cut - timedelta(days=1), keep_at_most=3) == 0

    # -- damaged rows

    @pytest.mark.parametrize("part", _LOAD_DAMAGES)
    def test_a_damaged_task_is_a_store_error_naming_it_the_others_load_and_it_deletes(
        self, store_harness: StoreHarness, store: Store, part: str
    ) -> None:
        """A damaged task is a store error naming it the others load and it deletes."""
        damaged, fine = _one_damaged_one_fine(store_harness, store, part)
        fresh = store_harness.open()
        with pytest.raises(StoreError) as caught:
            fresh.load_task(damaged)
        assert damaged in str(caught.value) and caught.value.task_id == damaged
        assert caught.value.code == "store_error"
        loaded = fresh.load_task(fine)
        assert loaded is not None and loaded.task.input == "fine"
        assert {s.task_id for s in fresh.list_tasks()} == {damaged, fine}
        assert fresh.delete_task(damaged)
        assert [s.task_id for s in fresh.list_tasks()] == [fine]

    @pytest.mark.parametrize("part", _LIST_DAMAGES)
    def test_a_damaged_row_is_listed_as_damaged_and_the_list_stays(
        self, store_harness: StoreHarness, store: Store, part: str
    ) -> None:
        """A damaged row is listed as damaged and the list stays."""
        damaged, fine = _one_damaged_one_fine(store_harness, store, part)
        fresh = store_harness.open()
        listed = {s.task_id: s for s in fresh.list_tasks()}
        assert listed[fine].damaged == "" and listed[damaged].damaged
        assert listed[damaged].status is TaskStatus.FAILED
        assert fresh.delete_task(damaged)
        assert [s.task_id for s in fresh.list_tasks()] == [fine]


def _msg(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def _claimed(store: Store, task_id: str, step_id: str) -> bool:
    state = store.load_task(task_id)
    step = state.steps.get(step_id) if state else None
    return step is not None and step.status is StepStatus.RUNNING and bool(step.claimed_by)


_HOSTNAME = socket.gethostname()


def _owner(store: Store, task_id: str, step_id: str) -> str | None:
    """Who the store says runs the step (None when nobody does)."""
    state = store.load_task(task_id)
    step = state.steps.get(step_id) if state else None
    running = step is not None and step.status is StepStatus.RUNNING
    return claim_owner(step.claimed_by) if running and step else None


def _stale_change(state: TaskState) -> TaskChange:
    """A change that touches every kind of record, made from an outdated copy of a task."""
    intruder = TaskStep(task_id=state.task_id, input="intruder")
    first = state.steps[state.completed[0]]
    first.input = "rewritten"
    state.steps[intruder.step_id] = intruder
    state.queue.append(intruder.step_id)
    state.task.status = TaskStatus.ABANDONED
    base = state.version
    state.version = base + 1
    return TaskChange(
        state=state,
        base_version=base,
        steps=[first, intruder],
        outputs=[state.outputs[first.step_id].model_copy(update={"output": "rewritten"})],
        dropped_snapshots=list(state.snapshots),
        memory=MemoryWrite(keep=0, append=[_msg("rewritten")]),
    )


def _one_damaged_one_fine(harness: StoreHarness, store: Store, part: str) -> tuple[str, str]:
    """Two tasks with a completed step each, the first damaged in `part`."""
    agent = _runner(store, ScriptedLLM([CALL_ADD, CALL_ADD]))
    damaged = agent.create_task("damaged").task_id
    agent.run_step(damaged)
    fine = agent.create_task("fine").task_id
    agent.run_step(fine)
    try:
        harness.damage(damaged, part)
    except NotImplementedError as exc:
        pytest.skip(f"the harness cannot damage a record: {exc}")
    return damaged, fine
