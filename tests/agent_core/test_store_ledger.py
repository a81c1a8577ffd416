"""The task ledger: a task and the request it answers are written together, and kept bounded."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import ConflictError
from agent_core.llms import ScriptedLLM
from agent_core.store import InMemoryStore, SQLiteStore, TaskLedger
from agent_core.store import memory as memory_store
from agent_core.store import sqlite as sqlite_store
from agent_core.workers import ReActAgentWorker

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    """The time the stores stamp ledger entries with; counts its readings."""

    def __init__(self) -> None:
        self.now = T0
        self.readings = 0

    def __call__(self) -> datetime:
        self.readings += 1
        return self.now


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLiteStore | InMemoryStore]:
    opened = SQLiteStore(tmp_path / "x.db") if request.param == "sqlite" else InMemoryStore()
    yield opened
    opened.close()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(sqlite_store, "utcnow", fake)
    monkeypatch.setattr(memory_store, "utcnow", fake)
    yield fake
    assert fake.readings > 0, "the stores no longer read the patched clock"


def _runner(store: SQLiteStore | InMemoryStore) -> AgentRunner:
    return AgentRunner(ReActAgentWorker([], ScriptedLLM([])), store=store)


def test_both_stores_keep_a_task_ledger(store: SQLiteStore | InMemoryStore) -> None:
    assert isinstance(store, TaskLedger)


def test_a_task_is_recorded_under_its_key_and_then_its_result(
    store: SQLiteStore | InMemoryStore, clock: Clock
) -> None:
    task = _runner(store).create_task("hi", ledger_key="svc:m1")
    entry = store.ledger_entry("svc:m1")
    assert entry is not None
    assert (entry.task_id, entry.result, entry.created_at) == (task.task_id, None, T0)
    assert store.ledger_entry("svc:other") is None

    clock.now = T0 + timedelta(seconds=5)
    store.finish_ledger_entry("svc:m1", "done")

    finished = store.ledger_entry("svc:m1")
    assert finished is not None
    assert (finished.result, finished.finished_at) == ("done", T0 + timedelta(seconds=5))


def test_a_key_already_in_the_ledger_refuses_the_new_task_whole(
    store: SQLiteStore | InMemoryStore,
) -> None:
    runner = _runner(store)
    first = runner.create_task("hi", ledger_key="svc:m1")
    with pytest.raises(ConflictError, match="already names task") as refused:
        _runner(store).create_task("hi again", ledger_key="svc:m1")
    assert refused.value.task_id == first.task_id
    assert [t.task_id for t in store.list_tasks()] == [first.task_id]
    entry = store.ledger_entry("svc:m1")
    assert entry is not None and entry.task_id == first.task_id


def test_a_crash_between_the_task_and_its_ledger_entry_leaves_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteStore(tmp_path / "x.db")
    injected: list[str] = []

    def crash(db: sqlite3.Connection, key: str, task_id: str) -> None:
        # The task's rows are written by now, in the open transaction.
        (written,) = db.execute("SELECT count(*) FROM tasks WHERE task_id = ?", (task_id,))
        injected.append(f"{key} after {written[0]} task row")
        raise KeyboardInterrupt  # What a process stopped mid-write raises.

    monkeypatch.setattr(SQLiteStore, "_write_ledger_entry", staticmethod(crash))
    with pytest.raises(KeyboardInterrupt):
        _runner(store).create_task("hi", ledger_key="svc:m1")

    assert injected == ["svc:m1 after 1 task row"]
    store.close()
    reopened = SQLiteStore(tmp_path / "x.db")
    assert reopened.list_tasks() == [] and reopened.ledger_entry("svc:m1") is None


def test_trimming_drops_old_finished_entries_then_the_oldest_past_the_bound(
    store: SQLiteStore | InMemoryStore, clock: Clock
) -> None:
    runner = _runner(store)
    for minute, key in enumerate(["a", "b", "c", "d", "e"]):
        clock.now = T0 + timedelta(minutes=minute)
        runner.create_task(key, ledger_key=key)
    clock.now = T0 + timedelta(minutes=10)
    store.finish_ledger_entry("a", "A")  # Finished long ago (by the trim below).
    clock.now = T0 + timedelta(minutes=30)
    store.finish_ledger_entry("d", "D")  # Finished recently.

    dropped = store.trim_ledger(finished_before=T0 + timedelta(minutes=20), keep_at_most=3)

    assert dropped == 2
    kept = {key for key in "abcde" if store.ledger_entry(key) is not None}
    assert kept == {"c", "d", "e"}  # "a" finished too long ago; "b" was the oldest past 3.
    assert len(store.list_tasks()) == 5  # Trimming the ledger leaves the tasks.
    assert store.trim_ledger(finished_before=T0, keep_at_most=3) == 0


def test_a_file_whose_ledger_was_in_settings_moves_it_into_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "layout3.db"
    store = SQLiteStore(path)
    task_id = _runner(store).create_task("hop").task_id
    store.close()
    with sqlite3.connect(path) as db:  # What layout 3 and the services before it wrote.
        db.execute("DROP TABLE task_ledger")
        db.execute("PRAGMA user_version = 3")
        db.executemany(
            "INSERT INTO settings VALUES (?, ?)",
            [
                ("stepwise.services.hop:svc:m1", f'{{"task_id":"{task_id}"}}'),
                ("stepwise.services.hop:svc:m2", f'{{"task_id":"{task_id}","result":"R"}}'),
                ("stepwise.services.hop:svc:bad", '"not an entry"'),
                ("stepwise.spec", '{"provider":"demo"}'),
            ],
        )

    store = SQLiteStore(path)

    assert store._db.execute("PRAGMA user_version").fetchone() == (sqlite_store._LAYOUT_VERSION,)
    started, finished = store.ledger_entry("svc:m1"), store.ledger_entry("svc:m2")
    assert started is not None and (started.task_id, started.result) == (task_id, None)
    assert finished is not None and (finished.task_id, finished.result) == (task_id, "R")
    assert finished.finished_at is not None and store.ledger_entry("svc:bad") is None
    assert store.get_setting("stepwise.spec") == {"provider": "demo"}  # Settings stay.
    assert store.get_setting("stepwise.services.hop:svc:m1") is None  # The old keys go.
    store.close()
