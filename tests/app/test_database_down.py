"""The app on a PostgreSQL that stops answering: each page says so, and names the fix.

The Tasks page showed a raw traceback, and Stepper and Settings blamed settings "saved by
another version of Stepwise". Now the store raises `StoreUnavailableError`
(`store_unavailable`) and each page words it from that code: where the database is (without
its password), to start it or open another one, and a Try again button.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from agent_core import AgentRunner
from agent_core.errors import StoreUnavailableError
from agent_core.llms import ScriptedLLM
from agent_core.store import PostgresStore
from agent_core.workers import ReActAgentWorker
from stepwise.app.components.database import shared_store
from tests._postgres_server import PostgresServer, _binaries, _free_port, _own_folder, _Shared

from .conftest import new_app

SEED = "What is 6 * 7? (kept on a PostgreSQL that will stop)"
PAGES = ("app_pages/tasks.py", "app_pages/stepper.py", "app_pages/settings.py")


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test's own, to stop (the session's is shared by other tests)."""
    server = PostgresServer(_binaries(), _own_folder(), _free_port())
    try:
        server.init()
        server.start()
        server.create_database()
        yield server
    finally:
        _Shared._remove(server)


@pytest.fixture
def seeded(
    own_server: PostgresServer, app_env: object, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """The app's database (a URL with a password no page may show) and the task in it."""
    url = own_server.url.replace("postgres@", "postgres:s3cret-pw@")
    monkeypatch.setenv("STEPWISE_DB", f"{url}?schema=down")
    store = PostgresStore(url, schema="down")
    try:
        worker = ReActAgentWorker([], ScriptedLLM(["Thought: done.\nAnswer: 42"]))
        task_id = AgentRunner(worker, store=store).create_task(SEED).task_id
    finally:
        store.close()
    return url, task_id


def _shows_the_database_down(app: AppTest, page: str) -> None:
    assert not app.exception, (page, [e.value for e in app.exception])
    errors = " ".join(e.value for e in app.error)
    assert "does not answer" in errors, (page, errors)
    assert f"127.0.0.1:{app_port(errors)}" in errors  # Where it is...
    assert "s3cret-pw" not in _all_text(app)  # ...without its password.
    assert "open another database" in errors and "Try again" in errors
    assert any(b.label == "Try again" for b in app.button)
    assert "another version" not in _all_text(app), page


def app_port(errors: str) -> str:
    return errors.split("127.0.0.1:", 1)[1].split("/", 1)[0]


def _all_text(app: AppTest) -> str:
    parts = [
        e.value
        for kind in ("error", "warning", "info", "caption", "markdown", "text")
        for e in getattr(app, kind)
    ]
    return " ".join(str(p) for p in parts)


def test_the_pages_say_the_database_went_down_and_name_the_fix(
    seeded: tuple[str, str], own_server: PostgresServer
) -> None:
    _, task_id = seeded
    app = new_app()
    app.run()
    app.switch_page("app_pages/tasks.py").run()
    assert not app.exception and SEED in [t.value for t in app.text]  # Up, it lists the task.

    own_server.stop()
    with pytest.raises(StoreUnavailableError):  # The fault is in place.
        shared_store().list_tasks()
    app.switch_page("app_pages/tasks.py").run()
    _shows_the_database_down(app, "tasks")
    app.switch_page("app_pages/stepper.py")
    app.query_params["task"] = task_id
    app.run()
    _shows_the_database_down(app, "stepper, a task open")


def test_the_app_started_while_the_database_is_down_says_so(
    seeded: tuple[str, str], own_server: PostgresServer
) -> None:
    url, _ = seeded
    own_server.stop()
    with pytest.raises(StoreUnavailableError):  # The fault is in place.
        PostgresStore(url, schema="down", timeout=1)
    for page in PAGES:
        app = new_app()
        app.switch_page(page).run()
        _shows_the_database_down(app, page)

    own_server.start()  # Started again, Try again shows the tasks.
    app = new_app()
    app.switch_page("app_pages/tasks.py").run()
    assert not app.exception and SEED in [t.value for t in app.text]
