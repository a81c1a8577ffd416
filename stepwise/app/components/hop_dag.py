"""A services task's hops as a live DAG: task → service → service → human → result.

Drawn by the same vis-network component as the step DAG (`stepwise/app/components/dag_component`,
vis-network from the app's own folder, no CDN), so the same safety holds: labels go to the
browser as JSON data and are drawn on a canvas with `font.multi` off (never parsed as
markup), and tooltips are set with `textContent`. A hop a person edited in step mode shows
what the orchestrator proposed as a grey, dashed node beside the hop that ran. A click on a
hop reports its id (`on_select`), so the page can show that hop and its service's task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from agent_core.dag import STATUS_COLORS
from stepwise.app.components.dag_view import dag_options, declare_dag_component, on_node_click
from stepwise.services.records import HopRecord, HopStatus, ServiceKind, TaskRecord, TaskStatus

__all__ = ["PROPOSED_PREFIX", "TASK_NODE", "hop_dag_data", "hop_of_node", "render_hop_dag"]

TASK_NODE = "task"
RESULT_NODE = "result"
PROPOSED_PREFIX = "proposed:"
"""Node ids of an edited hop's proposal: `proposed:<hop id>`."""
_LABEL_CHARS = 40
_TIP_CHARS = 1_500
_COLORS = {
    HopStatus.PENDING: STATUS_COLORS["awaiting_approval"],
    HopStatus.SENT: STATUS_COLORS["running"],
    HopStatus.COMPLETED: STATUS_COLORS["completed"],
    HopStatus.FAILED: STATUS_COLORS["failed"],
    HopStatus.REJECTED: STATUS_COLORS["rejected"],
}
_TASK_COLOR = STATUS_COLORS["upcoming"]
_PROPOSED_COLOR = STATUS_COLORS["undone"]
_WAITING = {
    HopStatus.PENDING: "awaiting approval",
    HopStatus.SENT: "running",
    HopStatus.REJECTED: "rejected",
    HopStatus.FAILED: "failed",
}
_OPTIONS = dag_options(level_separation=80, node_spacing=240)
_LEGEND = [
    {"label": "task", "color": _TASK_COLOR},
    {"label": "awaiting approval", "color": _COLORS[HopStatus.PENDING]},
    {"label": "running", "color": _COLORS[HopStatus.SENT]},
    {"label": "completed", "color": _COLORS[HopStatus.COMPLETED]},
    {"label": "failed", "color": _COLORS[HopStatus.FAILED]},
    {"label": "rejected", "color": _COLORS[HopStatus.REJECTED]},
    {
        "label": "proposed, then edited",
        "color": _PROPOSED_COLOR,
        "meaning": "What the orchestrator proposed before a person changed the hop.",
    },
]


def _short(text: str, limit: int = _LABEL_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _tip(*parts: str) -> str:
    text = "\n".join(part for part in parts if part)
    return text if len(text) <= _TIP_CHARS else text[: _TIP_CHARS - 1] + "…"


def _node(
    node_id: str, label: str, color: str, level: int, tip: str, **extra: Any
) -> dict[str, Any]:
    return {
        "id": node_id,
        "label": label,
        "shape": "box",
        "level": level,
        "tip": tip,
        "color": {"background": color, "border": "#616161"},
        "font": {"color": "#212121"},
        **extra,
    }


def _edge(source: str, target: str, *, dashes: bool = False) -> dict[str, Any]:
    return {"from": source, "to": target, "dashes": dashes}


def _hop_label(hop: HopRecord, kinds: Mapping[str, ServiceKind]) -> str:
    service = hop.service_name or hop.proposed_service
    kind = kinds.get(service)
    name = f"human: {service}" if kind is ServiceKind.HUMAN else service
    note = "edited" if hop.edited else _WAITING.get(hop.status, "")
    if hop.status is HopStatus.PENDING:
        note = "proposed · awaiting approval"
    return f"{hop.seq} · {_short(name, 34)}" + (f"\n{note}" if note else "")


def _hop_tip(hop: HopRecord) -> str:
    ran = f"Ran: {hop.service_name}\nInput: {hop.input}" if hop.service_name else ""
    proposed = f"Proposed: {hop.proposed_service}\nInput: {hop.proposed_input}"
    return _tip(
        f"Hop {hop.seq} · {hop.status.value}" + (" · edited by a person" if hop.edited else ""),
        ran if hop.service_name and not hop.edited else "",
        proposed if hop.edited or not hop.service_name else "",
        ran if hop.edited else "",
        f"Result: {hop.result}" if hop.result else "",
        f"Error: {hop.error}" if hop.error else "",
    )


def _end_node(task: TaskRecord, level: int) -> dict[str, Any] | None:
    if task.status is TaskStatus.COMPLETED:
        text = task.result or ""
        label, color, tip = f"Result: {_short(text)}", _COLORS[HopStatus.COMPLETED], "Result"
    elif task.status is TaskStatus.FAILED:
        text = task.error or ""
        label, color, tip = f"Failed: {_short(text)}", _COLORS[HopStatus.FAILED], "The task failed"
    else:
        return None
    return _node(RESULT_NODE, label, color, level, _tip(tip, text), status=task.status.value)


def _task_node(task: TaskRecord) -> dict[str, Any]:
    status = task.status.value.replace("_", " ")
    tip = _tip(f"Task {task.task_id} · {status}", task.input)
    return _node(TASK_NODE, f"Task: {_short(task.input, 34)}", _TASK_COLOR, 0, tip, status="task")


def _proposal_node(hop: HopRecord, level: int) -> dict[str, Any]:
    tip = _tip(
        "The orchestrator proposed",
        hop.proposed_service,
        f"Input: {hop.proposed_input}",
        "A person changed it.",
    )
    label = f"proposed: {_short(hop.proposed_service, 30)}"
    return _node(
        f"{PROPOSED_PREFIX}{hop.hop_id}",
        label,
        _PROPOSED_COLOR,
        level,
        tip,
        status="proposed",
        shapeProperties={"borderDashes": [5, 5]},
    )


def hop_dag_data(
    task: TaskRecord, hops: Sequence[HopRecord], kinds: Mapping[str, ServiceKind]
) -> dict[str, Any]:
    """The component's graph: nodes (plain text, a `tip` each), edges, options, legend.

    `kinds` maps service names to their kind, so a human service's hop says so. Each hop
    node's `status` is its hop status; an edited hop's proposal is `proposed:<hop id>` with
    status `proposed`, joined to the hop before it by a dashed edge.
    """
    nodes = [_task_node(task)]
    edges: list[dict[str, Any]] = []
    previous = TASK_NODE
    for level, hop in enumerate(sorted(hops, key=lambda h: h.seq), start=1):
        if hop.edited:
            proposal = _proposal_node(hop, level)
            nodes.append(proposal)
            edges.append(_edge(previous, proposal["id"], dashes=True))
        label, tip = _hop_label(hop, kinds), _hop_tip(hop)
        nodes.append(
            _node(hop.hop_id, label, _COLORS[hop.status], level, tip, status=hop.status.value)
        )
        edges.append(_edge(previous, hop.hop_id))
        previous = hop.hop_id
    end = _end_node(task, len(hops) + 1)
    if end is not None:
        nodes.append(end)
        edges.append(_edge(previous, RESULT_NODE))
    return {"nodes": nodes, "edges": edges, "options": _OPTIONS, "legend": _LEGEND}


def hop_of_node(node_id: str | None) -> str | None:
    """The hop a clicked node stands for (a hop, or an edited hop's proposal), else None."""
    if not node_id or node_id in (TASK_NODE, RESULT_NODE):
        return None
    return node_id.removeprefix(PROPOSED_PREFIX)


def render_hop_dag(
    task: TaskRecord,
    hops: Sequence[HopRecord],
    kinds: Mapping[str, ServiceKind],
    *,
    selected: str | None = None,
    on_select: Callable[[str | None], None] | None = None,
    height: int = 360,
) -> None:
    """Draw the task's hop DAG; a click on a hop calls `on_select` with its id."""
    data = hop_dag_data(task, hops, kinds)
    key = f"hop-dag-{task.task_id}"
    try:
        component = declare_dag_component("stepwise_hop_dag")
    except Exception as exc:  # The component failed (its script is missing): show the hops.
        st.caption(f"The hop graph is unavailable ({type(exc).__name__}); the hops are below.")
        return
    component(
        **data,
        selected=selected,
        height=height,
        key=key,
        default=None,
        on_change=None
        if on_select is None
        else on_node_click(key, lambda node: on_select(hop_of_node(node))),
    )
