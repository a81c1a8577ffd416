"""`open_store`: one target string (path or URL) opens the same store in every face."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import ERROR_CODES, UserError
from agent_core.llms import ScriptedLLM
from agent_core.store import PostgresStore, SQLiteStore, open_store
from agent_core.store.open import masked_target
from agent_core.workers import ReActAgentWorker


def test_none_opens_the_environment_store_else_the_default_file(tmp_path: Path) -> None:
    named = tmp_path / "named.db"
    store = open_store(env={"STEPWISE_DB": str(named)}, default=tmp_path / "default.db")
    try:
        assert isinstance(store, SQLiteStore) and Path(store.path) == named
    finally:
        store.close()
    store = open_store(env={"STEPWISE_DB": ""}, default=tmp_path / "default.db")
    try:  # An empty variable is no database.
        assert Path(store.path) == tmp_path / "default.db"
    finally:
        store.close()


def test_a_path_is_sqlite_with_home_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_store("~/tasks.db", env={"STEPWISE_DB": "ignored.db"})
    try:
        assert isinstance(store, SQLiteStore) and Path(store.path) == tmp_path / "tasks.db"
        assert (tmp_path / "tasks.db").is_file()
    finally:
        store.close()


def test_a_postgres_url_opens_postgres_in_the_schema_it_names(
    postgres_url: str, postgres_schema: str
) -> None:
    url = postgres_url.replace("postgresql://", "postgres://")  # Both spellings libpq reads.
    store = open_store(f"{url}?schema={postgres_schema}", max_connections=2)
    try:
        assert isinstance(store, PostgresStore)
        assert store.schema == postgres_schema
        assert "schema" not in store.url  # libpq would refuse the unknown parameter.
        runner = AgentRunner(ReActAgentWorker([], ScriptedLLM(["Answer: 5"])), store=store)
        task = runner.create_task("2 + 3").task_id
        runner.run_step(task)
    finally:
        store.close()
    again = open_store(env={"STEPWISE_DB": f"{postgres_url}?schema={postgres_schema}"})
    try:  # The same tables, found through the environment.
        assert [s.task_id for s in again.list_tasks()] == [task]
    finally:
        again.close()


def test_a_url_without_a_schema_uses_stepwise(postgres_url: str) -> None:
    store = open_store(postgres_url, max_connections=1)
    try:
        assert isinstance(store, PostgresStore) and store.schema == "stepwise"
    finally:
        store.close()


def test_another_scheme_is_refused_saying_which_are_read(tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        open_store("mysql://user:secret@db/tasks")
    assert caught.value.code == "unsupported_store_url" in ERROR_CODES
    assert caught.value.params["scheme"] == "mysql"
    assert "postgresql://" in str(caught.value) and "secret" not in str(caught.value)
    assert not list(tmp_path.iterdir())  # No file of that name was made either.


def test_the_target_is_shown_without_its_password() -> None:
    shown = masked_target("postgresql://team:s3cret@db.internal:5432/stepwise?schema=x")
    assert "s3cret" not in shown and shown.startswith("postgresql://team:***@db.internal")
    assert masked_target("runs/stepwise.db") == "runs/stepwise.db"
