"""The live step DAG: a Streamlit component that draws it with vis-network and reports clicks.

`render_dag` draws the graph with the bidirectional component in `dag_component/` (a plain
`index.html` + `dag.js` speaking Streamlit's components v1 protocol, no build step): the
graph goes to the browser as one JSON string (`dag_json`), and a click on a node comes back
as that step's id. One string, not lists and dicts: Streamlit checks each list or dict
argument for a dataframe, which imports pandas (seconds, the first time) and costs each
rerun; and the browser compares one string to know whether to redraw. The string is kept
per task version, so a rerun that changed nothing in the task builds no graph.

A long run folds its older steps into one node ("… 440 earlier steps"); clicking it calls
`on_unfold`, and the caller draws more steps (`max_steps`).
vis-network is loaded from the component's own folder, where the bundle of the pinned pyvis
(vis-network 9.1.2) is kept in the repository and ships in the wheel: an installed app writes
nothing beside its code (a test holds the copy equal to pyvis's). Nothing loads from a CDN.
Step text is drawn by vis-network on a canvas with `font.multi` off, so it is never parsed as
markup, and `dag.js` builds tooltips and the legend with `textContent`, never `innerHTML`.
When the component cannot be shown, `st.graphviz_chart` draws the same graph.

`dag_html` writes the same graph as one self-contained page (used by `make bench`). pyvis
writes the page; we then strip every tag that would load from a CDN (its Bootstrap and
vis-network links) and load vis-network from `/app/static/`, where `ensure_static_assets`
copies it from the pinned pyvis package for an app served with static files on.

In that page, step text (labels, tooltips) reaches the page only inside JSON strings that
pyvis writes with Jinja's `tojson`, which writes `<`, `>`, `&` and `'` as JSON unicode
escapes: no step text can close the script or form a tag. vis-network draws labels on a
canvas with `font.multi` off (in the component too), so they are never parsed as markup.
HTML-escaping them for `multi: "html"` does not work in vis-network 9.1.2: its entity
decoding is broken, so `&lt;img` is drawn garbled, and a label holding `&` and an unmatched
`(` throws and blanks the graph. Tooltips are built by `_AFTER_DRAW` as DOM text
(`textContent`). No node gets a `title` from pyvis: pyvis swaps in a popup that sets
`innerHTML` from the title when any title contains "href".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st
import streamlit.components.v1 as st_components

from agent_core import dag as dag_model
from agent_core.dag import COLLAPSED_NODE, build_dag_window, to_dot, to_vis_data
from agent_core.types import TaskState

if TYPE_CHECKING:  # pyvis (and the IPython it imports) loads only for `dag_html`.
    import networkx as nx
    from pyvis.network import Network

__all__ = [
    "COMPONENT_DIR",
    "MAX_DRAWN_STEPS",
    "STATIC_DIR",
    "VIS_NETWORK_URL",
    "dag_data",
    "dag_html",
    "dag_json",
    "ensure_static_assets",
    "legend_items",
    "render_dag",
]

# The `static/` folder beside app.py, which Streamlit serves for `make run` (where the
# top-level `components/` package sat before it moved under stepwise/app).
STATIC_DIR = Path(__file__).resolve().parents[3] / "static"
COMPONENT_DIR = Path(__file__).resolve().parent / "dag_component"
"""The DAG component's frontend (index.html, dag.js) and its copy of vis-network."""
COMPONENT_NAME = "stepwise_dag"
VIS_NETWORK_FILE = "vis-network.min.js"
VIS_NETWORK_URL = f"/app/static/{VIS_NETWORK_FILE}"
MAX_DRAWN_STEPS = 60
"""Longer runs fold their older steps into one node, so the graph stays readable and fast."""
_CACHED_GRAPHS = 32
_FOLD_TIP = "Click to show the steps before these."
_EXTERNAL_TAGS = re.compile(
    r"<link\b[^>]*>|<script\b[^>]*\bsrc=[^>]*>\s*</script>|<center>\s*<h1>.*?</h1>\s*</center>",
    re.DOTALL | re.IGNORECASE,
)


def dag_options(*, level_separation: int = 90, node_spacing: int = 200) -> dict[str, Any]:
    """vis-network options for a top-down DAG of boxes, physics off."""
    hierarchical = {
        "enabled": True,
        "direction": "UD",
        "sortMethod": "directed",
        "levelSeparation": level_separation,
        "nodeSpacing": node_spacing,  # Wrapped labels are at most 180 wide: keep them apart.
    }
    return {
        "layout": {"hierarchical": hierarchical},
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 120, "navigationButtons": False},
        # Labels wrap at 180 canvas units rather than run wide: a planner's parallel steps
        # side by side made the fitted graph so wide that its text was drawn about 8 px high.
        "nodes": {
            "shape": "box",
            "font": {"multi": False, "size": 14},
            "margin": 8,
            "widthConstraint": {"maximum": 180},
        },
        "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.6}}, "smooth": False},
    }


_OPTIONS = dag_options()
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
    """Copy vis-network from pyvis into the static folder (once), for `dag_html`'s pages.

    Returns the copy. It is written beside its target and renamed into place, so a browser
    (or a second app process) never loads a half-written script. The app itself needs no
    copy: the DAG component ships its own (`COMPONENT_DIR`).
    """
    target = STATIC_DIR / VIS_NETWORK_FILE
    bundle = pyvis_bundle()
    if not target.exists() or target.stat().st_size != bundle.stat().st_size:
        STATIC_DIR.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(bundle, partial)
        os.replace(partial, target)
    return target


def pyvis_bundle() -> Path:
    """vis-network as the pinned pyvis package ships it (the component keeps a copy)."""
    import pyvis

    return Path(pyvis.__file__).parent / "lib" / "vis-9.1.2" / VIS_NETWORK_FILE


def _tip(node: dict[str, Any]) -> str:
    return "\n".join(part for part in (node["label"], node["title"]) if part)


def _network(graph: nx.DiGraph, *, height: int) -> Network:
    from pyvis.network import Network

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
    graph = build_dag_window(state, keep=max_steps)
    page = _network(graph, height=height).generate_html(notebook=False)
    page = _EXTERNAL_TAGS.sub("", page)
    page = page.replace("<head>", f'<head>\n<script src="{VIS_NETWORK_URL}"></script>', 1)
    return page.replace("</body>", f"{_AFTER_DRAW}</body>", 1)


def dag_data(state: TaskState, *, max_steps: int = MAX_DRAWN_STEPS) -> dict[str, Any]:
    """The component's graph: vis nodes (plain text, a `tip` each), edges, options, legend.

    Runs longer than `max_steps` steps show their newest `max_steps` steps and one node that
    stands for the older ones. Each node's `status` is its status group (read by tests and
    tools; vis-network ignores it).
    """
    data = to_vis_data(build_dag_window(state, keep=max_steps))
    nodes = [
        {
            "id": node["id"],
            "label": node["label"],
            "shape": "box",
            "color": node["color"],
            "font": node["font"],
            "level": node["level"],
            "shapeProperties": node["shapeProperties"],
            "tip": _FOLD_TIP if node["id"] == COLLAPSED_NODE else _tip(node),
            "status": node["group"],
        }
        for node in data["nodes"]
    ]
    edges = [
        {"from": edge["from"], "to": edge["to"], "dashes": edge["dashes"]} for edge in data["edges"]
    ]
    legend = legend_items(data["legend"]) if "legend" in data else legend_items()
    return {"nodes": nodes, "edges": edges, "options": _OPTIONS, "legend": legend}


def legend_items(entries: Any = None) -> list[dict[str, Any]]:
    """What each node colour means: `{"label", "color"}` (and `meaning`) per entry.

    `entries` are the runtime's legend (`to_vis_data(...)["legend"]`: (group, colour,
    meaning) tuples); without them, `agent_core.dag.legend()`.
    """
    if entries is None:
        entries = dag_model.legend()
    listed = list(entries.items()) if isinstance(entries, dict) else list(entries)
    return [item for entry in listed if (item := _legend_item(entry)) is not None]


def _legend_item(entry: Any) -> dict[str, Any] | None:
    if not isinstance(entry, (tuple, list)) or len(entry) < 2:
        return None
    group, color, *rest = entry
    item = {"label": str(group).replace("_", " "), "color": str(color)}
    if rest:
        item["meaning"] = str(rest[0])
    return item


def declare_dag_component(name: str = COMPONENT_NAME) -> Any:
    """The click-aware DAG component, registered under `name` (one name per kind of graph).

    Declared on each draw: Streamlit registers a component only while a script runs, and
    this module may have been imported before (a test, the CLI).

    Raises:
        FileNotFoundError: The component's copy of vis-network is missing (a broken
            installation): drawn, the component would stay blank.
    """
    bundle = COMPONENT_DIR / VIS_NETWORK_FILE
    if not bundle.is_file():
        raise FileNotFoundError(f"the DAG component's script is missing: {bundle}")
    return st_components.declare_component(name, path=str(COMPONENT_DIR))


def on_node_click(
    key: str,
    on_select: Callable[[str | None], None],
    on_unfold: Callable[[], None] | None = None,
) -> Callable[[], None]:
    """The `on_change` of the component drawn under `key`.

    It calls `on_select(clicked node id)`, or `on_unfold()` for the node of folded steps.
    """
    return partial(_clicked, key, on_select, on_unfold)


def _clicked(
    key: str, on_select: Callable[[str | None], None], on_unfold: Callable[[], None] | None
) -> None:
    value = st.session_state.get(key)
    if not isinstance(value, dict):
        return
    step = value.get("step")
    if step == COLLAPSED_NODE:
        if on_unfold is not None:
            on_unfold()
        return
    on_select(step if isinstance(step, str) else None)


_graphs: OrderedDict[Hashable, str] = OrderedDict()
_graphs_lock = threading.Lock()


def _graph_key(state: TaskState, max_steps: int) -> Hashable | None:
    """What the drawn graph depends on, or None for a state never stored (built by hand).

    The version moves with every commit; the step statuses are there too, for a state a
    running step changed in memory before it committed.
    """
    if state.version < 1:
        return None
    statuses = tuple(step.status for step in state.steps.values())
    return (state.task_id, state.version, max_steps, len(state.outputs), hash(statuses))


def dag_json(state: TaskState, *, max_steps: int = MAX_DRAWN_STEPS) -> str:
    """`dag_data` as the JSON string the component reads, kept per task version.

    Sessions on one task share it: a rerun that changed nothing in the task, and every
    other tab open on it, reuse the string instead of building the graph again.
    """
    key = _graph_key(state, max_steps)
    with _graphs_lock:
        cached = _graphs.get(key) if key is not None else None
        if cached is not None:
            _graphs.move_to_end(key)
            return cached
    text = json.dumps(dag_data(state, max_steps=max_steps), separators=(",", ":"))
    if key is not None:
        with _graphs_lock:
            _graphs[key] = text
            while len(_graphs) > _CACHED_GRAPHS:
                _graphs.popitem(last=False)
    return text


def render_dag(
    state: TaskState,
    *,
    height: int = 420,
    selected: str | None = None,
    on_select: Callable[[str | None], None] | None = None,
    on_unfold: Callable[[], None] | None = None,
    max_steps: int = MAX_DRAWN_STEPS,
    key: str | None = None,
) -> None:
    """Draw the DAG with the click-aware component; fall back to Graphviz if it cannot load.

    `selected` is drawn selected. A click on a step calls `on_select` with its id (None for
    a click on empty space) before the page reruns, like a widget's `on_change`. Steps
    beyond the newest `max_steps` are folded into one node; a click on it calls
    `on_unfold`.
    """
    if not state.steps:
        st.caption("No steps yet.")
        return
    key = key or f"dag-{state.task_id}"
    try:
        graph = dag_json(state, max_steps=max_steps)
        component = declare_dag_component()
    except Exception as exc:  # The graph or the component failed: still show the graph.
        st.caption(f"Interactive graph unavailable ({type(exc).__name__}); showing Graphviz.")
        st.graphviz_chart(to_dot(build_dag_window(state, keep=max_steps)))
        return
    select = on_select or (lambda _step: None)
    component(
        graph=graph,
        selected=selected,
        height=height,
        key=key,
        default=None,
        on_change=None
        if on_select is None and on_unfold is None
        else on_node_click(key, select, on_unfold),
    )
