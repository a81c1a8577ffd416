"""What LangGraph Studio shows, as plain data: the graph's topology and each step's state.

`topology` reads the compiled graph's own drawing (`get_graph()`): its nodes, START and END
included, and its edges, a conditional one (`add_conditional_edges`) marked as such. It is
JSON, kept once per task in the adapter's record, so a task read without its code (finished,
imported) still draws it. `readable_state` is a checkpoint's channel values as JSON a person
reads: messages as role and shortened text, anything else as `json_safe` gives it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.pregel import Pregel

from agent_core.adapters.langgraph._messages import json_safe

__all__ = ["STATE_AFTER", "TOPOLOGY", "readable_state", "topology"]

TOPOLOGY = "topology"
"""The key of the graph's topology in the adapter's record (`task.extra_state["langgraph"]`)."""

STATE_AFTER = "state_after"
"""The `step_state` key of the graph's state after a super-step (`readable_state`)."""

_SHORT = 300
"""Characters of a message's text kept in a step's state: the card is for reading, not a dump."""


def topology(graph: Pregel) -> dict[str, Any]:
    """The graph's nodes and edges as JSON, START and END under LangGraph's own names.

    Returns:
        `{"nodes": [name, ...], "edges": [{"source", "target", "conditional", "label"}]}`.
    """
    drawn = graph.get_graph()
    edges = [
        {
            "source": edge.source,
            "target": edge.target,
            "conditional": bool(edge.conditional),
            "label": "" if edge.data is None else str(edge.data),
        }
        for edge in drawn.edges
    ]
    return {"nodes": list(drawn.nodes), "edges": edges}


def readable_state(values: Any) -> Any:
    """A checkpoint's channel values as readable JSON, each message shortened."""
    if not isinstance(values, dict):
        return json_safe(values)
    return {key: _readable(value) for key, value in values.items()}


def _readable(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return _message(value)
    if isinstance(value, list) and any(isinstance(item, BaseMessage) for item in value):
        return [_readable(item) for item in value]
    return json_safe(value)


def _message(message: BaseMessage) -> dict[str, Any]:
    text = message.text
    shown: dict[str, Any] = {
        "type": message.type,
        "text": text if len(text) <= _SHORT else text[:_SHORT] + f"… ({len(text):,} chars)",
    }
    calls = getattr(message, "tool_calls", None)
    if calls:
        shown["tool_calls"] = [{"name": c["name"], "args": json_safe(c["args"])} for c in calls]
    return shown
