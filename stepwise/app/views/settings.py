"""Settings: the model provider, the model, keys for this session only, and prices."""

from __future__ import annotations

import streamlit as st

from stepwise.app.components import state
from stepwise.app.components.actions import show_notice
from stepwise.app.components.database import when_database_answers
from stepwise.app.components.settings_form import (
    load_secret_keys,
    render_key_section,
    render_model_section,
    render_price_section,
)


def render() -> None:
    """Draw the Settings page (or say that its database does not answer)."""
    with when_database_answers():
        _render()


def _render() -> None:
    state.load_saved_settings()  # Before the notice: a saved setting that cannot be read says so.
    show_notice()
    st.header("Settings")
    # Before anything reads keys, so a key from .streamlit/secrets.toml shows as set.
    load_secret_keys()
    render_model_section()
    st.divider()
    render_key_section()
    st.divider()
    render_price_section()
