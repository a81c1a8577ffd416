"""The Breakpoints popover: where Run until stops, shown on its button and cleared in one click.

The choices live in the session under fixed widget keys, so the button's label is built from
them before the popover draws its widgets, and "Clear breakpoints" resets them in a callback
(a widget's value can only be changed before the widget is drawn).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st

from agent_core import AtStep, CostOver, OnNode, OnTool
from agent_core.runtime.breakpoints import Breakpoint

__all__ = ["chosen_breakpoints", "describe_breakpoints", "render_breakpoints"]

ANY_TOOL = "bp-tools"
TOOL = "bp-tool"
AT_STEP = "bp-step"
COST = "bp-cost"
NODES = "bp-nodes"
_DEFAULTS: dict[str, bool | str | int | float | list[str]] = {
    ANY_TOOL: False,
    TOOL: "",
    AT_STEP: 0,
    COST: 0.0,
    NODES: [],
}
_SHOWN_NAME = re.compile(r"[\w.-]{1,40}")
"""A tool name short and plain enough to put on the button (its label is markdown)."""


def _value(key: str) -> bool | str | int | float | list[str]:
    return st.session_state.get(key, _DEFAULTS[key])


def chosen_breakpoints() -> list[Breakpoint]:
    """The breakpoints set in the popover, for Run until."""
    chosen: list[Breakpoint] = []
    tool = str(_value(TOOL)).strip()
    if _value(ANY_TOOL):
        chosen.append(OnTool())
    if tool:
        chosen.append(OnTool(tool))
    if at := int(_value(AT_STEP) or 0):
        chosen.append(AtStep(at))
    if cost := float(_value(COST) or 0):
        chosen.append(CostOver(cost))
    chosen.extend(OnNode(str(node)) for node in _nodes())
    return chosen


def _nodes() -> list[str]:
    nodes = _value(NODES)
    return [str(n) for n in nodes] if isinstance(nodes, list) else []


def describe_breakpoints() -> list[str]:
    """The breakpoints set, in a few words each: "before add", "at step 4"."""
    words: list[str] = []
    tool = str(_value(TOOL)).strip()
    if _value(ANY_TOOL):
        words.append("before any tool call")
    if tool:
        words.append(f"before {tool}" if _SHOWN_NAME.fullmatch(tool) else "before a named tool")
    if at := int(_value(AT_STEP) or 0):
        words.append(f"at step {at}")
    if cost := float(_value(COST) or 0):
        words.append(f"cost over ${cost:.2f}")
    for node in _nodes():
        words.append(f"before node {node}" if _SHOWN_NAME.fullmatch(node) else "before a node")
    return words


def _clear() -> None:
    for key, default in _DEFAULTS.items():
        st.session_state[key] = default


def render_breakpoints(
    *, steps_done: int, disabled: bool = False, nodes: Sequence[str] = ()
) -> list[Breakpoint]:
    """Draw the popover; its button names the breakpoints set. Returns them for Run until.

    `steps_done` is the task's number of completed steps: a stop at a step already behind it
    is said to be passed. `nodes` are a LangGraph task's graph nodes, to stop before.
    """
    words = describe_breakpoints()
    label = "Breakpoints: " + ", ".join(words) if words else "Breakpoints"
    with st.popover(
        label,
        key="bp-popover",
        disabled=disabled,
        help="Where Run until stops. Run until again continues past the stop it is at.",
    ):
        st.checkbox("Before any tool call", key=ANY_TOOL)
        st.text_input("Before the tool named", key=TOOL, placeholder="add")
        st.number_input(
            "Stop at step (0: off)",
            min_value=0,
            step=1,
            key=AT_STEP,
            help="Run until stops once this step has run (the numbers on the step cards). "
            "It stops there once: Run until again goes on.",
        )
        at = int(_value(AT_STEP) or 0)
        if 0 < at <= steps_done:
            st.caption(f"Step {at} has already run: Run until will not stop there.")
        st.number_input("When the cost is over $", min_value=0.0, step=0.01, key=COST)
        if nodes:  # A LangGraph task: Studio's breakpoint on a node of its graph.
            st.multiselect("Before the graph node", list(nodes), key=NODES)
        st.button("Clear breakpoints", key="bp-clear", on_click=_clear, disabled=not words)
    return chosen_breakpoints()
