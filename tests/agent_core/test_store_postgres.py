"""What is PostgreSQL's own in `PostgresStore`: its schema, its pool, its errors, its extra.

What every store does (round trips, versions, claims, ...) is the conformance suite's
(`test_store_conformance.py`); these tests run on the same real server.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator

import psycopg
import pytest

from agent_core import AgentRunner
from agent_core.errors import StoreError
from agent_core.extras import MissingExtraError
from agent_core.llms import ScriptedLLM
from agent_core.store import PostgresStore
from agent_core.workers import ReActAgentWorker
from tests._postgres_server import PostgresServer


@pytest.fixture
def store(postgres_url: str, postgres_schema: str) -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url, schema=postgres_schema)
    yield opened
    opened.close()


def _tables(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return {name for (name,) in rows}


def _runner(store: PostgresStore) -> AgentRunner:
    return AgentRunner(ReActAgentWorker([], ScriptedLLM(["Answer: 3"])), store=store)


def test_processes_starting_together_create_the_schema_once(
    postgres_url: str,
    postgres_schema: str,
) -> None:
    """Eight stores opened at once on a new schema: no CREATE races another (advisory lock)."""
    start, opened, failures = threading.Barrier(8), [], []

    def open_one() -> None:
        try:
            start.wait(timeout=30)
            opened.append(PostgresStore(postgres_url, schema=postgres_schema))
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert failures == [] and len(opened) == 8
        task_id = _runner(opened[0]).create_task("hi").task_id
        assert [t.task_id for t in opened[7].list_tasks()] == [task_id]
    finally:
        for each in opened:
            each.close()
    assert {"tasks", "steps", "messages", "prompts", "settings", "task_ledger"} <= _tables(
        postgres_url, postgres_schema
    )


def test_the_tables_live_in_their_schema_and_reopening_keeps_the_data(
    store: PostgresStore,
    postgres_url: str,
    postgres_schema: str,
) -> None:
    task_id = _runner(store).create_task("hi").task_id
    store.put_setting("spec", {"provider": "demo"})
    store.close()
    assert "tasks" not in _tables(postgres_url, "public")  # A team's database stays tidy.

    again = PostgresStore(postgres_url, schema=postgres_schema)
    try:
        assert [t.task_id for t in again.list_tasks()] == [task_id]
        assert again.get_setting("spec") == {"provider": "demo"}
    finally:
        again.close()


def test_a_missing_psycopg_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
    postgres_url: str,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # What an install without it looks like.
    with pytest.raises(ImportError):
        import psycopg as _  # noqa: F401 (the injection took)
    with pytest.raises(MissingExtraError) as caught:
        PostgresStore(postgres_url)
    assert caught.value.extra == "postgres"
    assert 'pip install "stepwise[postgres]"' in str(caught.value.hint)


@pytest.mark.parametrize("schema", ["", "a-b", 'x"; DROP TABLE t; --', "1abc", "x" * 64])
def test_a_schema_name_that_is_not_a_plain_name_is_refused(
    postgres_url: str,
    schema: str,
) -> None:
    with pytest.raises(ValueError, match="plain SQL name"):
        PostgresStore(postgres_url, schema=schema)


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # Nothing listens here once the socket closes.
    url = f"postgresql://stepwise:s3cret@127.0.0.1:{port}/db"
    with pytest.raises(StoreError) as caught:
        PostgresStore(url, timeout=2)
    message = f"{caught.value} {caught.value.hint}"
    assert "s3cret" not in message and "stepwise:***@127.0.0.1" in message
    assert caught.value.code == "store_unavailable"  # Worded from its code, not its text.
    assert "s3cret" not in str(caught.value.params)


def test_the_pool_is_bounded_and_a_wait_past_the_timeout_is_a_store_error(
    postgres_url: str,
    postgres_schema: str,
) -> None:
    store = PostgresStore(postgres_url, schema=postgres_schema, max_connections=1, timeout=0.2)
    try:
        with store._pool.connection():  # The only connection, held.
            with pytest.raises(StoreError, match="no free connection"):
                store.list_tasks()
        assert store.list_tasks() == []  # Given back, it serves again.
    finally:
        store.close()


def test_after_the_server_restarts_the_store_serves_again(
    store: PostgresStore,
    postgres_server: PostgresServer,
) -> None:
    """Pooled connections die with the server; at most one call fails, then new ones serve."""
    task_id = _runner(store).create_task("hi").task_id
    with store._pool.connection(), store._pool.connection(), store._pool.connection():
        pass  # Three connections in the pool, all to the server about to restart.
    postgres_server.stop()
    postgres_server.start()

    failed = 0
    for _ in range(3):
        try:
            assert [t.task_id for t in store.list_tasks()] == [task_id]
        except StoreError:
            failed += 1
    assert failed <= 1
    assert store.load_task(task_id) is not None
