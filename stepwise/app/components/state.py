"""Typed access to `st.session_state`: ids and UI choices only, never runtime objects.

Keys entered in Settings live here for the session and nowhere else: not in the database,
not on disk, not in a spec. The choices that are not secret (the spec new tasks use and the
price overrides) are also saved in the app's database, so that a reload or a server restart
keeps them: a session that has not chosen its own reads the saved ones once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st
from pydantic import TypeAdapter

from agent_core.errors import AgentCoreError
from agent_core.llms.catalog import OPENAI_COMPATIBLE_PRESETS
from agent_core.spec import AgentSpec
from agent_core.store import SettingsStore
from stepwise.app.components.database import shared_store

_TASK = "stepwise.task_id"
_SPEC = "stepwise.spec"
_FORM_SPEC = "stepwise.form_spec"
_KEYS = "stepwise.keys"
_PRICES = "stepwise.prices"
_NOTICE = "stepwise.notices"
_PAGE_RUN = "stepwise.page_run"

SAVED_SPEC = "new_task_spec"
"""The store setting holding the spec new tasks use (an `AgentSpec` as JSON, no workspace)."""
SAVED_PRICES = "price_overrides"
"""The store setting holding the price overrides: `{model: [input, output]}` in $/Mtok."""

# The workspace folder is the server's ($STEPWISE_WORKSPACES), not a choice made in Settings:
# a saved spec takes the folder of the server that loads it.
_NOT_SAVED = {"workspace"}
_PRICE_TABLE = TypeAdapter(dict[str, tuple[float, float]])
_T = TypeVar("_T")

logger = logging.getLogger("stepwise.app")


def current_task_id() -> str | None:
    """The task the stepper shows."""
    return st.session_state.get(_TASK)


def set_current_task_id(task_id: str | None) -> None:
    """Show `task_id` in the stepper (None: the create form)."""
    st.session_state[_TASK] = task_id


def agent_spec() -> AgentSpec:
    """The agent new tasks are created with (Settings and the agent picker change it)."""
    if _SPEC not in st.session_state:
        spec = _load(SAVED_SPEC, AgentSpec.model_validate, AgentSpec(), what="model")
        st.session_state[_SPEC] = spec
    return st.session_state[_SPEC]


def set_agent_spec(spec: AgentSpec) -> bool:
    """Use `spec` for new tasks, in this session and later ones; False if it was not saved.

    Only the Settings page calls this. The New task form's last choices are forgotten, so
    the form starts from the defaults just saved.
    """
    st.session_state[_SPEC] = spec
    st.session_state.pop(_FORM_SPEC, None)
    return _save(SAVED_SPEC, spec.model_dump(mode="json", exclude=_NOT_SAVED))


def form_spec() -> AgentSpec:
    """What the New task form starts from: its last task's choices here, else the defaults."""
    spec = st.session_state.get(_FORM_SPEC)
    return spec if isinstance(spec, AgentSpec) else agent_spec()


def set_form_spec(spec: AgentSpec) -> None:
    """Keep the form's choices for this browser session only.

    They are that task's, not the defaults: a choice for one task must not change Settings
    or other sessions.
    """
    st.session_state[_FORM_SPEC] = spec


def server_provider(base_url: str) -> str:
    """The name a key typed for the server at `base_url` is kept under: `server:<url>`."""
    url = base_url.strip()
    return "server:" + OPENAI_COMPATIBLE_PRESETS.get(url, url).rstrip("/")


def api_key(provider: str) -> str | None:
    """The key typed in Settings for `provider` (or a `server_provider`), for this session."""
    return st.session_state.get(_KEYS, {}).get(provider) or None


def set_api_key(provider: str, key: str | None) -> None:
    """Keep `key` for this browser session (never written anywhere)."""
    keys = dict(st.session_state.get(_KEYS, {}))
    keys[provider] = key or None
    st.session_state[_KEYS] = keys


def price_overrides() -> dict[str, tuple[float, float]]:
    """Per-model prices (input, output $/Mtok) set in Settings."""
    if _PRICES not in st.session_state:
        prices = _load(SAVED_PRICES, _PRICE_TABLE.validate_python, {}, what="prices")
        st.session_state[_PRICES] = prices
    return dict(st.session_state[_PRICES])


def set_price_overrides(prices: dict[str, tuple[float, float]]) -> bool:
    """Replace the price overrides, in this session and later ones; False if not saved."""
    st.session_state[_PRICES] = dict(prices)
    return _save(SAVED_PRICES, {name: list(pair) for name, pair in prices.items()})


def load_saved_settings() -> None:
    """Read the saved spec and prices into this session, if it has none yet.

    A page calls this before `show_notice`, so a saved setting that cannot be read says so at
    once rather than after the next click.
    """
    agent_spec()
    price_overrides()


def push_notice(kind: str, text: str, *, where: str | None = None) -> None:
    """A message to show once after the next rerun (kind: success, info, warning, error).

    `where` names the place on the page that shows it (the control that was clicked, say
    "controls"); None is the page's top. A notice no page run showed is dropped by the run
    after the one it was meant for, so it never turns up later beside an unrelated click.
    """
    notices = dict(st.session_state.get(_NOTICE) or {})
    notices[where] = (kind, text, _page_run())
    st.session_state[_NOTICE] = notices


def pop_notice(where: str | None = None) -> tuple[str, str] | None:
    """The pending notice for `where`, if any (shown once).

    The page's top (`where=None`) is read first on every run, so that call also counts the
    runs and forgets notices left over from earlier ones.
    """
    if where is None:
        _count_page_run()
    notices: dict[str | None, tuple[str, str, int]] = dict(st.session_state.get(_NOTICE) or {})
    found = notices.pop(where, None)
    st.session_state[_NOTICE] = notices
    if found is None:
        return None
    kind, text, _ = found
    return kind, text


def _page_run() -> int:
    return int(st.session_state.get(_PAGE_RUN, 0))


def _count_page_run() -> None:
    run = _page_run() + 1
    st.session_state[_PAGE_RUN] = run
    notices: dict[str | None, tuple[str, str, int]] = st.session_state.get(_NOTICE) or {}
    # Pushed in the run before this one (the click's run, or its callback): still to show.
    st.session_state[_NOTICE] = {w: n for w, n in notices.items() if n[2] >= run - 1}


# --- the saved settings ---------------------------------------------------------------------


def _store() -> SettingsStore:
    return shared_store()


def _load(name: str, parse: Callable[[Any], _T], default: _T, *, what: str) -> _T:
    """The saved setting `name`, parsed; `default` (said once) when it cannot be read."""
    try:
        saved = _store().get_setting(name)
        return default if saved is None else parse(saved)
    except (ValueError, AgentCoreError) as exc:  # pydantic's ValidationError is a ValueError
        if getattr(exc, "code", None) == "store_unavailable":
            raise  # Not unreadable: unreachable. The page says so, naming the fix.
        # Saved by another version of Stepwise, or naming an agent no longer registered. It is
        # left as it is: saving in Settings replaces it.
        logger.warning("the saved setting %r could not be read; using the default", name)
        push_notice(
            "warning",
            f"The {what} saved in Settings could not be read (another version of Stepwise may "
            "have saved it), so the default is used for now. Choose again in Settings and save "
            "to replace it.",
        )
        return default


def _save(name: str, value: Any) -> bool:
    try:
        _store().put_setting(name, value)
    except AgentCoreError as exc:  # e.g. the database is locked or read-only
        logger.warning("the setting %r was not saved: %s", name, exc)
        push_notice("warning", f"Kept for this session only, not saved: {exc}")
        return False
    return True
