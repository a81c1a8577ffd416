"""The Settings page: provider presets, the model, session-only keys and the price table.

Every test drives the whole app through AppTest (fixtures in tests/app/conftest.py: a fresh
database and working folder in `tmp_path`, caches cleared). The model and the prices are saved
in that database and outlive the session; keys never do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from agent_core.errors import StoreError
from agent_core.llms.openai import OPENAI_COMPATIBLE_PRESETS
from agent_core.spec import DEFAULT_MODELS, AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components import state
from stepwise.app.components.messages import unplain
from stepwise.app.components.settings_form import CUSTOM, parse_prices

from .conftest import only_task_state

SECRET = "sk-test-Zq8vW3uYp1Lm"
"""A key that must never leave the session: not on the page, not on disk."""


def _leaks(text: str) -> bool:
    """Whether `text` shows the key, or its prefix or suffix (as "sk-...p1Lm" would)."""
    return any(part in text for part in (SECRET, SECRET[:12], SECRET[-5:]))


def _open_settings(app: AppTest) -> AppTest:
    app.run()
    app.switch_page("app_pages/settings.py")
    return app.run()


def _only_task_spec(db_path: Path) -> dict:
    """The spec recorded by the one task in the database."""
    return only_task_state(db_path).task.spec or {}


def _spec(app: AppTest) -> AgentSpec:
    return app.session_state[state._SPEC]


def _session_key(app: AppTest, provider: str) -> str | None:
    if state._KEYS not in app.session_state:
        return None
    return app.session_state[state._KEYS].get(provider)


def _saved(db_path: Path, name: str) -> Any:
    """The setting `name` as the page saved it in the app's database (None: nothing saved)."""
    store = SQLiteStore(db_path)
    try:
        return store.get_setting(name)
    finally:
        store.close()


def _nothing_saved(app: AppTest, db_path: Path) -> bool:
    return _spec(app) == AgentSpec() and _saved(db_path, state.SAVED_SPEC) is None


def _overrides(app: AppTest) -> dict[str, tuple[float, float]]:
    return app.session_state[state._PRICES] if state._PRICES in app.session_state else {}


def _choose(app: AppTest, choice: str) -> AppTest:
    return app.selectbox(key="settings-provider").select(choice).run()


def _save_model(app: AppTest) -> AppTest:
    return app.button(key="settings-save-model").click().run()


def _type_key(app: AppTest, provider: str, key: str) -> AppTest:
    app.text_input(key=f"settings-key-{provider}").input(key)
    return app.button(key=f"settings-use-key-{provider}").click().run()


def _rendered(app: AppTest) -> str:
    """Every element's proto as text: labels, values, bodies, captions, notices, code."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(app.main)
    walk(app.sidebar)
    return "\n".join(parts)


def _texts(app: AppTest) -> str:
    """The page's text as a reader sees it (app messages are escaped markdown: unescaped)."""
    kinds = ("markdown", "caption", "code", "text", "success", "info", "warning", "error")
    return "\n".join(
        unplain(str(getattr(node, "value", ""))) for kind in kinds for node in app.get(kind)
    )


def _toasts(app: AppTest) -> list[str]:
    """The toasts the last run showed (an action that worked says so in one)."""
    return [toast.value for toast in app.toast]


def _files_containing(root: Path, needle: str) -> list[Path]:
    return [
        path for path in root.rglob("*") if path.is_file() and needle.encode() in path.read_bytes()
    ]


def _create_task_on_stepper(app: AppTest, text: str) -> None:
    app.switch_page("app_pages/stepper.py").run()
    app.text_area(key="form-task").input(text).run()
    app.button(key="form-create").click().run()
    assert not app.exception


# --- provider and model ---------------------------------------------------------------------


@pytest.mark.parametrize("preset", list(OPENAI_COMPATIBLE_PRESETS))
def test_a_local_preset_saves_an_openai_spec_at_its_base_url(app: AppTest, preset: str) -> None:
    _choose(_open_settings(app), preset)
    app.text_input(key=f"settings-model-{preset}").input("llama3.2")
    _save_model(app)

    spec = _spec(app)
    assert (spec.provider, spec.base_url, spec.model) == (
        "openai",
        OPENAI_COMPATIBLE_PRESETS[preset],
        "llama3.2",
    )
    assert "Saved: new tasks use this model." in _toasts(app)
    assert app.selectbox(key="settings-provider").value == preset


def test_a_local_server_needs_a_model_name(app: AppTest, db_path: Path) -> None:
    _choose(_open_settings(app), "ollama")
    assert app.text_input(key="settings-model-ollama").value == ""
    _save_model(app)

    assert "Type the model name your server serves" in app.error[0].value
    assert _nothing_saved(app, db_path)


@pytest.mark.parametrize(
    "url", ["localhost:8000/v1", "ftp://box/v1", "http://", "http://[::1", "  "]
)
def test_a_custom_base_url_must_be_http_or_https(app: AppTest, db_path: Path, url: str) -> None:
    _choose(_open_settings(app), CUSTOM)
    app.text_input(key="settings-base-url").input(url)
    app.text_input(key=f"settings-model-{CUSTOM}").input("qwen2.5")
    _save_model(app)

    assert "must start with http:// or https://" in app.error[0].value
    assert _nothing_saved(app, db_path)


def test_a_custom_base_url_with_a_password_is_refused(app: AppTest, db_path: Path) -> None:
    _choose(_open_settings(app), CUSTOM)
    app.text_input(key="settings-base-url").input(f"http://me:{SECRET}@gpu-box:8000/v1")
    app.text_input(key=f"settings-model-{CUSTOM}").input("qwen2.5")
    _save_model(app)

    assert "must not hold a user name or password" in app.error[0].value
    assert not _leaks(_rendered(app))
    assert _nothing_saved(app, db_path)


def test_a_valid_custom_base_url_is_saved_and_shown_again(app: AppTest) -> None:
    _choose(_open_settings(app), CUSTOM)
    app.text_input(key="settings-base-url").input(" https://gpu-box.lan:8000/v1 ")
    app.text_input(key=f"settings-model-{CUSTOM}").input("qwen2.5")
    _save_model(app)

    spec = _spec(app)
    assert (spec.provider, spec.base_url, spec.model) == (
        "openai",
        "https://gpu-box.lan:8000/v1",
        "qwen2.5",
    )
    assert "gpu-box.lan:8000" in _texts(app)  # "New tasks use: ..."


@pytest.mark.parametrize("provider", ["demo", "human", "openai", "anthropic"])
def test_the_model_field_starts_at_the_providers_default(app: AppTest, provider: str) -> None:
    _choose(_open_settings(app), provider)
    field = app.text_input(key=f"settings-model-{provider}")
    assert field.value == DEFAULT_MODELS[provider]
    # The demo and you-as-the-model have nothing to rename.
    assert field.disabled == (provider in ("demo", "human"))

    _save_model(app)
    assert _spec(app).provider == provider
    assert _spec(app).model_name == DEFAULT_MODELS[provider]


def test_a_model_typed_for_openai_is_saved(app: AppTest) -> None:
    _choose(_open_settings(app), "openai")
    app.text_input(key="settings-model-openai").input("gpt-4.1-mini")
    _save_model(app)

    assert (_spec(app).provider, _spec(app).model, _spec(app).base_url) == (
        "openai",
        "gpt-4.1-mini",
        None,
    )
    assert "gpt-4.1-mini" in _texts(app)


def test_you_are_the_model_says_react_only_and_picks_react(app: AppTest) -> None:
    app.session_state[state._SPEC] = AgentSpec(worker="function_calling")
    _choose(_open_settings(app), "human")
    assert any("ReAct worker only" in caption.value for caption in app.caption)

    _save_model(app)
    assert (_spec(app).provider, _spec(app).worker) == ("human", "react")


def test_the_spec_saved_here_is_what_the_stepper_creates_tasks_with(
    app: AppTest, db_path: Path
) -> None:
    _choose(_open_settings(app), "vllm")
    app.text_input(key="settings-model-vllm").input("mistral-7b")
    _save_model(app)

    _create_task_on_stepper(app, "add 2 and 3")

    recorded = _only_task_spec(db_path)
    assert (recorded["provider"], recorded["model"], recorded["base_url"]) == (
        "openai",
        "mistral-7b",
        "http://localhost:8000/v1",
    )


# --- keys -----------------------------------------------------------------------------------


def test_a_typed_key_lives_only_in_the_session(app: AppTest, tmp_path: Path, db_path: Path) -> None:
    _type_key(_open_settings(app), "openai", SECRET)

    assert _session_key(app, "openai") == SECRET
    assert app.text_input(key="settings-key-openai").value == ""  # the field is emptied
    assert "A key typed here is set for this session." in [n.value for n in app.success]
    assert not _leaks(_rendered(app))
    assert not _leaks(_texts(app))

    # Use it: a task created on OpenAI with this key stores its spec, never the key.
    _choose(app.switch_page("app_pages/settings.py").run(), "openai")
    _save_model(app)
    _create_task_on_stepper(app, "what is 2 + 3?")
    assert db_path.exists()
    assert not _leaks(_rendered(app))
    assert _files_containing(tmp_path, SECRET) == []


def test_forget_key_removes_it_from_the_session(app: AppTest) -> None:
    _type_key(_open_settings(app), "anthropic", SECRET)
    assert _session_key(app, "anthropic") == SECRET

    app.button(key="settings-forget-anthropic").click().run()

    assert _session_key(app, "anthropic") is None
    assert "Forgot the Anthropic key typed here." in _texts(app)
    assert any("No key yet" in warning.value for warning in app.warning)
    assert app.button(key="settings-forget-anthropic").disabled


def test_an_empty_key_is_not_taken(app: AppTest) -> None:
    _type_key(_open_settings(app), "openai", "   ")

    assert _session_key(app, "openai") is None
    assert "Paste a key into the field first" in _texts(app)


def test_a_key_in_the_environment_is_detected_but_never_shown(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    _open_settings(app)

    assert any("OPENAI_API_KEY" in info.value for info in app.info)
    assert any("No key yet" in warning.value for warning in app.warning)  # Anthropic has none
    assert not _leaks(_rendered(app))
    assert _session_key(app, "openai") is None  # the SDK reads the environment itself
    assert app.button(key="settings-forget-openai").disabled


def test_a_key_in_streamlit_secrets_is_used_for_the_session_but_never_shown(
    app: AppTest,
) -> None:
    app.secrets["ANTHROPIC_API_KEY"] = SECRET
    _open_settings(app)

    assert _session_key(app, "anthropic") == SECRET  # where runtime.runner_for looks
    assert any("Streamlit secrets" in info.value for info in app.info)
    assert not _leaks(_rendered(app))
    assert app.button(key="settings-forget-anthropic").disabled


def test_a_typed_key_wins_over_the_environment(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    _type_key(_open_settings(app), "openai", SECRET)

    assert _session_key(app, "openai") == SECRET
    assert "A key typed here is set for this session." in [n.value for n in app.success]


def test_each_key_field_says_where_the_key_goes_and_that_it_stays_in_the_session(
    app: AppTest,
) -> None:
    captions = [caption.value for caption in _open_settings(app).caption]

    assert any(
        "Sent to OpenAI's API only, never to a local or custom server" in c for c in captions
    )
    assert any("Sent to Anthropic's API only" in c for c in captions)
    assert sum("Kept in this browser session only" in c for c in captions) == 2
    assert not [field for field in app.text_input if field.key == "settings-key-server"]


def _server_key_field(app: AppTest) -> Any:
    return app.text_input(key="settings-key-server")


@pytest.mark.parametrize(
    ("choice", "url"),
    [("ollama", OPENAI_COMPATIBLE_PRESETS["ollama"]), (CUSTOM, "http://gpu-box.lan:8000/v1")],
)
def test_a_local_server_gets_a_key_field_of_its_own(app: AppTest, choice: str, url: str) -> None:
    _choose(_open_settings(app), choice)
    if choice == CUSTOM:
        app.text_input(key="settings-base-url").input(url)
    app.text_input(key=f"settings-model-{choice}").input("llama3.2")
    _save_model(app)

    assert url in _server_key_field(app).label
    note = "\n".join(caption.value for caption in app.caption)
    assert f"Sent to this server (` {url} `) only" in note
    assert "Kept in this browser session only" in note
    assert any("No key: requests go without one" in info.value for info in app.info)

    app.text_input(key="settings-key-server").input(SECRET)
    app.button(key="settings-use-key-server").click().run()

    assert _session_key(app, f"server:{url}") == SECRET
    assert _session_key(app, "openai") is None  # a server's key is not an OpenAI key
    assert _server_key_field(app).value == ""
    assert "Key for this server set for this session only." in _toasts(app)
    assert not _leaks(_rendered(app))

    app.button(key="settings-forget-server").click().run()
    assert _session_key(app, f"server:{url}") is None
    assert "Forgot the key for this server typed here." in _texts(app)
    assert app.button(key="settings-forget-server").disabled


# --- prices ---------------------------------------------------------------------------------


def _edit_prices(app: AppTest, edits: dict[str, Any]) -> AppTest:
    editor = app.data_editor[0]
    assert editor.key is not None
    app.session_state[editor.key] = {
        "edited_rows": {},
        "added_rows": [],
        "deleted_rows": [],
        **edits,
    }
    return app.button(key="settings-save-prices").click().run()


def _row_of(app: AppTest, model: str) -> tuple[float, float]:
    table = app.data_editor[0].value
    row = table[table["model"] == model].iloc[0]
    return float(row["input $/Mtok"]), float(row["output $/Mtok"])


def test_the_price_table_shows_the_defaults(app: AppTest) -> None:
    _open_settings(app)
    assert _row_of(app, "gpt-4o-mini") == (0.15, 0.60)
    assert _row_of(app, "claude-opus") == (15.0, 75.0)


def test_edited_and_added_prices_are_saved_as_overrides(app: AppTest) -> None:
    _open_settings(app)
    row = list(app.data_editor[0].value["model"]).index("gpt-4o-mini")
    _edit_prices(
        app,
        {
            "edited_rows": {row: {"input $/Mtok": 0.2}},
            "added_rows": [{"model": "llama3.2", "input $/Mtok": 0.0, "output $/Mtok": 0.5}],
        },
    )

    assert _overrides(app) == {"gpt-4o-mini": (0.2, 0.6), "llama3.2": (0.0, 0.5)}
    assert _row_of(app, "gpt-4o-mini") == (0.2, 0.6)  # shown once, not edited twice
    assert _row_of(app, "llama3.2") == (0.0, 0.5)
    assert any("Prices saved" in toast for toast in _toasts(app))

    app.button(key="settings-reset-prices").click().run()
    assert _overrides(app) == {}
    assert _row_of(app, "gpt-4o-mini") == (0.15, 0.60)


@pytest.mark.parametrize(
    ("added", "message"),
    [
        ({"model": "m", "input $/Mtok": 1.0, "output $/Mtok": -1.0}, "cannot be negative"),
        ({"model": "m", "input $/Mtok": "abc", "output $/Mtok": 1.0}, "must be a number"),
        ({"model": "m", "input $/Mtok": 1.0}, "must be a number"),
        ({"input $/Mtok": 1.0, "output $/Mtok": 2.0}, "has no model name"),
        ({"model": "gpt-4o", "input $/Mtok": 1.0, "output $/Mtok": 2.0}, "repeats the model"),
    ],
)
def test_an_invalid_price_is_rejected_and_nothing_is_saved(
    app: AppTest, added: dict[str, Any], message: str
) -> None:
    _open_settings(app)
    row = list(app.data_editor[0].value["model"]).index("gpt-4o-mini")
    # A valid edit beside the bad row: it must not be saved either.
    _edit_prices(app, {"edited_rows": {row: {"input $/Mtok": 0.3}}, "added_rows": [added]})

    assert message in app.error[0].value
    assert _overrides(app) == {}
    assert _row_of(app, "gpt-4o-mini") == (0.15, 0.60)


def test_price_parsing_rejects_text_and_keeps_only_changes() -> None:
    rows = [
        {"model": "gpt-4o-mini", "input $/Mtok": 0.15, "output $/Mtok": 0.6},
        {"model": " local ", "input $/Mtok": "0.1", "output $/Mtok": 0},
        {"model": "", "input $/Mtok": None, "output $/Mtok": None},
    ]
    assert parse_prices(rows) == {"local": (0.1, 0.0)}

    bad = [{"model": "m", "input $/Mtok": "cheap", "output $/Mtok": 1}]
    with pytest.raises(Exception, match="must be a number"):
        parse_prices(bad)


# --- saved settings -------------------------------------------------------------------------


def _save_custom_server_and_prices(app: AppTest) -> AgentSpec:
    _choose(_open_settings(app), CUSTOM)
    app.text_input(key="settings-base-url").input("http://gpu-box.lan:8000/v1")
    app.text_input(key=f"settings-model-{CUSTOM}").input("qwen2.5")
    _save_model(app)
    row = list(app.data_editor[0].value["model"]).index("gpt-4o-mini")
    _edit_prices(app, {"edited_rows": {row: {"input $/Mtok": 0.2}}})
    return _spec(app)


def _assert_settings_shown(app: AppTest, spec: AgentSpec) -> None:
    assert _spec(app) == spec
    assert app.selectbox(key="settings-provider").value == CUSTOM
    assert app.text_input(key="settings-base-url").value == "http://gpu-box.lan:8000/v1"
    assert app.text_input(key=f"settings-model-{CUSTOM}").value == "qwen2.5"
    assert _overrides(app) == {"gpt-4o-mini": (0.2, 0.6)}
    assert _row_of(app, "gpt-4o-mini") == (0.2, 0.6)


def test_the_model_and_prices_outlive_a_reload_and_a_server_restart(
    app: AppTest, make_app: Callable[[], AppTest], db_path: Path
) -> None:
    spec = _save_custom_server_and_prices(app)
    assert (spec.base_url, spec.model) == ("http://gpu-box.lan:8000/v1", "qwen2.5")

    reloaded = _open_settings(make_app())  # a new browser session on the same server
    _assert_settings_shown(reloaded, spec)

    st.cache_resource.clear()  # a new server process: no store object, no runner
    st.cache_data.clear()
    restarted = _open_settings(make_app())
    _assert_settings_shown(restarted, spec)

    # What the issue was about: the stepper's new tasks use the saved model, not the demo.
    _create_task_on_stepper(restarted, "add 2 and 3")
    recorded = _only_task_spec(db_path)
    assert (recorded["provider"], recorded["model"], recorded["base_url"]) == (
        "openai",
        "qwen2.5",
        "http://gpu-box.lan:8000/v1",
    )


def test_keys_stay_in_their_session_and_never_reach_the_database(
    app: AppTest, make_app: Callable[[], AppTest], tmp_path: Path, db_path: Path
) -> None:
    _choose(_open_settings(app), "vllm")
    app.text_input(key="settings-model-vllm").input("mistral-7b")
    _save_model(app)
    _type_key(app, "openai", SECRET)
    _type_key(app, "anthropic", SECRET)
    _type_key(app, "server", SECRET)
    assert _session_key(app, "server:" + OPENAI_COMPATIBLE_PRESETS["vllm"]) == SECRET
    _save_custom_server_and_prices(app)  # settings saved again while the keys are set

    reloaded = _open_settings(make_app())

    assert _spec(reloaded).model == "qwen2.5"  # the settings came back...
    assert state._KEYS not in reloaded.session_state  # ...the keys did not
    assert sum("No key yet" in warning.value for warning in reloaded.warning) == 2
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT name, value FROM settings").fetchall()
    assert {name for name, _ in rows} == {state.SAVED_SPEC, state.SAVED_PRICES}
    assert not any(_leaks(value) for _, value in rows)
    assert _files_containing(tmp_path, SECRET) == []


def test_saved_settings_that_cannot_be_read_give_the_defaults_and_say_so_once(
    app: AppTest, db_path: Path
) -> None:
    newer = {"provider": "openai", "model": "gpt-9", "field_from_a_newer_version": True}
    store = SQLiteStore(db_path)
    store.put_setting(state.SAVED_SPEC, newer)
    store.put_setting(state.SAVED_PRICES, {"gpt-4o-mini": "cheap"})
    store.close()

    app.run()  # The stepper, where a session starts, says so first.
    assert "could not be read" in _texts(app)
    app.switch_page("app_pages/settings.py")
    app.run()

    assert not app.exception
    assert _spec(app) == AgentSpec()
    assert app.selectbox(key="settings-provider").value == "demo"
    assert _overrides(app) == {}
    assert "could not be read" not in _texts(app)  # said once, not on every rerun
    assert _saved(db_path, state.SAVED_SPEC) == newer  # left for the version that wrote it

    _choose(app, "openai")
    _save_model(app)
    assert _saved(db_path, state.SAVED_SPEC)["provider"] == "openai"
    assert AgentSpec.model_validate(_saved(db_path, state.SAVED_SPEC)) == _spec(app)


def test_the_saved_spec_leaves_the_workspace_to_the_server(app: AppTest, db_path: Path) -> None:
    _choose(_open_settings(app), "openai")
    _save_model(app)

    saved = _saved(db_path, state.SAVED_SPEC)
    assert "workspace" not in saved
    assert AgentSpec.model_validate(saved) == _spec(app)


def test_a_model_the_database_cannot_take_is_kept_for_the_session_and_says_so(
    app: AppTest, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: SQLiteStore, name: str, value: Any) -> None:
        raise StoreError(f"cannot save the setting {name!r} to {self.path}: database is locked")

    _choose(_open_settings(app), "openai")
    monkeypatch.setattr(SQLiteStore, "put_setting", refuse)
    _save_model(app)

    assert _spec(app).provider == "openai"  # this session uses it all the same
    assert "Kept for this session only, not saved" in _texts(app)
    assert "database is locked" in _texts(app)
    assert not app.success
    assert not _toasts(app)  # no "Saved" toast for a model that was not saved
    assert _saved(db_path, state.SAVED_SPEC) is None
