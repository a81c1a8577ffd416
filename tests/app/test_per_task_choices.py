"""A choice made in the New task form is that task's: only Settings saves the defaults.

Issue 22, item 2: picking Demo (or "You are the model", or "ask before each tool call") for one
task overwrote the saved Settings for every session and lost the saved server address.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from agent_core.spec import AgentSpec
from stepwise.app.components.settings_form import CUSTOM
from tests.app.conftest import only_task_state, saved_spec

SERVER = "http://127.0.0.1:9/v1"


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _save_server_in_settings(app: AppTest) -> None:
    ok(app.run())
    app.switch_page("app_pages/settings.py")
    ok(app.run())
    app.selectbox(key="settings-provider").select(CUSTOM).run()
    app.text_input(key="settings-base-url").input(SERVER)
    app.text_input(key=f"settings-model-{CUSTOM}").input("llama3.2")
    ok(app.button(key="settings-save-model").click().run())


def test_a_demo_task_from_the_form_leaves_the_saved_settings_and_other_sessions_alone(
    app: AppTest, make_app: Callable[[], AppTest], db_path: Path
) -> None:
    _save_server_in_settings(app)
    app.switch_page("app_pages/stepper.py")
    ok(app.run())
    assert app.selectbox(key="form-provider").value == "openai"  # the saved defaults
    assert app.text_input(key="form-base-url-openai").value == SERVER
    app.selectbox(key="form-provider").set_value("demo").run()
    app.checkbox(key="form-approval").check()
    app.text_area(key="form-task").input("What is (121 * 3) + 42?")
    ok(app.button(key="form-create").click().run())
    task = only_task_state(db_path).task
    assert AgentSpec.model_validate(task.spec).provider == "demo"  # the task keeps it

    saved = saved_spec(db_path)
    assert (saved.provider, saved.base_url, saved.tool_approval) == ("openai", SERVER, False)
    app.switch_page("app_pages/settings.py")
    ok(app.run())
    assert app.selectbox(key="settings-provider").value == CUSTOM
    assert app.text_input(key="settings-base-url").value == SERVER

    other = make_app()  # a second browser session
    ok(other.run())
    assert other.selectbox(key="form-provider").value == "openai"
    assert other.text_input(key="form-base-url-openai").value == SERVER
    assert other.checkbox(key="form-approval").value is False


def test_the_form_keeps_its_last_choices_for_this_session_until_settings_saves(
    app: AppTest,
) -> None:
    ok(app.run())
    app.selectbox(key="form-provider").set_value("demo").run()
    app.text_area(key="form-task").input("What is (121 * 3) + 42?")
    ok(app.button(key="form-create").click().run())
    (new_task,) = [b for b in app.button if b.label == "New task"]
    ok(new_task.click().run())
    assert app.selectbox(key="form-provider").value == "demo"  # this session's last task
    _save_server_in_settings(app)
    app.switch_page("app_pages/stepper.py")
    ok(app.run())
    assert app.selectbox(key="form-provider").value == "openai"  # Settings saved new defaults
