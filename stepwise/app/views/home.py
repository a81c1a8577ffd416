"""Start: what Stepwise is, in two lines, and a link to each page."""

from __future__ import annotations

import streamlit as st

from components import navigation
from components.intro import render_intro


def render() -> None:
    """Draw the Start page."""
    st.title("Stepwise", anchor=False)
    render_intro()
    st.page_link(
        navigation.page("stepper"),
        label="Stepper: run a task step by step, or try a demo scenario",
        icon=":material/play_arrow:",
    )
    st.page_link(
        navigation.page("tasks"),
        label="Tasks: open, export, delete or import the tasks you ran",
        icon=":material/list:",
    )
    st.page_link(
        navigation.page("playground"),
        label="Playground: one stateless agent step at a time, by hand (the Execute API)",
        icon=":material/chat:",
    )
    st.page_link(
        navigation.page("services"),
        label="Services: watch and steer multi-agent services, each hop as a live DAG",
        icon=":material/hub:",
    )
    st.page_link(
        navigation.page("settings"),
        label="Settings: the model, your keys and prices",
        icon=":material/settings:",
    )
