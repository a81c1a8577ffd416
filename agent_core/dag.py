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
import math
import re
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

from agent_core.errors import UserError
from agent_core.types import (
    INTERRUPT_KEY,
    StepKind,
    StepStatus,
    TaskState,
    TaskStep,
    TaskStepOutput,
)
from agent_core.workers.react_format import ReActParseError, parse_react_output

if TYPE_CHECKING:  # Imported where a graph is built: the app starts without it (0.2-0.6 s).
    import networkx as nx

__all__ = [
    "COLLAPSED_NODE",
    "STATUS_COLORS",
    "TOOL_ERROR",
    "build_dag",
    "build_dag_window",
    "collapse_older",
    "describe_step",
    "display_value",
    "format_call",
    "format_result",
    "legend",
    "parse_error_of",
    "rejection_of",
    "status_group",
    "to_dot",
    "to_vis_data",
]

AWAITING_APPROVAL = "awaiting_approval"
REJECTED = "rejected"
TOOL_ERROR = "tool_error"
"""The group of a step that ran but whose tool call failed (the model read the error)."""
COLLAPSED_NODE = "collapsed"
"""The id (and status group) of the node that stands for the steps `collapse_older` folded."""

STATUS_COLORS: dict[str, str] = {
    StepStatus.UPCOMING.value: "#bbdefb",
    AWAITING_APPROVAL: "#ffcc80",
    StepStatus.RUNNING.value: "#ffe082",
    StepStatus.COMPLETED.value: "#c8e6c9",
    REJECTED: "#e1bee7",
    TOOL_ERROR: "#ffab91",
    StepStatus.FAILED.value: "#ef9a9a",
    StepStatus.SKIPPED.value: "#f5f5f5",
    StepStatus.UNDONE.value: "#e0e0e0",
    COLLAPSED_NODE: "#ffffff",
}
"""Node fill colour per status group (a step status, or "awaiting_approval" and "rejected"),
shared by every renderer."""

_MEANINGS: dict[str, str] = {
    StepStatus.UPCOMING.value: "queued, not run yet",
    AWAITING_APPROVAL: "tool call waiting for you: run, edit or reject it",
    StepStatus.RUNNING.value: "running now",
    StepStatus.COMPLETED.value: "ran",
    REJECTED: "tool call you rejected: it did not run",
    TOOL_ERROR: "tool call failed: the model read its error",
    StepStatus.FAILED.value: "failed: see its error",
    StepStatus.SKIPPED.value: "skipped: it did not run",
    StepStatus.UNDONE.value: "undone: a branch you went back from",
    COLLAPSED_NODE: "earlier steps, folded into one node: click it to unfold them",
}

_UNKNOWN_STATUS_COLOR = "#ffffff"
_BORDER_COLOR = "#616161"
_BORDER_COLORS = {
    StepStatus.UNDONE.value: "#9e9e9e",
    StepStatus.SKIPPED.value: "#9e9e9e",
    AWAITING_APPROVAL: "#e65100",
    REJECTED: "#8e24aa",
    TOOL_ERROR: "#c62828",
}
_BORDER_DASHES: dict[str, bool | list[int]] = {
    StepStatus.UNDONE.value: True,
    StepStatus.SKIPPED.value: [2, 4],
}
_DOT_STYLES = {
    StepStatus.UNDONE.value: "rounded,filled,dashed",
    StepStatus.SKIPPED.value: "rounded,filled,dotted",
    AWAITING_APPROVAL: "rounded,filled,bold",
    REJECTED: "rounded,filled,bold",
    TOOL_ERROR: "rounded,filled,bold",
}
_SELECTED_BORDER_COLOR = "#1e88e5"
_FONT_COLOR = "#212121"
_UNDONE_FONT_COLOR = "#757575"
_LABEL_MAX_CHARS = 60
_CALL_MAX_CHARS = 26
_ARG_MAX_CHARS = 12
_ELLIPSIS = "…"
_WHOLE_FLOAT = re.compile(r"-?\d+\.0+")
_SAFE_INT = 2**53  # Whole floats below this are exact integers.


def build_dag(state: TaskState, *, max_chars: int = 200) -> nx.DiGraph:
    """The task's steps as a directed graph, one node per step id.

    Node attributes: `kind`, `status`, `group` (see `status_group`), `branch_id`, `number`,
    `edited`, `undone`, `rejection` (the person's reason, or None), `label` (what the step did,
    short: ``"2 · multiply(121, 3) → 363"``, ``"1 · plan: 3 items"``), and `input` / `output`
    as short plain text cut to `max_chars` (`output` holds the step's error when it has one;
    `error` says whether it does). Edges run from each `prev_step_ids` entry to the step
    (``relation="next"``) and from each `depends_on` entry not already linked
    (``relation="depends_on"``). Ids that name no step in `state` are skipped rather than
    drawn as empty nodes.

    The text is not HTML-escaped; a renderer that builds HTML must escape it.

    Raises:
        UserError: `max_chars` is less than 1.
    """
    if max_chars < 1:
        raise UserError(f"max_chars must be at least 1, got {max_chars}")
    import networkx as nx

    graph = nx.DiGraph()
    calls_queued = _tool_steps_queued_by(state)
    for step in state.steps.values():
        attrs = _node_attrs(state, step, calls_queued.get(step.step_id, []), max_chars=max_chars)
        graph.add_node(step.step_id, **attrs)
    for step in state.steps.values():
        for prev_id in step.prev_step_ids:
            if prev_id in state.steps:
                graph.add_edge(prev_id, step.step_id, relation="next")
        for dep_id in step.depends_on:
            if dep_id in state.steps and not graph.has_edge(dep_id, step.step_id):
                graph.add_edge(dep_id, step.step_id, relation="depends_on")
    return graph


def build_dag_window(state: TaskState, *, keep: int, max_chars: int = 200) -> nx.DiGraph:
    """`collapse_older(build_dag(state), keep=keep)`, building only the newest `keep` steps.

    A long task's page draws a few dozen of its thousands of steps: building every node (and
    reading every step's output for its label) on each click cost most of the click.

    Raises:
        UserError: `keep` or `max_chars` is less than 1.
    """
    if keep < 1:
        raise UserError(f"keep must be at least 1, got {keep}")
    if len(state.steps) <= keep:
        return build_dag(state, max_chars=max_chars)
    kept = dict(islice(reversed(state.steps.items()), keep))
    window = state.model_copy(update={"steps": dict(reversed(kept.items()))})
    drawn = build_dag(window, max_chars=max_chars)
    graph = type(drawn)()
    graph.add_node(COLLAPSED_NODE, **_folded_attrs(len(state.steps) - keep))
    graph.add_nodes_from(drawn.nodes(data=True))
    for step_id in window.steps:
        step = state.steps[step_id]
        if any(s in state.steps and s not in kept for s in [*step.prev_step_ids, *step.depends_on]):
            graph.add_edge(COLLAPSED_NODE, step_id, relation="next")
    graph.add_edges_from(drawn.edges(data=True))
    return graph


def _folded_attrs(count: int) -> dict[str, Any]:
    """The attributes of the node standing for `count` folded steps."""
    return {
        "kind": "collapsed",
        "status": COLLAPSED_NODE,
        "group": COLLAPSED_NODE,
        "label": f"… {_count(count, 'earlier step')}",
        "input": "",
        "output": "",
        "undone": False,
        "error": False,
    }


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
    window = type(graph)()
    # Added first, so it stays the oldest node if the window is collapsed again.
    window.add_node(COLLAPSED_NODE, **_folded_attrs(len(folded)))
    window.add_nodes_from((node, graph.nodes[node]) for node in kept)
    for source, target, data in graph.edges(data=True):
        if target in folded:
            continue  # Edges into folded steps go with them.
        if source in folded:
            window.add_edge(COLLAPSED_NODE, target, relation="next")
        else:
            window.add_edge(source, target, **data)
    return window


def legend(graph: nx.DiGraph | None = None) -> list[tuple[str, str, str]]:
    """What the node colours mean: (status group, fill colour, meaning), in a fixed order.

    With `graph`, only the groups its nodes use; without, every group.
    """
    used = None if graph is None else {data.get("group") for _, data in graph.nodes(data=True)}
    return [
        (group, STATUS_COLORS[group], meaning)
        for group, meaning in _MEANINGS.items()
        if used is None or group in used
    ]


def to_dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT text for a graph from `build_dag`, every string quoted and DOT-escaped.

    A `cluster_legend` subgraph holds one node per status group the graph uses (ids
    ``legend:<group>``), filled with its colour and labelled with its meaning.
    """
    lines = [
        "digraph task {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    for node_id, data in graph.nodes(data=True):
        group = _group(data)
        attrs = {
            "label": str(data.get("label", node_id)),
            "tooltip": _tooltip(data),
            "fillcolor": _color(data),
            "style": _DOT_STYLES.get(group, "rounded,filled"),
        }
        if group in _BORDER_COLORS:
            attrs["color"] = _BORDER_COLORS[group]
        if data.get("undone"):
            attrs["fontcolor"] = _UNDONE_FONT_COLOR
        lines.append(f"  {_dot_quote(str(node_id))} [{_dot_attrs(attrs)}];")
    for source, target, data in graph.edges(data=True):
        edge = f"  {_dot_quote(str(source))} -> {_dot_quote(str(target))}"
        if data.get("relation") == "depends_on":
            edge += " [style=dashed]"
        lines.append(edge + ";")
    entries = legend(graph)
    if entries:
        lines += ["  subgraph cluster_legend {", f"    label={_dot_quote('Legend')};"]
        for group, color, meaning in entries:
            attrs = {
                "label": f"{group.replace('_', ' ')}: {meaning}",
                "fillcolor": color,
                "style": _DOT_STYLES.get(group, "rounded,filled"),
            }
            lines.append(f"    {_dot_quote(f'legend:{group}')} [{_dot_attrs(attrs)}];")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_vis_data(graph: nx.DiGraph) -> dict[str, list[Any]]:
    """vis-network nodes and edges for a graph from `build_dag`, as plain (unescaped) text.

    Each node's `level` is its longest-path depth from a root, for a hierarchical layout in
    which steps that can run in parallel share a level. `color` is a vis colour object whose
    background is the group's colour; undone steps also get a grey dashed border and grey
    text, skipped ones a dotted border, and steps awaiting approval or rejected a border of
    their own. `group` is the status group (for reading the data; no vis groups are defined).
    `legend` is `legend(graph)`: (group, colour, meaning) for each group drawn.
    """
    levels = _levels(graph)
    nodes = [
        {
            "id": node_id,
            "label": str(data.get("label", node_id)),
            "title": _tooltip(data),
            "color": _vis_color(data),
            "font": {"color": _UNDONE_FONT_COLOR if data.get("undone") else _FONT_COLOR},
            "group": _group(data),
            "level": levels[node_id],
            "shapeProperties": {"borderDashes": _BORDER_DASHES.get(_group(data), False)},
        }
        for node_id, data in graph.nodes(data=True)
    ]
    edges = [
        {"from": source, "to": target, "dashes": data.get("relation") == "depends_on"}
        for source, target, data in graph.edges(data=True)
    ]
    return {"nodes": nodes, "edges": edges, "legend": legend(graph)}


# ------------------------------------------------------------------ what a step is and did


def rejection_of(step: TaskStep, output: TaskStepOutput | None = None) -> str | None:
    """The reason a person gave for rejecting the step's tool call, or None if they did not.

    Reads `step.rejection`; for tasks stored before it existed, the `"rejected"` key an older
    `reject_step` put into the call. A rejected call recorded without a reason gives "".
    """
    reason = getattr(step, "rejection", None)
    if isinstance(reason, str):
        return reason
    if isinstance(step.input, Mapping) and "rejected" in step.input:
        return str(step.input["rejected"])
    if output is not None and any(getattr(call, "rejected", False) for call in output.tool_calls):
        return ""
    return None


def parse_error_of(output: TaskStepOutput) -> str | None:
    """Why a reasoning step's ReAct reply could not be read, or None if it could.

    The ReAct worker answers such a reply with an observation ("Error: ...") that only the
    next step's prompt shows; a step that ran no tool, gave no answer and queued no call,
    whose reply the ReAct format refuses, had that error, and its own card says so.
    """
    step = output.task_step
    if step.kind is not StepKind.LLM or output.is_last or output.tool_calls:
        return None
    if not isinstance(output.output, str) or output.error:
        return None
    if any(next_step.kind is not StepKind.LLM for next_step in output.next_steps):
        return None  # A call queued for approval: the reply was read.
    try:
        parse_react_output(output.output)
    except ReActParseError as exc:
        return str(exc)
    return None


def status_group(step: TaskStep, output: TaskStepOutput | None = None) -> str:
    """The step's status as drawn: its status, or "rejected", "tool_error", "awaiting_approval".

    A rejected tool call is "rejected" (undone wins: it is drawn as undone). A completed step
    whose tool call failed (the tool raised, or was unknown) is "tool_error": the step ran,
    but not as the model meant. An upcoming tool call that waits for a person
    (`needs_approval`, or held by a breakpoint) is "awaiting_approval".
    """
    status = step.status.value
    if step.status in (StepStatus.COMPLETED, StepStatus.FAILED):
        if rejection_of(step, output) is not None:
            return REJECTED
        if step.status is StepStatus.COMPLETED and _a_call_failed(output):
            return TOOL_ERROR
    elif step.status is StepStatus.UPCOMING and _awaits_person(step):
        return AWAITING_APPROVAL
    return status


def display_value(value: Any) -> Any:
    """`value` for display: whole floats (exact ones) as ints, the rest as they are, nested."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        if abs(value) < _SAFE_INT:
            return int(value)
    if isinstance(value, Mapping):
        return {key: display_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [display_value(item) for item in value]
    return value


def format_call(tool: str, args: Mapping[str, Any], *, max_arg_chars: int | None = None) -> str:
    """``tool(121, 3)``: the call with its argument values in order, as the model wrote them.

    Strings are quoted; with `max_arg_chars`, each value is cut to that length (one line).
    """
    values = []
    for value in args.values():
        text = _json(display_value(value))
        if max_arg_chars is not None:
            text = _truncate(_one_line(text), max_arg_chars)
        values.append(text)
    return f"{tool}({', '.join(values)})"


def format_result(content: str) -> str:
    """A tool's result for display: a whole number written as a float ("363.0") without ".0"."""
    stripped = content.strip()
    if _WHOLE_FLOAT.fullmatch(stripped) and abs(float(stripped)) < _SAFE_INT:
        return stripped.split(".", 1)[0]
    return content


# ---------------------------------------------------------------------------- node building


def _node_attrs(
    state: TaskState, step: TaskStep, calls_queued: list[TaskStep], *, max_chars: int
) -> dict[str, Any]:
    output = state.outputs.get(step.step_id)
    error = step.error or (output.error if output is not None else None)
    if error:
        output_text = error
    elif output is not None and output.output is not None:
        output_text = str(output.output)
        if step.kind is StepKind.TOOL:
            output_text = format_result(output_text)
    else:
        output_text = ""
    rejection = rejection_of(step, output)
    return {
        "kind": str(step.kind),
        "status": str(step.status),
        "group": status_group(step, output),
        "branch_id": step.branch_id,
        "number": step.number,
        "edited": step.edited and rejection is None,
        "undone": step.status == StepStatus.UNDONE,
        "rejection": rejection,
        "error": bool(error),
        "input": _truncate(_input_text(_shown_input(step)), max_chars),
        "output": _truncate(output_text, max_chars),
        "label": _label(step, output, calls_queued, max_chars=min(max_chars, _LABEL_MAX_CHARS)),
    }


def _tool_steps_queued_by(state: TaskState) -> dict[str, list[TaskStep]]:
    queued: dict[str, list[TaskStep]] = {}
    for step in state.steps.values():
        # An undone call and its re-run are one call: count the one that stands.
        if step.kind is StepKind.TOOL and step.status is not StepStatus.UNDONE:
            for prev_id in step.prev_step_ids:
                queued.setdefault(prev_id, []).append(step)
    return queued


def _a_call_failed(output: TaskStepOutput | None) -> bool:
    return output is not None and any(call.is_error for call in output.tool_calls)


def _awaits_person(step: TaskStep) -> bool:
    return step.kind is StepKind.TOOL and (step.needs_approval or bool(step.step_state.get("held")))


def _shown_input(step: TaskStep) -> Any:
    # An older reject_step wrote its reason into the call; the call is what was proposed.
    if isinstance(step.input, Mapping) and "rejected" in step.input:
        return {key: value for key, value in step.input.items() if key != "rejected"}
    return step.input


def _input_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(display_value(value), separators=(",", ":"), ensure_ascii=False, default=str)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_call(
    step: TaskStep, output: TaskStepOutput | None
) -> tuple[str, Mapping[str, Any]] | None:
    call = _shown_input(step)
    if isinstance(call, str):
        try:
            call = json.loads(call)
        except ValueError:
            call = None
    if isinstance(call, Mapping):
        tool, args = call.get("tool"), call.get("args", {})
        if isinstance(tool, str) and isinstance(args, Mapping):
            return tool, args
    if output is not None and output.tool_calls:
        return output.tool_calls[0].tool_name, output.tool_calls[0].args
    return None


def _label(
    step: TaskStep,
    output: TaskStepOutput | None,
    calls_queued: list[TaskStep],
    *,
    max_chars: int,
) -> str:
    prefix = f"{step.number} · " if step.number is not None else ""
    suffix = _status_suffix(step, output)
    room = max(12, max_chars - len(prefix) - len(suffix))
    return prefix + _truncate(_one_line(_what(step, output, calls_queued)), room) + suffix


def describe_step(step: TaskStep, output: TaskStepOutput | None, *, max_chars: int = 80) -> str:
    """What the step did (or will do), in a few words: `multiply(121, 3) → 363`, `answer: …`."""
    return _truncate(_one_line(_what(step, output, [])), max_chars)


def _status_suffix(step: TaskStep, output: TaskStepOutput | None) -> str:
    group = status_group(step, output)
    if group == AWAITING_APPROVAL:
        return " · at breakpoint" if step.step_state.get("held") else " · awaiting approval"
    if group in (StepStatus.FAILED.value, StepStatus.SKIPPED.value, StepStatus.RUNNING.value):
        return f" · {group}"
    return ""


def _what(step: TaskStep, output: TaskStepOutput | None, calls_queued: list[TaskStep]) -> str:
    """What the step did (or will do), in a few words of plain text.

    A step named by its agent's framework (a LangGraph node, a model request) leads with its
    name; a tool step's call already names it.
    """
    what = _kind_what(step, output, calls_queued)
    if not step.name or step.kind is StepKind.TOOL:
        return what
    if what == str(step.kind):
        return step.name
    # A handoff's step is named for the agent it hands to, which its words already name.
    return what if what.startswith(step.name) else f"{step.name}: {what}"


def _kind_what(step: TaskStep, output: TaskStepOutput | None, calls_queued: list[TaskStep]) -> str:
    if step.kind is StepKind.TOOL:
        return _tool_what(step, output)
    if step.kind is StepKind.HUMAN and INTERRUPT_KEY in step.step_state:
        question = _json(_one_line(str(step.step_state[INTERRUPT_KEY])))
        return f"answer: {_json(_one_line(str(step.input)))}" if output else f"asks: {question}"
    if step.kind is StepKind.HUMAN:
        return f"feedback: {_json(_one_line(str(step.input or '')))}"
    if step.kind is StepKind.PLAN:
        return _plan_what(output)
    if step.kind is StepKind.DELEGATE:
        return _delegate_what(step)
    if output is not None and output.is_last and output.output is not None:
        return f"answer: {output.output}"
    if step.kind is StepKind.LLM and output is not None:
        return _reasoning_what(output, calls_queued)
    if step.kind is StepKind.CUSTOM and output is not None and output.output is not None:
        return f"custom: {output.output}"
    return str(step.kind)


def _tool_what(step: TaskStep, output: TaskStepOutput | None) -> str:
    call = _tool_call(step, output)
    text = "tool" if call is None else format_call(*call, max_arg_chars=_ARG_MAX_CHARS)
    text = _truncate(text, _CALL_MAX_CHARS)
    if rejection_of(step, output) is not None:
        return f"{text} → rejected"
    if output is None or output.error or step.status is StepStatus.FAILED:
        return text
    if output.tool_calls:
        return f"{text} → {format_result(output.tool_calls[0].content)}"
    if output.output is not None:
        return f"{text} → {format_result(str(output.output))}"
    return text


def _plan_what(output: TaskStepOutput | None) -> str:
    plan = output.output.get("plan") if output and isinstance(output.output, Mapping) else None
    return f"plan: {_count(len(plan), 'item')}" if isinstance(plan, list) else "plan"


def _delegate_what(step: TaskStep) -> str:
    fields = step.input if isinstance(step.input, Mapping) else step.step_state
    agent, prompt = fields.get("agent"), fields.get("prompt")
    if not isinstance(agent, str) or not agent:
        return "delegate"
    # "Booking agent", not "Booking agent agent": the Agents SDK's names often say it.
    who = agent if agent.lower().endswith("agent") else f"{agent} agent"
    return f"{who}: {prompt}" if isinstance(prompt, str) and prompt else who


def _reasoning_what(output: TaskStepOutput, calls_queued: list[TaskStep]) -> str:
    if output.tool_calls:
        first = output.tool_calls[0]
        text = _truncate(
            format_call(first.tool_name, first.args, max_arg_chars=_ARG_MAX_CHARS), _CALL_MAX_CHARS
        )
        more = len(output.tool_calls) - 1
        return f"{text} → {format_result(first.content)}" + (f" (+{more} more)" if more else "")
    names = [call[0] for call in (_tool_call(s, None) for s in calls_queued) if call is not None]
    if names:
        return f"llm: calls {', '.join(names)}"
    if output.thought:
        return f"llm: {output.thought}"
    return "llm" if output.output is None else f"llm: {output.output}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[: max_chars - 1].rstrip() + _ELLIPSIS


def _tooltip(data: dict[str, Any]) -> str:
    parts = []
    if data.get("input"):
        parts.append(f"input: {data['input']}")
    if data.get("rejection") is not None:
        parts.append(f"rejected: {data['rejection'] or '(no reason given)'}")
    elif data.get("output"):
        parts.append(f"{'error' if data.get('error') else 'output'}: {data['output']}")
    return "\n".join(parts)


def _group(data: Mapping[str, Any]) -> str:
    return str(data.get("group") or data.get("status", ""))


def _color(data: Mapping[str, Any]) -> str:
    return STATUS_COLORS.get(_group(data), _UNKNOWN_STATUS_COLOR)


def _vis_color(data: Mapping[str, Any]) -> dict[str, Any]:
    # A bare colour string would paint the border like the fill, hiding undone dashes.
    fill = _color(data)
    border = _BORDER_COLORS.get(_group(data), _BORDER_COLOR)
    selected = {"background": fill, "border": _SELECTED_BORDER_COLOR}
    return {"background": fill, "border": border, "highlight": selected, "hover": selected}


def _levels(graph: nx.DiGraph) -> dict[Any, int]:
    # Step ids should never form a cycle, but stored data can be wrong; the condensation is
    # acyclic, so a cycle's steps simply share a level instead of breaking the layout.
    import networkx as nx

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
