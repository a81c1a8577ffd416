"""LangGraph Studio's views for a LangGraph task: its graph drawn, node breakpoints, each state.

The LangGraph adapter keeps the graph's topology in the task's record
(`extra_state["langgraph"]["topology"]`), names the node(s) each step runs in its
`step_state["nodes"]` and keeps the graph's state a step left in `step_state["state_after"]`.
From those: the "Graph" view draws the topology with Graphviz (the upcoming nodes lit, the
nodes already run marked), the node choices for Run until's `OnNode` breakpoints, and each
step card's "Graph state after this step". A task of another worker has none of them, and
nothing here draws.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import streamlit as st

from agent_core.runtime.breakpoints import nodes_of
from agent_core.types import StepStatus, TaskState, TaskStep

__all__ = [
    "graph_dot",
    "node_names",
    "render_graph_view",
    "render_state_after",
    "topology_of",
]

_RECORD = "langgraph"  # The adapter's STATE_KEY; the app does not import the adapter (extra).
_STATE_AFTER = "state_after"
_START, _END = "__start__", "__end__"
_UPCOMING = 'style="filled,bold" fillcolor="#ffd54f" penwidth=2'
_RAN = 'style=filled fillcolor="#c8e6c9"'
_PLAIN = 'style=filled fillcolor="#f5f5f5"'
_ENDS = 'shape=oval style=filled fillcolor="#e0e0e0" fontsize=10'


def topology_of(task_state: TaskState) -> dict[str, Any] | None:
    """The task's graph topology as the LangGraph adapter kept it, or None (another worker)."""
    record = task_state.task.extra_state.get(_RECORD)
    found = record.get("topology") if isinstance(record, dict) else None
    if isinstance(found, dict) and isinstance(found.get("nodes"), list):
        return found
    return None


def node_names(topology: dict[str, Any] | None) -> list[str]:
    """The graph's own nodes, START and END left out: the ones a breakpoint can stand on."""
    nodes = (topology or {}).get("nodes") or []
    return [n for n in nodes if isinstance(n, str) and n not in (_START, _END)]


def _quoted(text: str) -> str:
    """`text` as a DOT quoted string: a node name is the user's, and may hold anything."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "") + '"'


def _label(name: str) -> str:
    return {_START: "START", _END: "END"}.get(name, name)


def _node_line(name: str, upcoming: set[str], ran: set[str]) -> str:
    if name in (_START, _END):
        look = _ENDS
    elif name in upcoming:
        look = _UPCOMING
    else:
        look = _RAN if name in ran else _PLAIN
    return f"  {_quoted(name)} [label={_quoted(_label(name))} {look}];"


def _edge_line(edge: dict[str, Any]) -> str:
    attrs = ["style=dashed"] if edge.get("conditional") else []
    if edge.get("label"):
        attrs.append(f"label={_quoted(str(edge['label']))}")
    shown = f" [{' '.join(attrs)}]" if attrs else ""
    return f"  {_quoted(str(edge['source']))} -> {_quoted(str(edge['target']))}{shown};"


def graph_dot(topology: dict[str, Any], *, upcoming: Iterable[str], ran: Iterable[str]) -> str:
    """The topology as Graphviz DOT: `upcoming` nodes lit, `ran` ones marked, every label quoted.

    A conditional edge (`add_conditional_edges`) is dashed, as LangGraph draws it.
    """
    lit, done = set(upcoming), set(ran)
    lines = [
        "digraph langgraph {",
        '  node [shape=box fontname="Helvetica" style=rounded];',
        *(_node_line(str(n), lit, done) for n in topology.get("nodes") or []),
        *(_edge_line(e) for e in topology.get("edges") or [] if isinstance(e, dict)),
        "}",
    ]
    return "\n".join(lines)


def _upcoming_nodes(task_state: TaskState) -> list[str]:
    steps = task_state.steps.values()
    queued = [s for s in steps if s.status is StepStatus.UPCOMING]
    return [node for step in queued for node in nodes_of(step)]


def _ran_nodes(task_state: TaskState) -> list[str]:
    done: list[TaskStep] = [
        task_state.steps[i] for i in task_state.completed if i in task_state.steps
    ]
    return [node for step in done for node in nodes_of(step)]


def render_graph_view(task_state: TaskState) -> None:
    """Draw the task's graph beside its step DAG; nothing for a task that is not LangGraph's."""
    topology = topology_of(task_state)
    if topology is None:
        return
    upcoming = _upcoming_nodes(task_state)
    st.subheader("Graph", anchor=False)
    st.graphviz_chart(graph_dot(topology, upcoming=upcoming, ran=_ran_nodes(task_state)))
    where = ", ".join(dict.fromkeys(upcoming)) or "nothing (the graph reached its end)"
    st.caption(f"Next: {where}. Lit: the upcoming node; green: nodes already run.")


def render_state_after(step: TaskStep) -> None:
    """Draw the graph state a LangGraph step left (its checkpoint's values), if it kept one."""
    state = step.step_state.get(_STATE_AFTER)
    if state is None:
        return
    st.markdown("**Graph state after this step**")
    st.code(json.dumps(state, indent=2, ensure_ascii=False), language="json")
