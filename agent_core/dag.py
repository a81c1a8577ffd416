"""A task's steps as a graph: build it from a `TaskState`, then hand it to a renderer.

`build_dag` turns every step the task ever had (undone and failed ones included, so both
branches show after an undo and a re-run) into a `networkx.DiGraph`. `to_dot` writes Graphviz
DOT text and `to_vis_data` the nodes and edges vis-network draws.

Text in the graph (labels, inputs, outputs, tooltips) is plain and only truncated, never
HTML-escaped: escaping belongs to whoever puts it into a page. `to_dot` does DOT-escape every
string it writes, since that is the format it produces.
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from agent_core.errors import UserError
from agent_core.types import StepKind, StepStatus, TaskState, TaskStep

__all__ = [
    "COLLAPSED_NODE",
    "STATUS_COLORS",
    "build_dag",
    "collapse_older",
    "to_dot",
    "to_vis_data",
]

STATUS_COLORS: dict[str, str] = {
    StepStatus.UPCOMING.value: "#bbdefb",
    StepStatus.RUNNING.value: "#ffe082",
    StepStatus.COMPLETED.value: "#c8e6c9",
    StepStatus.FAILED.value: "#ef9a9a",
    StepStatus.UNDONE.value: "#e0e0e0",
    StepStatus.SKIPPED.value: "#f5f5f5",
}
"""Node fill colour per step status (undone is grey), shared by every renderer."""

_UNKNOWN_STATUS_COLOR = "#ffffff"
_BORDER_COLOR = "#616161"
_UNDONE_BORDER_COLOR = "#9e9e9e"
_SELECTED_BORDER_COLOR = "#1e88e5"
_FONT_COLOR = "#212121"
_UNDONE_FONT_COLOR = "#757575"
COLLAPSED_NODE = "collapsed"
"""The id of the node that stands for the steps `collapse_older` folded away."""
_LABEL_MAX_CHARS = 40
_ELLIPSIS = "…"


def build_dag(state: TaskState, *, max_chars: int = 200) -> nx.DiGraph:
    """The task's steps as a directed graph, one node per step id.

    Node attributes: `kind`, `status`, `branch_id`, `number`, `edited`, `undone`, `label`
    (e.g. ``"3 · llm"`` or ``"tool: add"``), and `input` / `output` as short plain text cut to
    `max_chars` (`output` holds the step's error when it has one; `error` says whether it
    does). Edges run from each `prev_step_ids` entry to the step (``relation="next"``) and from
    each `depends_on` entry not already linked (``relation="depends_on"``). Ids that name no
    step in `state` are skipped rather than drawn as empty nodes.

    The text is not HTML-escaped; a renderer that builds HTML must escape it.

    Raises:
        UserError: `max_chars` is less than 1.
    """
    if max_chars < 1:
        raise UserError(f"max_chars must be at least 1, got {max_chars}")
    graph = nx.DiGraph()
    for step in state.steps.values():
        graph.add_node(step.step_id, **_node_attrs(state, step, max_chars=max_chars))
    for step in state.steps.values():
        for prev_id in step.prev_step_ids:
            if prev_id in state.steps:
                graph.add_edge(prev_id, step.step_id, relation="next")
        for dep_id in step.depends_on:
            if dep_id in state.steps and not graph.has_edge(dep_id, step.step_id):
                graph.add_edge(dep_id, step.step_id, relation="depends_on")
    return graph


def collapse_older(graph: nx.DiGraph, *, keep: int) -> nx.DiGraph:
    """The newest `keep` steps, with all older ones folded into one `COLLAPSED_NODE`.

    Long runs stay readable and cheap to draw. "Newest" is the graph's node order, which
    `build_dag` takes from the task's step creation order. The folded node comes first and
    links to every kept step that followed (or depended on) a folded one. A graph of at most
    `keep` steps is returned as it is.

    Raises:
        UserError: `keep` is less than 1.
    """
    if keep < 1:
        raise UserError(f"keep must be at least 1, got {keep}")
    nodes = list(graph.nodes)
    if len(nodes) <= keep:
        return graph
    folded, kept = set(nodes[:-keep]), nodes[-keep:]
    window = nx.DiGraph()
    # Added first, so it stays the oldest node if the window is collapsed again.
    window.add_node(
        COLLAPSED_NODE,
        kind="collapsed",
        status="collapsed",
        label=f"… {len(folded)} earlier steps",
        input="",
        output="",
        undone=False,
        error=False,
    )
    window.add_nodes_from((node, graph.nodes[node]) for node in kept)
    for source, target, data in graph.edges(data=True):
        if target in folded:
            continue  # Edges into folded steps go with them.
        if source in folded:
            window.add_edge(COLLAPSED_NODE, target, relation="next")
        else:
            window.add_edge(source, target, **data)
    return window


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT text for a graph from `build_dag`, every string quoted and DOT-escaped."""
    lines = [
        "digraph task {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    for node_id, data in graph.nodes(data=True):
        undone = bool(data.get("undone"))
        attrs = {
            "label": str(data.get("label", node_id)),
            "tooltip": _tooltip(data),
            "fillcolor": _color(data),
            "style": "rounded,filled,dashed" if undone else "rounded,filled",
        }
        if undone:
            attrs["fontcolor"] = "#757575"
        lines.append(f"  {_dot_quote(str(node_id))} [{_dot_attrs(attrs)}];")
    for source, target, data in graph.edges(data=True):
        edge = f"  {_dot_quote(str(source))} -> {_dot_quote(str(target))}"
        if data.get("relation") == "depends_on":
            edge += " [style=dashed]"
        lines.append(edge + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_vis_data(graph: nx.DiGraph) -> dict[str, list[dict[str, Any]]]:
    """vis-network nodes and edges for a graph from `build_dag`, as plain (unescaped) text.

    Each node's `level` is its longest-path depth from a root, for a hierarchical layout in
    which steps that can run in parallel share a level. `color` is a vis colour object whose
    background is the status colour; undone steps also get a grey dashed border and grey text.
    `group` is the step status (for reading the data; no vis groups are defined).
    """
    levels = _levels(graph)
    nodes = [
        {
            "id": node_id,
            "label": str(data.get("label", node_id)),
            "title": _tooltip(data),
            "color": _vis_color(data),
            "font": {"color": _UNDONE_FONT_COLOR if data.get("undone") else _FONT_COLOR},
            "group": str(data.get("status", "")),
            "level": levels[node_id],
            "shapeProperties": {"borderDashes": bool(data.get("undone"))},
        }
        for node_id, data in graph.nodes(data=True)
    ]
    edges = [
        {"from": source, "to": target, "dashes": data.get("relation") == "depends_on"}
        for source, target, data in graph.edges(data=True)
    ]
    return {"nodes": nodes, "edges": edges}


def _node_attrs(state: TaskState, step: TaskStep, *, max_chars: int) -> dict[str, Any]:
    output = state.outputs.get(step.step_id)
    error = step.error or (output.error if output is not None else None)
    if error:
        output_text = error
    elif output is not None and output.output is not None:
        output_text = str(output.output)
    else:
        output_text = ""
    return {
        "kind": str(step.kind),
        "status": str(step.status),
        "branch_id": step.branch_id,
        "number": step.number,
        "edited": step.edited,
        "undone": step.status == StepStatus.UNDONE,
        "error": bool(error),
        "input": _truncate(_input_text(step.input), max_chars),
        "output": _truncate(output_text, max_chars),
        "label": _label(step, max_chars=min(max_chars, _LABEL_MAX_CHARS)),
    }


def _input_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _label(step: TaskStep, *, max_chars: int) -> str:
    text = str(step.kind)
    if step.kind == StepKind.TOOL and isinstance(step.input, dict):
        tool = step.input.get("tool")
        if isinstance(tool, str) and tool:
            text = f"tool: {' '.join(tool.split())}"
    if step.number is not None:
        text = f"{step.number} · {text}"
    return _truncate(text, max_chars)


def _truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1] + _ELLIPSIS


def _tooltip(data: dict[str, Any]) -> str:
    parts = []
    if data.get("input"):
        parts.append(f"input: {data['input']}")
    if data.get("output"):
        parts.append(f"{'error' if data.get('error') else 'output'}: {data['output']}")
    return "\n".join(parts)


def _color(data: dict[str, Any]) -> str:
    return STATUS_COLORS.get(str(data.get("status", "")), _UNKNOWN_STATUS_COLOR)


def _vis_color(data: dict[str, Any]) -> dict[str, Any]:
    # A bare colour string would paint the border like the fill, hiding undone dashes.
    fill = _color(data)
    border = _UNDONE_BORDER_COLOR if data.get("undone") else _BORDER_COLOR
    selected = {"background": fill, "border": _SELECTED_BORDER_COLOR}
    return {"background": fill, "border": border, "highlight": selected, "hover": selected}


def _levels(graph: nx.DiGraph) -> dict[Any, int]:
    # Step ids should never form a cycle, but stored data can be wrong; the condensation is
    # acyclic, so a cycle's steps simply share a level instead of breaking the layout.
    condensed = nx.condensation(graph)
    depth: dict[int, int] = {}
    for component in nx.topological_sort(condensed):
        depth[component] = max((depth[p] + 1 for p in condensed.predecessors(component)), default=0)
    mapping = condensed.graph["mapping"]
    return {node_id: depth[mapping[node_id]] for node_id in graph.nodes}


def _dot_quote(text: str) -> str:
    # Drop control characters Graphviz cannot show, escape the backslash first so the
    # escapes added after it stay single, then turn line breaks into DOT's `\n`.
    text = "".join(ch for ch in text if ch in "\n\r\t" or ch >= " ")
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{text}"'


def _dot_attrs(attrs: dict[str, str]) -> str:
    return ", ".join(f"{key}={_dot_quote(value)}" for key, value in attrs.items())
