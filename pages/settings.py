"""Settings: the model provider, the model, a key for this session only, and prices."""

from __future__ import annotations

import streamlit as st

from components.actions import show_notice

show_notice()
st.header("Settings")
st.caption("Coming next: provider presets, keys for this session, the price table.")
