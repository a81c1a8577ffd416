"""Shared fixtures for the app's AppTest tests.

`app` gives a ready `AppTest` of the whole app (`app.py`, so `st.navigation` and every page
work) on a fresh SQLite file in `tmp_path`:

- `st.cache_resource` and `st.cache_data` are cleared first: they are process-wide, and the
  shared store and runners live there, so without this a test would see the last test's
  database.
- env `STEPWISE_DB` points at `tmp_path / "stepwise.db"` (also returned by the `db_path`
  fixture, so a test can open its own `SQLiteStore` on it and check what the page stored).
- env `STEPWISE_WORKSPACES` and the working folder are `tmp_path`: `AgentSpec.workspace`
  defaults to the relative folder "workspaces", so files written by tools land in
  `tmp_path / "workspaces"` and never in the repository.

The fixture does not run the script: call `app.run()` yourself (after setting session state
if the test needs it). `new_app()` builds another AppTest on the same database, for tests
that simulate a reload or a second browser tab.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
TIMEOUT = 30


def new_app() -> AppTest:
    """A fresh AppTest of the whole app (a new browser session; caches are left alone)."""
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """The SQLite file the app under test uses."""
    return tmp_path / "stepwise.db"


@pytest.fixture
def app_env(tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Clear Streamlit's caches and point the app's database and workspaces at `tmp_path`."""
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("STEPWISE_DB", str(db_path))
    monkeypatch.setenv("STEPWISE_WORKSPACES", str(tmp_path / "workspaces"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def app(app_env: Path) -> AppTest:
    """A ready, not yet run, AppTest of the whole app on a fresh database in `tmp_path`."""
    return new_app()


@pytest.fixture
def make_app(app_env: Path) -> Callable[[], AppTest]:
    """Build more AppTests on the same database (a reload, or another tab)."""
    return new_app
