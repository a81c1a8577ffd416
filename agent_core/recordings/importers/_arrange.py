"""One trace's spans (observations, runs) put in the order they happened, as recorded events.

Every format gives a tree of spans with start times; the task is the model and tool calls in
time order. The tree still matters for three things: a model call inside another model call
(an SDK's span under a framework's) is the same call recorded twice, so only the outer one
counts; a span that holds no model or tool call and is none itself is kept as a note; and a
span whose parent the file lacks is taken as it is, with a gap noted. Nothing here recurses,
so a tree 10,000 levels deep is read like a flat one.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_core.recordings.importers._messages import Reading
from agent_core.recordings.importers.recorded import (
    RecordedEvent,
    RecordedModelCall,
    RecordedNote,
    RecordedToolCall,
)

__all__ = ["MAX_NOTES", "SpanNode", "arrange"]

MAX_NOTES = 100
"""Notes kept for one trace; past it the rest are counted in one gap."""


@dataclass(slots=True)
class SpanNode:
    """One span of a trace, with what it recorded when it is a model or tool call."""

    id: str
    parent: str
    start: float
    """Seconds since the epoch (0 when unknown: then the file's order decides)."""
    order: int
    label: str
    """How a note names it: its name and kind."""
    call: RecordedModelCall | RecordedToolCall | None = None


def arrange(nodes: list[SpanNode], reading: Reading) -> list[RecordedEvent]:
    """The trace's calls and notes in time order (see the module docstring)."""
    by_id = {node.id: node for node in nodes}
    _note_orphans(nodes, by_id, reading)
    nested = _nested_model_calls(nodes, by_id)
    holding = _holding_calls(nodes, by_id)
    events: list[tuple[float, int, RecordedEvent]] = []
    notes = 0
    for node in nodes:
        if node.call is not None and node.id not in nested:
            events.append((node.start, node.order, node.call))
        elif node.call is None and node.id not in holding:
            notes += 1
            if notes <= MAX_NOTES:
                note = RecordedNote(span=node.id, message=f"{node.label}: not a model or tool call")
                events.append((node.start, node.order, note))
    if notes > MAX_NOTES:
        reading.gap(f"{notes - MAX_NOTES} more spans that are no model or tool call (not kept)")
    events.sort(key=lambda item: (item[0], item[1]))
    return [event for _, _, event in events]


def _note_orphans(nodes: list[SpanNode], by_id: dict[str, SpanNode], reading: Reading) -> None:
    orphans = [node for node in nodes if node.parent and node.parent not in by_id]
    if orphans:
        first = orphans[0]
        reading.gap(
            f"{len(orphans)} span(s) name a parent the file lacks (first: span {first.id} names "
            f"{first.parent}); the trace may be cut off, so they are read in time order"
        )


def _parent(node: SpanNode, by_id: dict[str, SpanNode]) -> SpanNode | None:
    return by_id.get(node.parent) if node.parent else None


def _nested_model_calls(nodes: list[SpanNode], by_id: dict[str, SpanNode]) -> set[str]:
    """The model calls with a model call above them (recorded twice: the outer one counts)."""
    above: dict[str, bool] = {}  # Whether a model call is above the span.
    for node in nodes:
        chain: list[SpanNode] = []
        seen: set[str] = set()
        current: SpanNode | None = node
        while current is not None and current.id not in above and current.id not in seen:
            seen.add(current.id)
            chain.append(current)
            current = _parent(current, by_id)
        known = False
        if current is not None and current.id in above:
            known = above[current.id] or isinstance(current.call, RecordedModelCall)
        for link in reversed(chain):
            above[link.id] = known
            known = known or isinstance(link.call, RecordedModelCall)
    return {n.id for n in nodes if isinstance(n.call, RecordedModelCall) and above.get(n.id)}


def _holding_calls(nodes: list[SpanNode], by_id: dict[str, SpanNode]) -> set[str]:
    """The spans with a model or tool call below them: structure, not notes."""
    holding: set[str] = set()
    for node in nodes:
        if node.call is None:
            continue
        current = _parent(node, by_id)
        while current is not None and current.id not in holding:
            holding.add(current.id)
            current = _parent(current, by_id)
    return holding
