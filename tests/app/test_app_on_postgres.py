"""The app on a team's PostgreSQL (`STEPWISE_DB=postgresql://...`): it shows what runners wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_core import AgentRunner
from agent_core.llms import ScriptedLLM
from agent_core.store import PostgresStore
from agent_core.workers import ReActAgentWorker
from stepwise.app.components.database import shared_store

SEED = "What is 6 * 7? (written by a runner on PostgreSQL)"


def test_the_app_lists_and_opens_a_task_a_runner_made_on_postgres(
    app: AppTest,
    db_path: Path,
    postgres_url: str,
    postgres_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STEPWISE_DB", f"{postgres_url}?schema={postgres_schema}")
    store = PostgresStore(postgres_url, schema=postgres_schema)
    try:
        worker = ReActAgentWorker([], ScriptedLLM(["Thought: done.\nAnswer: 42"]))
        task_id = AgentRunner(worker, store=store).create_task(SEED).task_id
        AgentRunner(worker, store=store).run_step(task_id)

        app.run()
        app.switch_page("app_pages/tasks.py").run()
        assert not app.exception, app.exception
        assert SEED in [t.value for t in app.text]

        app.switch_page("app_pages/stepper.py")
        app.query_params["task"] = task_id
        app.run()
        assert not app.exception, app.exception
        assert any(b.label == "Undo" and not b.disabled for b in app.button)  # Its step is done.
        assert isinstance(shared_store(), PostgresStore)  # The app's own store, not a file.
        assert not db_path.exists()
    finally:
        store.close()
        shared_store().close()


def test_the_database_is_named_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepwise.app.components.database import database_label

    monkeypatch.setenv("STEPWISE_DB", "postgresql://team:s3cret@db.internal/stepwise")
    assert database_label() == "postgresql://team:***@db.internal/stepwise"
