"""The live step DAG: vis-network through pyvis, served from the app's own static folder.

pyvis writes the page; we then strip every tag that would load from a CDN (its Bootstrap and
vis-network links) and load vis-network from `/app/static/`, copied there from the pinned
pyvis package. When vis-network cannot be shown, `st.graphviz_chart` draws the same graph.

Step text (labels, tooltips) reaches the page only inside JSON strings that pyvis writes
with Jinja's `tojson`, which writes `<`, `>`, `&` and `'` as JSON unicode escapes: no step
text can close the script or form a tag. vis-network draws labels on a canvas with
`font.multi` off, so they are never parsed as markup. HTML-escaping them for `multi: "html"`
does not work in vis-network 9.1.2: its entity decoding is broken, so `&lt;img` is drawn
garbled, and a label holding `&` and an unmatched `(` throws and blanks the graph. Tooltips
are built by `_AFTER_DRAW` as DOM text (`textContent`). No node gets a `title` from pyvis:
pyvis swaps in a popup that sets `innerHTML` from the title when any title contains "href".
"""

from __future__ import annotations

import json
import os
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
    "nodes": {"shape": "box", "font": {"multi": False, "size": 14}, "margin": 8},
    "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.6}}, "smooth": False},
}
# Runs after pyvis's drawGraph(): turns each node's plain-text `tip` into a tooltip element
# through textContent (never innerHTML), and when fitting the whole graph made the labels too
# small to read, shows the newest step near the bottom at a readable zoom (zoom out for more).
_AFTER_DRAW = """
<style>
  body { margin: 0; font-family: sans-serif; }
  #mynetwork { float: none !important; border: none !important; }
  div.vis-tooltip { position: absolute; visibility: hidden; max-width: 420px; padding: 6px;
    white-space: pre-wrap; overflow-wrap: anywhere; background: #fffde7; color: #212121;
    border: 1px solid #999; border-radius: 4px; font-size: 12px; pointer-events: none; }
</style>
<script>
  (function () {
    nodes.forEach(function (node) {
      if (typeof node.tip === "string") {
        var box = document.createElement("div");
        box.textContent = node.tip;
        nodes.update({ id: node.id, title: box });
      }
    });
    var ids = nodes.getIds();
    if (ids.length && network.getScale() < 0.6) {
      var newest = ids[ids.length - 1];
      var below = document.getElementById("mynetwork").clientHeight / 2 - 60;
      network.moveTo({
        position: network.getPositions([newest])[newest], scale: 0.9, offset: { x: 0, y: below }
      });
    }
    window.stepwiseDag = { nodes: nodes, edges: edges, network: network };
  })();
</script>
"""


def ensure_static_assets() -> Path:
    """Copy vis-network from the pyvis package into the app's static folder (once).

    The copy is written beside the target and renamed into place, so a browser (or a second
    app process) never loads a half-written script.
    """
    target = STATIC_DIR / VIS_NETWORK_FILE
    if not target.exists() or target.stat().st_size != _PYVIS_VIS.stat().st_size:
        STATIC_DIR.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(_PYVIS_VIS, partial)
        os.replace(partial, target)
    return target


def _tip(node: dict[str, Any]) -> str:
    return "\n".join(part for part in (node["label"], node["title"]) if part)


def _network(graph: nx.DiGraph, *, height: int) -> Network:
    data = to_vis_data(graph)
    net = Network(height=f"{height}px", width="100%", directed=True, cdn_resources="remote")
    for node in data["nodes"]:
        # No `group`: pyvis drops a node's colour when it has one. No `title`: see the module
        # docstring. `shape` must be given, or pyvis sets "dot" on every node.
        net.add_node(
            node["id"],
            label=node["label"],
            shape="box",
            color=node["color"],
            font=node["font"],
            level=node["level"],
            shapeProperties=node["shapeProperties"],
            tip=_tip(node),
            status=node["group"],  # Read by tests and tools; vis-network ignores it.
        )
    for edge in data["edges"]:
        net.add_edge(edge["from"], edge["to"], dashes=edge["dashes"])
    net.set_options(json.dumps(_OPTIONS))
    return net


def dag_html(state: TaskState, *, height: int = 420, max_steps: int = MAX_DRAWN_STEPS) -> str:
    """A self-contained page drawing the task's DAG, loading scripts only from this app.

    Runs longer than `max_steps` steps show their newest `max_steps` steps and one node that
    stands for the older ones.
    """
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
        ensure_static_assets()  # A page without its script would stay blank.
        page = dag_html(state, height=height)
    except Exception as exc:  # pyvis or the static copy failed: still show the graph.
        st.caption(f"Interactive graph unavailable ({type(exc).__name__}); showing Graphviz.")
        st.graphviz_chart(to_dot(collapse_older(build_dag(state), keep=MAX_DRAWN_STEPS)))
        return
    st.iframe(page, height=height + 10)
