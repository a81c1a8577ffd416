"""The Settings page: provider presets, the model, session-only keys and the price table.

Every test drives the whole app through AppTest (fixtures in tests/app/conftest.py: a fresh
database and working folder in `tmp_path`, caches cleared).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.llms.openai import OPENAI_COMPATIBLE_PRESETS
from agent_core.spec import DEFAULT_MODELS, AgentSpec
from agent_core.store import SQLiteStore
from components import state
from components.settings_form import CUSTOM, parse_prices

SECRET = "sk-test-Zq8vW3uYp1Lm"
"""A key that must never leave the session: not on the page, not on disk."""


def _leaks(text: str) -> bool:
    """Whether `text` shows the key, or its prefix or suffix (as "sk-...p1Lm" would)."""
    return any(part in text for part in (SECRET, SECRET[:12], SECRET[-5:]))


def _open_settings(app: AppTest) -> AppTest:
    app.run()
    app.switch_page("pages/settings.py")
    return app.run()


def _spec(app: AppTest) -> AgentSpec:
    return app.session_state[state._SPEC]


def _session_key(app: AppTest, provider: str) -> str | None:
    if state._KEYS not in app.session_state:
        return None
    return app.session_state[state._KEYS].get(provider)


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
    kinds = ("markdown", "caption", "code", "text", "success", "info", "warning", "error")
    return "\n".join(str(getattr(node, "value", "")) for kind in kinds for node in app.get(kind))


def _files_containing(root: Path, needle: str) -> list[Path]:
    return [
        path for path in root.rglob("*") if path.is_file() and needle.encode() in path.read_bytes()
    ]


def _create_task_on_stepper(app: AppTest, text: str) -> None:
    app.switch_page("pages/stepper.py").run()
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
    assert "Saved: new tasks use this model." in [notice.value for notice in app.success]
    assert app.selectbox(key="settings-provider").value == preset


def test_a_local_server_needs_a_model_name(app: AppTest) -> None:
    _choose(_open_settings(app), "ollama")
    assert app.text_input(key="settings-model-ollama").value == ""
    _save_model(app)

    assert "Type the model name your server serves" in app.error[0].value
    assert state._SPEC not in app.session_state


@pytest.mark.parametrize(
    "url", ["localhost:8000/v1", "ftp://box/v1", "http://", "http://[::1", "  "]
)
def test_a_custom_base_url_must_be_http_or_https(app: AppTest, url: str) -> None:
    _choose(_open_settings(app), CUSTOM)
    app.text_input(key="settings-base-url").input(url)
    app.text_input(key=f"settings-model-{CUSTOM}").input("qwen2.5")
    _save_model(app)

    assert "must start with http:// or https://" in app.error[0].value
    assert state._SPEC not in app.session_state


def test_a_custom_base_url_with_a_password_is_refused(app: AppTest) -> None:
    _choose(_open_settings(app), CUSTOM)
    app.text_input(key="settings-base-url").input(f"http://me:{SECRET}@gpu-box:8000/v1")
    app.text_input(key=f"settings-model-{CUSTOM}").input("qwen2.5")
    _save_model(app)

    assert "must not hold a user name or password" in app.error[0].value
    assert not _leaks(_rendered(app))
    assert state._SPEC not in app.session_state


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

    store = SQLiteStore(str(db_path))
    try:
        (summary,) = store.list_tasks()
        task_state = store.load_task(summary.task_id)
    finally:
        store.close()
    assert task_state is not None
    recorded = task_state.task.spec or {}
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
    _choose(app.switch_page("pages/settings.py").run(), "openai")
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
    assert any("Prices saved" in notice.value for notice in app.success)

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
