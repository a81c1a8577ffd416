"""`stepwise db copy`: a team's SQLite file into PostgreSQL and back, every task whole."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.demos import SCENARIOS
from agent_core.errors import UserError
from agent_core.llms.base import ChatMessage
from agent_core.store import PostgresStore, SQLiteStore
from agent_core.store.base import MemoryWrite
from stepwise.cli.db import copy_store
from stepwise.cli.main import main

SETTINGS = {"saved_spec": {"provider": "demo", "name": "team"}, "prices": {"m": [1.5, 2.0]}}


def _run(store: SQLiteStore, tmp_path: Path, scenario: str, **create: Any) -> str:
    """A demo scenario's task, stepped for real by the demo worker."""
    spec = SCENARIOS[scenario].spec.model_copy(update={"workspace": str(tmp_path / "ws")})
    runner = spec.build_runner(store=store)
    task_id = runner.create_task(SCENARIOS[scenario].task, **create).task_id
    runner.run_until(task_id)
    return task_id


def _source(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A SQLite file as a team's app leaves it: finished, undone, ledger, settings, damage."""
    path = tmp_path / "team.db"
    store = SQLiteStore(path)
    try:
        tasks = {"finished": _run(store, tmp_path, "arithmetic")}
        undone = _run(store, tmp_path, "parallel")
        spec = SCENARIOS["parallel"].spec.model_copy(update={"workspace": str(tmp_path / "ws")})
        spec.build_runner(store=store).undo_step(undone, steps=2)  # Undone steps, snapshots.
        tasks["undone"] = undone
        tasks["ledger"] = _run(store, tmp_path, "arithmetic", ledger_key="queue:msg-1")
        store.finish_ledger_entry("queue:msg-1", "answer: 405")
        tasks["damaged"] = _run(store, tmp_path, "arithmetic")
        for name, value in SETTINGS.items():
            store.put_setting(name, value)
        hello = [
            ChatMessage(role="user", content="hi"),
            ChatMessage(role="assistant", content="yo"),
        ]
        store.write_conversation("default", MemoryWrite(keep=0, append=hello))
    finally:
        store.close()
    with sqlite3.connect(path) as db:  # A row the store cannot read back.
        db.execute("UPDATE tasks SET task = '{not json' WHERE task_id = ?", (tasks["damaged"],))
    return path, tasks


def _whole(store: Any, task_id: str) -> dict[str, Any]:
    """Everything a store gives back of a task: its state, worker state and every prompt."""
    state = store.load_task(task_id)
    assert state is not None, task_id
    return {
        "state": state.model_dump(mode="json"),
        "extra": state.extra_state_json,
        "prompts": {s: store.load_messages_sent(task_id, s) for s in state.steps},
    }


@pytest.fixture
def postgres(postgres_url: str, postgres_schema: str) -> Iterator[str]:
    yield f"{postgres_url}?schema={postgres_schema}"


def test_sqlite_to_postgres_and_back_keeps_every_task_whole(
    tmp_path: Path, postgres: str, postgres_url: str, postgres_schema: str, capsys: Any
) -> None:
    source, tasks = _source(tmp_path)
    back = tmp_path / "back.db"

    assert main(["db", "copy", str(source), postgres]) == 0
    there = capsys.readouterr()
    assert main(["db", "copy", postgres, str(back)]) == 0
    again = capsys.readouterr()

    # Counts printed: 4 tasks in the source, 3 copied, the damaged one skipped and named.
    for out in (there.out, again.out):
        assert "counts match" in out
    rows = {line.split()[0]: line.split()[1:] for line in there.out.splitlines()[2:7]}
    assert rows["tasks"] == ["4", "3", "1", "3"]
    assert rows["ledger"] == ["rows", "1", "1", "0", "1"]
    assert rows["settings"] == ["2", "2", "0", "2"]
    assert tasks["damaged"] in there.out and tasks["damaged"] in there.err

    sqlite_src, pg, sqlite_back = (
        SQLiteStore(source),
        PostgresStore(postgres_url, schema=postgres_schema),
        SQLiteStore(back),
    )
    try:
        for name in ("finished", "undone", "ledger"):
            original = _whole(sqlite_src, tasks[name])
            assert _whole(pg, tasks[name]) == original, name
            assert _whole(sqlite_back, tasks[name]) == original, name
        undone = sqlite_back.load_task(tasks["undone"])
        assert undone is not None and undone.snapshots  # The undo history made the trip.
        assert any(s.status.value == "undone" for s in undone.steps.values())
        assert pg.task_version(tasks["damaged"]) is None
        entry = sqlite_back.ledger_entry("queue:msg-1")
        assert entry is not None and (entry.task_id, entry.result) == (
            tasks["ledger"],
            "answer: 405",
        )
        for name, value in SETTINGS.items():
            assert pg.get_setting(name) == sqlite_back.get_setting(name) == value
        assert [m.content for m in sqlite_back.load_conversation("default")] == ["hi", "yo"]
        listed = [s.task_id for s in sqlite_src.list_tasks() if s.task_id != tasks["damaged"]]
        assert [s.task_id for s in sqlite_back.list_tasks()] == listed  # Same order.
    finally:
        for store in (sqlite_src, pg, sqlite_back):
            store.close()


def test_a_copy_over_existing_tasks_is_refused_whole_unless_replace(tmp_path: Path) -> None:
    source, _ = _source(tmp_path)
    target = tmp_path / "target.db"
    src, dst = SQLiteStore(source), SQLiteStore(target)
    try:
        copy_store(src, dst)
        dst.put_setting("prices", {"m": [9, 9]})  # Someone changed it there since.
        with pytest.raises(UserError) as refused:
            copy_store(src, dst)
        assert "--replace" in str(refused.value) and "3 of its tasks" in str(refused.value)
        assert dst.get_setting("prices") == {"m": [9, 9]}  # Nothing was written.
        counts = copy_store(src, dst, replace=True)
        assert counts.match and counts.tasks.copied == 3 and counts.ledger_rows.found == 1
        assert dst.get_setting("prices") == SETTINGS["prices"]
    finally:
        src.close()
        dst.close()


def test_the_installed_command_copies_and_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    source, _ = _source(tmp_path)
    command = [sys.executable, "-m", "stepwise.cli", "db", "copy"]
    done = subprocess.run(
        [*command, str(source), str(tmp_path / "copy.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "counts match" in done.stdout and "warning: task" in done.stderr
    refused = subprocess.run(
        [*command, str(source), "mysql://u:secret@db/x"], capture_output=True, text=True
    )
    assert refused.returncode == 1 and "postgresql://" in refused.stderr
    assert "secret" not in refused.stderr + refused.stdout
