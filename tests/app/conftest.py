"""Shared fixtures for the app's AppTest tests.

`app` gives a ready (not yet run) `AppTest` of the whole app (`app.py`, so `st.navigation`
and every page work) on a fresh SQLite file in `tmp_path`:

- `st.cache_resource` and `st.cache_data` are cleared before and after the test: they are
  process-wide, and the shared store and runners live there, so without this a test would
  see the last test's database.
- env `STEPWISE_DB` points at `tmp_path / "stepwise.db"` (the `db_path` fixture), so a test
  can open its own `SQLiteStore(db_path)` and check what the page stored.
- env `STEPWISE_WORKSPACES` is `tmp_path / "workspaces"` and the working folder is
  `tmp_path`: `AgentSpec.workspace` defaults to the relative folder "workspaces", so files
  written by tools land in `tmp_path / "workspaces"` either way, never in the repository.

Call `app.run()` yourself (after setting `app.session_state` or `app.query_params` if the
test needs them), and switch pages with `app.switch_page("app_pages/tasks.py")`. `make_app()`
(or `new_app()`) builds another AppTest on the same database: a reload, or a second tab;
clear the caches before it to simulate a server restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.types import TaskState

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
TIMEOUT = 30


def stored(db: Path, task: str) -> TaskState:
    """The task as a fresh connection to the app's database sees it."""
    store = SQLiteStore(db)
    try:
        state = store.load_task(task)
    finally:
        store.close()
    assert state is not None, f"task {task} is not in {db}"
    return state


def saved_spec(db_path: Path) -> AgentSpec:
    """The agent spec the Settings page saved in the app's database."""
    from stepwise.app.components import state

    store = SQLiteStore(db_path)
    try:
        return AgentSpec.model_validate(store.get_setting(state.SAVED_SPEC))
    finally:
        store.close()


def only_task_state(db_path: Path) -> TaskState:
    """The one task in the database the app used, with its steps."""
    store = SQLiteStore(db_path)
    try:
        (summary,) = store.list_tasks()
        task_state = store.load_task(summary.task_id)
    finally:
        store.close()
    assert task_state is not None
    return task_state


def new_app() -> AppTest:
    """A fresh AppTest of the whole app (a new browser session; caches are left alone)."""
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """The SQLite file the app under test uses."""
    return tmp_path / "stepwise.db"


def _clear_caches() -> None:
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app_env(tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Clear Streamlit's caches and point the app's database and workspaces at `tmp_path`.

    The caches are cleared again afterwards, so no later test (app or not) inherits this
    test's store or runners.
    """
    _clear_caches()
    monkeypatch.setenv("STEPWISE_DB", str(db_path))
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    _clear_caches()


@pytest.fixture
def app(app_env: Path) -> AppTest:
    """A ready, not yet run, AppTest of the whole app on a fresh database in `tmp_path`."""
    return new_app()


@pytest.fixture
def make_app(app_env: Path) -> Callable[[], AppTest]:
    """Build more AppTests on the same database (a reload, or another tab)."""
    return new_app
