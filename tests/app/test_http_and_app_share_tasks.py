"""A task created over HTTP shows in the app, and one created in the app shows over HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
from streamlit.testing.v1 import AppTest

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.server import ServerSettings
from tests.stepwise.server.conftest import running_server

SEED = "What is (121 * 3) + 42?"


def test_tasks_are_shared_both_ways_while_both_run(app: AppTest, db_path: Path):
    with running_server(ServerSettings(db=db_path, token=None)) as url:
        app.run()
        over_http = httpx.post(f"{url}/ap/v1/agent/tasks", json={"input": f"{SEED} (HTTP)"})
        task_id = over_http.json()["task_id"]
        httpx.post(f"{url}/ap/v1/agent/tasks/{task_id}/steps", json={}, timeout=30)

        app.switch_page("app_pages/tasks.py").run()
        assert f"{SEED} (HTTP)" in [t.value for t in app.text]

        app.switch_page("app_pages/stepper.py")
        app.query_params["task"] = task_id
        app.run()
        assert not app.exception
        assert any(b.label == "Undo" and not b.disabled for b in app.button)  # A step is done.

        in_app = AgentSpec().build_runner(store=SQLiteStore(db_path)).create_task(f"{SEED} (app)")
        listed = httpx.get(f"{url}/ap/v1/agent/tasks").json()["tasks"]
        assert in_app.task_id in [t["task_id"] for t in listed]
