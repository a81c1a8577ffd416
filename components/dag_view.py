"""The live step DAG: vis-network through pyvis, served from the app's own static folder.

pyvis writes the page; we then strip every tag that would load from a CDN (its Bootstrap and
vis-network links) and load vis-network from `/app/static/`, copied there from the pinned
pyvis package. All step text is HTML-escaped before it enters the page: labels are drawn on
a canvas, and tooltips are built from the escaped text, so model output never becomes markup.
When vis-network cannot be shown, `st.graphviz_chart` draws the same graph.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import networkx as nx
import pyvis
import streamlit as st
from pyvis.network import Network

from agent_core.dag import build_dag, collapse_older, to_dot, to_vis_data
from agent_core.types import TaskState

__all__ = [
    "MAX_DRAWN_STEPS",
    "STATIC_DIR",
    "VIS_NETWORK_URL",
    "dag_html",
    "ensure_static_assets",
    "render_dag",
]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
VIS_NETWORK_FILE = "vis-network.min.js"
VIS_NETWORK_URL = f"/app/static/{VIS_NETWORK_FILE}"
MAX_DRAWN_STEPS = 60
"""Longer runs fold their older steps into one node, so the graph stays readable and fast."""

_PYVIS_VIS = Path(pyvis.__file__).parent / "lib" / "vis-9.1.2" / VIS_NETWORK_FILE
_EXTERNAL_TAGS = re.compile(
    r"<link\b[^>]*>|<script\b[^>]*\bsrc=[^>]*>\s*</script>|<center>\s*<h1>.*?</h1>\s*</center>",
    re.DOTALL | re.IGNORECASE,
)
_OPTIONS = {
    "layout": {
        "hierarchical": {
            "enabled": True,
            "direction": "UD",
            "sortMethod": "directed",
            "levelSeparation": 90,
            "nodeSpacing": 150,
        }
    },
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 120, "navigationButtons": False},
    "nodes": {"shape": "box", "font": {"multi": "html", "size": 14}, "margin": 8},
    "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.6}}, "smooth": False},
}
# Tooltips: vis-network shows a string title as text; an element lets us keep line breaks.
# Every piece of the title was escaped in Python, so parsing it yields only text and <br>.
_AFTER_DRAW = """
<style>
  body { margin: 0; font-family: sans-serif; }
  #mynetwork { float: none !important; border: none !important; }
  div.vis-tooltip { position: absolute; max-width: 420px; white-space: normal; padding: 6px;
    background: #fffde7; border: 1px solid #999; border-radius: 4px; font-size: 12px; }
</style>
<script>
  (function () {
    nodes.forEach(function (node) {
      if (typeof node.title === "string") {
        var box = document.createElement("div");
        box.innerHTML = node.title;
        nodes.update({ id: node.id, title: box });
      }
    });
    window.stepwiseDag = { nodes: nodes, edges: edges, network: network };
  })();
</script>
"""


def ensure_static_assets() -> Path:
    """Copy vis-network from the pyvis package into the app's static folder (once)."""
    target = STATIC_DIR / VIS_NETWORK_FILE
    if not target.exists() or target.stat().st_size != _PYVIS_VIS.stat().st_size:
        STATIC_DIR.mkdir(exist_ok=True)
        shutil.copyfile(_PYVIS_VIS, target)
    return target


def _escaped_tooltip(data: dict[str, Any]) -> str:
    lines = [f"<b>{html.escape(str(data.get('label', '')))}</b>"]
    for key in ("input", "output"):
        text = str(data.get(key) or "")
        if text:
            name = "error" if key == "output" and data.get("error") else key
            lines.append(f"<b>{name}:</b> {html.escape(text)}")
    return "<br>".join(lines)


def _network(graph: nx.DiGraph, *, height: int) -> Network:
    data = to_vis_data(graph)
    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="remote")
    for node in data["nodes"]:
        attrs = graph.nodes[node["id"]]
        net.add_node(
            node["id"],
            label=html.escape(node["label"]),
            title=_escaped_tooltip(attrs),
            color=node["color"],
            level=node["level"],
            group=node["group"],
            shapeProperties=node["shapeProperties"],
        )
    for edge in data["edges"]:
        net.add_edge(edge["from"], edge["to"], dashes=edge["dashes"])
    net.set_options(json.dumps(_OPTIONS))
    return net


def dag_html(state: TaskState, *, height: int = 420, max_steps: int = MAX_DRAWN_STEPS) -> str:
    """A self-contained page drawing the task's DAG, loading scripts only from this app."""
    graph = collapse_older(build_dag(state), keep=max_steps)
    page = _network(graph, height=height).generate_html(notebook=False)
    page = _EXTERNAL_TAGS.sub("", page)
    page = page.replace("<head>", f'<head>\n<script src="{VIS_NETWORK_URL}"></script>', 1)
    return page.replace("</body>", f"{_AFTER_DRAW}</body>", 1)


def render_dag(state: TaskState, *, height: int = 420) -> None:
    """Draw the DAG in an iframe; fall back to Graphviz if the page cannot be built."""
    if not state.steps:
        st.caption("No steps yet.")
        return
    try:
        page = dag_html(state, height=height)
    except Exception as exc:  # pyvis or the static copy failed: still show the graph.
        st.caption(f"Interactive graph unavailable ({type(exc).__name__}); showing Graphviz.")
        st.graphviz_chart(to_dot(collapse_older(build_dag(state), keep=MAX_DRAWN_STEPS)))
        return
    st.iframe(page, height=height + 10)
