"""Typed access to `st.session_state`: ids and UI choices only, never runtime objects.

Keys entered in Settings live here for the session and nowhere else: not in the database,
not on disk, not in a spec.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from agent_core.spec import AgentSpec

_TASK = "stepwise.task_id"
_SPEC = "stepwise.spec"
_KEYS = "stepwise.keys"
_PRICES = "stepwise.prices"
_NOTICE = "stepwise.notice"


def current_task_id() -> str | None:
    """The task the stepper shows."""
    return st.session_state.get(_TASK)


def set_current_task_id(task_id: str | None) -> None:
    """Show `task_id` in the stepper (None: the create form)."""
    st.session_state[_TASK] = task_id


def agent_spec() -> AgentSpec:
    """The agent new tasks are created with (Settings and the agent picker change it)."""
    return st.session_state.get(_SPEC) or AgentSpec()


def set_agent_spec(spec: AgentSpec) -> None:
    """Use `spec` for new tasks."""
    st.session_state[_SPEC] = spec


def api_key(provider: str) -> str | None:
    """The key typed in Settings for `provider`, for this session only."""
    return st.session_state.get(_KEYS, {}).get(provider) or None


def set_api_key(provider: str, key: str | None) -> None:
    """Keep `key` for this browser session (never written anywhere)."""
    keys = dict(st.session_state.get(_KEYS, {}))
    keys[provider] = key or None
    st.session_state[_KEYS] = keys


def price_overrides() -> dict[str, tuple[float, float]]:
    """Per-model prices (input, output $/Mtok) set in Settings."""
    return dict(st.session_state.get(_PRICES, {}))


def set_price_overrides(prices: dict[str, tuple[float, float]]) -> None:
    """Replace the session's price overrides."""
    st.session_state[_PRICES] = dict(prices)


def push_notice(kind: str, text: str) -> None:
    """A message to show once after the next rerun (kind: success, info, warning, error)."""
    st.session_state[_NOTICE] = (kind, text)


def pop_notice() -> tuple[str, str] | None:
    """The pending notice, if any (shown once)."""
    notice: Any = st.session_state.pop(_NOTICE, None)
    return notice
