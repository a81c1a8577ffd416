"""What Stepwise is and where to start, in two lines: the Start page's, and any form's."""

from __future__ import annotations

import streamlit as st

__all__ = ["INTRO", "render_intro"]

INTRO = (
    "**Stepwise** runs an LLM agent one step at a time: before each step you see what the "
    "model will get, and you can edit it, approve or reject a tool call, undo, and run again.",
    "Start on the **Stepper** with a demo scenario (no key needed), or set up OpenAI or "
    "Anthropic in **Settings** to use a real model; **Tasks** keeps every task you ran.",
)
"""The two lines (the app's own Markdown)."""


def render_intro() -> None:
    """The two lines saying what Stepwise is and where to start."""
    for line in INTRO:
        st.markdown(line)
