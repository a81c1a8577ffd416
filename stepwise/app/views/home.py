"""Start: what Stepwise is, in two lines, and a link to each page."""

from __future__ import annotations

import streamlit as st

from stepwise.app.components import navigation
from stepwise.app.components.intro import render_intro

_LINKS = [
    (
        "stepper",
        "Stepper: run a task step by step, or try a demo scenario",
        ":material/play_arrow:",
    ),
    ("tasks", "Tasks: open, export, delete or import the tasks you ran", ":material/list:"),
    (
        "playground",
        "Playground: one stateless agent step at a time, by hand (the Execute API)",
        ":material/chat:",
    ),
    (
        "services",
        "Services: watch and steer multi-agent services, each hop as a live DAG",
        ":material/hub:",
    ),
    ("settings", "Settings: the model, your keys and prices", ":material/settings:"),
]
"""The pages the Start page links to: (page, what it is for, its icon)."""


def render() -> None:
    """Draw the Start page."""
    st.title("Stepwise", anchor=False)
    render_intro()
    for page, label, icon in _LINKS:
        st.page_link(navigation.page(page), label=label, icon=icon)
