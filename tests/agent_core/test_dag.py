from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent_core.dag import (
    COLLAPSED_NODE,
    STATUS_COLORS,
    build_dag,
    build_dag_window,
    collapse_older,
    display_value,
    format_result,
    legend,
    rejection_of,
    to_dot,
    to_vis_data,
)
from agent_core.demos import SCENARIOS
from agent_core.errors import UserError
from agent_core.types import (
    StepKind,
    StepStatus,
    Task,
    TaskState,
    TaskStep,
    TaskStepOutput,
    ToolOutput,
)

HOSTILE = 'x"];evil[label="x\\" -> owned\nnext line'


def make_state(*steps: TaskStep, outputs: dict[str, Any] | None = None) -> TaskState:
    state = TaskState(task=Task(task_id="t1", input="What is (121 * 3) + 42?"))
    for step in steps:
        state.steps[step.step_id] = step
    for step_id, output in (outputs or {}).items():
        state.outputs[step_id] = TaskStepOutput(task_step=state.steps[step_id], output=output)
    return state


def step(step_id: str, **fields: Any) -> TaskStep:
    return TaskStep(task_id="t1", step_id=step_id, **fields)


# A parser for the subset of DOT `to_dot` writes, strict enough that an unescaped quote in a
# label turns into a syntax error or an extra statement instead of passing unnoticed.
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(->)|([A-Za-z_][A-Za-z0-9_]*)|([{}\[\];,=]))', re.S)


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        match = _TOKEN.match(text, pos)
        assert match, f"unexpected DOT text at {pos}: {text[pos : pos + 30]!r}"
        tokens.append(next(group for group in match.groups() if group is not None))
        pos = match.end()
    return tokens


def _unquote(token: str) -> str:
    if not token.startswith('"'):
        return token
    escapes = {"n": "\n", '"': '"', "\\": "\\"}
    return re.sub(r"\\(.)", lambda m: escapes[m.group(1)], token[1:-1], flags=re.S)


def _attrs(tokens: list[str]) -> dict[str, str]:
    attrs: dict[str, str] = {}
    while tokens[0] != "]":
        key, eq, value = tokens.pop(0), tokens.pop(0), tokens.pop(0)
        assert eq == "=", f"expected '=' after {key!r}"
        attrs[key] = _unquote(value)
        if tokens[0] == ",":
            tokens.pop(0)
    tokens.pop(0)
    return attrs


def _parse_dot(
    text: str,
) -> tuple[
    dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]], dict[str, dict[str, str]]
]:
    tokens = _tokens(text)
    assert tokens[:3] == ["digraph", "task", "{"] and tokens[-1] == "}"
    tokens = tokens[3:-1]
    nodes: dict[str, dict[str, str]] = {}
    legend_nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []
    in_legend = False
    while tokens:
        head = tokens.pop(0)
        if head == "subgraph":  # subgraph cluster_legend { ... }
            assert not in_legend and tokens[:2] == ["cluster_legend", "{"]
            tokens[:2] = []
            in_legend = True
            continue
        if head == "}":
            assert in_legend, "unbalanced }"
            in_legend = False
            continue
        if tokens[0] == "=":  # graph attribute: rankdir=TB;
            tokens[:2] = []
        elif tokens[0] == "->":
            assert not in_legend
            target = _unquote(tokens[1])
            tokens[:2] = []
            attrs = _attrs(tokens[1:]) if tokens[0] == "[" else {}
            if tokens[0] == "[":
                del tokens[: tokens.index("]") + 1]
            edges.append((_unquote(head), target, attrs))
        else:
            assert tokens.pop(0) == "["
            attrs = _attrs(tokens)
            if head != "node":
                (legend_nodes if in_legend else nodes)[_unquote(head)] = attrs
        assert tokens.pop(0) == ";"
    assert not in_legend, "legend subgraph not closed"
    return nodes, edges, legend_nodes


def parse_dot(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]]]:
    """The step nodes and edges of DOT text from `to_dot` (the legend left out)."""
    nodes, edges, _ = _parse_dot(text)
    return nodes, edges


def parse_dot_legend(text: str) -> dict[str, dict[str, str]]:
    """The legend's nodes in DOT text from `to_dot`, by id."""
    return _parse_dot(text)[2]


def test_linear_chain_has_next_edges_and_step_attributes() -> None:
    state = make_state(
        step("a", input="What is 121 * 3?", status=StepStatus.COMPLETED, number=1),
        step(
            "b",
            kind=StepKind.TOOL,
            input={"tool": "add", "args": {"a": 363, "b": 42}},
            prev_step_ids=["a"],
            status=StepStatus.COMPLETED,
            number=2,
            edited=True,
        ),
        step("c", prev_step_ids=["b"]),
        outputs={"a": "363", "b": 405},
    )

    graph = build_dag(state)

    assert list(graph.nodes) == ["a", "b", "c"]
    assert [(u, v, d["relation"]) for u, v, d in graph.edges(data=True)] == [
        ("a", "b", "next"),
        ("b", "c", "next"),
    ]
    a, b, c = graph.nodes["a"], graph.nodes["b"], graph.nodes["c"]
    assert (a["label"], a["kind"], a["status"], a["number"]) == (
        "1 · llm: calls add",  # The tool step it queued.
        "llm",
        "completed",
        1,
    )
    assert (a["input"], a["output"], a["undone"]) == ("What is 121 * 3?", "363", False)
    assert b["label"] == "2 · add(363, 42) → 405"
    assert b["input"] == '{"tool":"add","args":{"a":363,"b":42}}'
    assert (b["output"], b["edited"], b["branch_id"]) == ("405", True, "main")
    assert (c["label"], c["status"], c["number"], c["output"]) == ("llm", "upcoming", None, "")


def test_failed_step_shows_its_error_as_output() -> None:
    state = make_state(
        step("a", kind=StepKind.TOOL, input={"tool": "div"}, status=StepStatus.FAILED),
    )
    state.steps["a"].error = "ZeroDivisionError: division by zero"

    node = build_dag(state).nodes["a"]

    assert node["label"] == "div() · failed"
    assert node["output"] == "ZeroDivisionError: division by zero"
    assert to_vis_data(build_dag(state))["nodes"][0]["title"] == (
        'input: {"tool":"div"}\nerror: ZeroDivisionError: division by zero'
    )


def test_undone_step_and_its_rerun_are_both_drawn_with_undone_greyed() -> None:
    state = make_state(
        step("root", status=StepStatus.COMPLETED, number=1),
        step("old", prev_step_ids=["root"], status=StepStatus.UNDONE, branch_id="main"),
        step("new", prev_step_ids=["root"], status=StepStatus.COMPLETED, branch_id="b2", number=2),
        outputs={"root": "thinking", "old": "wrong answer", "new": "405"},
    )

    graph = build_dag(state)

    assert set(graph.successors("root")) == {"old", "new"}
    assert graph.nodes["old"]["undone"] is True and graph.nodes["new"]["undone"] is False
    assert graph.nodes["old"]["output"] == "wrong answer"
    assert (graph.nodes["old"]["branch_id"], graph.nodes["new"]["branch_id"]) == ("main", "b2")

    dot_nodes, _ = parse_dot(to_dot(graph))
    assert dot_nodes["old"]["fillcolor"] == STATUS_COLORS["undone"]
    assert "dashed" in dot_nodes["old"]["style"]
    assert dot_nodes["new"]["fillcolor"] == STATUS_COLORS["completed"]
    assert "dashed" not in dot_nodes["new"]["style"]

    vis_nodes = {node["id"]: node for node in to_vis_data(graph)["nodes"]}
    old, new = vis_nodes["old"], vis_nodes["new"]
    assert old["color"]["background"] == STATUS_COLORS["undone"]
    assert new["color"]["background"] == STATUS_COLORS["completed"]
    assert old["group"] == "undone"
    assert old["shapeProperties"] == {"borderDashes": True}
    assert new["shapeProperties"] == {"borderDashes": False}
    # The dashes need a border unlike the grey fill, and the text is greyed as well.
    assert old["color"]["border"] != old["color"]["background"]
    assert old["font"]["color"] != new["font"]["color"]


def test_fan_in_gets_depends_on_edges_without_duplicating_next_edges() -> None:
    state = make_state(
        step("plan", kind=StepKind.PLAN, status=StepStatus.COMPLETED),
        step("x", prev_step_ids=["plan"]),
        step("y", prev_step_ids=["plan"]),
        step("join", prev_step_ids=["x"], depends_on=["x", "y"]),
    )

    graph = build_dag(state)

    assert graph.edges["x", "join"]["relation"] == "next"
    assert graph.edges["y", "join"]["relation"] == "depends_on"
    assert graph.number_of_edges() == 4

    _, dot_edges = parse_dot(to_dot(graph))
    assert ("y", "join", {"style": "dashed"}) in dot_edges
    assert ("x", "join", {}) in dot_edges
    vis_edges = {(e["from"], e["to"]): e["dashes"] for e in to_vis_data(graph)["edges"]}
    assert vis_edges == {
        ("plan", "x"): False,
        ("plan", "y"): False,
        ("x", "join"): False,
        ("y", "join"): True,
    }


def test_ids_of_missing_steps_make_no_phantom_nodes() -> None:
    state = make_state(step("a", prev_step_ids=["gone"], depends_on=["also-gone"]))

    graph = build_dag(state)

    assert list(graph.nodes) == ["a"]
    assert graph.number_of_edges() == 0


def test_long_text_is_truncated_in_inputs_outputs_and_labels() -> None:
    state = make_state(
        step("a", input="x" * 500, status=StepStatus.COMPLETED),
        step("b", kind=StepKind.TOOL, input={"tool": "t" * 500, "args": {"q": "y" * 500}}),
        outputs={"a": "z" * 500},
    )

    graph = build_dag(state, max_chars=50)

    a, b = graph.nodes["a"], graph.nodes["b"]
    assert a["input"] == "x" * 49 + "…"
    assert a["output"] == "z" * 49 + "…"
    assert len(b["input"]) == 50 and b["input"].startswith('{"tool":"ttt')
    assert len(b["label"]) <= 60 and b["label"].startswith("ttt")
    assert b["label"].endswith("…")


def test_max_chars_below_one_is_refused() -> None:
    with pytest.raises(UserError, match="max_chars must be at least 1"):
        build_dag(make_state(), max_chars=0)


def test_dot_escapes_hostile_text_so_it_cannot_break_out() -> None:
    hostile_id = 'id"];evil'
    state = make_state(
        step(hostile_id, kind=StepKind.TOOL, input={"tool": HOSTILE}, status=StepStatus.COMPLETED),
        step("b", input=HOSTILE, prev_step_ids=[hostile_id]),
        outputs={hostile_id: HOSTILE},
    )
    graph = build_dag(state, max_chars=1000)

    dot = to_dot(graph)

    assert re.search(r'(?<!\\)"\];evil', dot) is None
    assert '\\"];evil[label=' in dot
    assert "\nnext line" not in dot  # line breaks inside strings are written as DOT's \n
    for line in dot.splitlines():
        unescaped_quotes = re.findall(r'(?<!\\)(?:\\\\)*"', line)
        assert len(unescaped_quotes) % 2 == 0, line
    nodes, edges = parse_dot(dot)
    assert set(nodes) == {hostile_id, "b"}
    assert edges == [(hostile_id, "b", {})]
    assert nodes["b"]["tooltip"] == f"input: {HOSTILE}"
    assert nodes[hostile_id]["tooltip"].endswith(f"output: {HOSTILE}")
    assert nodes[hostile_id]["label"] == graph.nodes[hostile_id]["label"]
    assert nodes[hostile_id]["label"].startswith('x"];evil[label=')


def test_vis_levels_put_parallel_siblings_on_one_level() -> None:
    state = make_state(
        step("plan", kind=StepKind.PLAN),
        step("x", prev_step_ids=["plan"]),
        step("y", prev_step_ids=["plan"]),
        step("y2", prev_step_ids=["y"]),
        step("join", prev_step_ids=["x"], depends_on=["y2"]),
    )

    levels = {node["id"]: node["level"] for node in to_vis_data(build_dag(state))["nodes"]}

    assert levels == {"plan": 0, "x": 1, "y": 1, "y2": 2, "join": 3}


def test_vis_levels_survive_a_cycle_in_bad_data() -> None:
    state = make_state(step("a", prev_step_ids=["b"]), step("b", prev_step_ids=["a"]), step("c"))

    levels = {node["id"]: node["level"] for node in to_vis_data(build_dag(state))["nodes"]}

    assert levels == {"a": 0, "b": 0, "c": 0}


def test_dot_drops_control_characters_and_normalises_line_breaks() -> None:
    graph = build_dag(make_state(step("a", input="a\x00b\x1b[31m\r\nc\rd")))

    nodes, _ = parse_dot(to_dot(graph))

    assert graph.nodes["a"]["input"] == "a\x00b\x1b[31m\r\nc\rd"  # plain text, left as it was
    assert nodes["a"]["tooltip"] == "input: ab[31m\nc\nd"


def chain(count: int, **fields: Any) -> TaskState:
    return make_state(
        *(
            step(f"s{n}", prev_step_ids=[f"s{n - 1}"] if n > 1 else [], number=n, **fields)
            for n in range(1, count + 1)
        )
    )


def test_collapse_older_keeps_the_newest_steps_and_folds_the_rest_into_one_node() -> None:
    graph = build_dag(chain(10, status=StepStatus.COMPLETED))

    window = collapse_older(graph, keep=3)

    assert list(window.nodes) == [COLLAPSED_NODE, "s8", "s9", "s10"]
    assert list(window.edges) == [(COLLAPSED_NODE, "s8"), ("s8", "s9"), ("s9", "s10")]
    folded = window.nodes[COLLAPSED_NODE]
    assert folded["label"] == "… 7 earlier steps"
    assert folded["undone"] is False
    assert window.nodes["s9"] == graph.nodes["s9"]
    assert graph.number_of_nodes() == 10  # The full graph is left as it was.
    levels = {node["id"]: node["level"] for node in to_vis_data(window)["nodes"]}
    assert levels == {COLLAPSED_NODE: 0, "s8": 1, "s9": 2, "s10": 3}
    nodes, _ = parse_dot(to_dot(window))
    assert nodes[COLLAPSED_NODE]["label"] == "… 7 earlier steps"


def test_collapse_older_returns_a_short_graph_unchanged() -> None:
    graph = build_dag(chain(3))

    assert collapse_older(graph, keep=3) is graph


def test_collapse_older_links_the_folded_node_to_every_step_that_followed_a_folded_one() -> None:
    state = make_state(
        step("plan", kind=StepKind.PLAN, status=StepStatus.COMPLETED),
        step("x", prev_step_ids=["plan"], status=StepStatus.COMPLETED),
        step("y", prev_step_ids=["plan"]),
        step("join", prev_step_ids=["y"], depends_on=["x", "y"]),
    )

    window = collapse_older(build_dag(state), keep=2)

    assert set(window.nodes) == {COLLAPSED_NODE, "y", "join"}
    assert window.edges[COLLAPSED_NODE, "y"]["relation"] == "next"
    assert window.edges[COLLAPSED_NODE, "join"]["relation"] == "next"  # From x, folded.
    assert window.edges["y", "join"]["relation"] == "next"


def test_collapse_older_drops_edges_into_folded_steps_in_bad_data() -> None:
    state = make_state(step("a", prev_step_ids=["c"]), step("b"), step("c"))

    window = collapse_older(build_dag(state), keep=1)

    assert list(window.nodes) == [COLLAPSED_NODE, "c"]
    assert window.number_of_edges() == 0
    assert all(window.nodes[n] for n in window.nodes)  # No attribute-less phantom node.


def test_collapse_older_refuses_to_keep_fewer_than_one_step() -> None:
    with pytest.raises(UserError, match="keep must be at least 1"):
        collapse_older(build_dag(chain(3)), keep=0)


# ------------------------------------------------------------------ honest labels (issue 10)


def _demo_runner(name: str, tmp_path: Path, **update: Any) -> tuple[Any, str]:
    """A runner on the demo scenario `name` (files under `tmp_path`) and its new task's id."""
    scenario = SCENARIOS[name]
    spec = scenario.spec.model_copy(update={"workspace": str(tmp_path), **update})
    runner = spec.build_runner()
    return runner, runner.create_task(scenario.task).task_id


def _nodes_by_number(state: TaskState) -> dict[int | None, dict[str, Any]]:
    graph = build_dag(state)
    return {graph.nodes[n]["number"]: {"id": n, **graph.nodes[n]} for n in graph.nodes}


def test_nodes_say_what_each_step_did(tmp_path: Path) -> None:
    runner, task_id = _demo_runner("arithmetic", tmp_path)
    runner.run_until(task_id)

    labels = [
        node["label"] for node in to_vis_data(build_dag(runner.get_task_state(task_id)))["nodes"]
    ]

    assert labels == [
        "1 · multiply(121, 3) → 363",
        "2 · add(363, 42) → 405",
        "3 · answer: (121 * 3) + 42 = 405",
    ]


def test_planner_nodes_count_the_plan_and_name_each_delegate_agent(tmp_path: Path) -> None:
    runner, task_id = _demo_runner("haiku", tmp_path)
    runner.run_until(task_id)

    nodes = _nodes_by_number(runner.get_task_state(task_id))

    assert nodes[1]["label"] == "1 · plan: 3 items"
    assert nodes[2]["label"].startswith("2 · file agent: Write a haiku")
    assert nodes[3]["label"].startswith("3 · image agent: Draw")
    assert nodes[4]["label"].startswith("4 · code agent: Make index.html")
    assert nodes[5]["label"].startswith("5 · answer: Done.")
    assert all(len(node["label"]) <= 60 for node in nodes.values())


def test_feedback_and_queued_calls_are_labelled_by_what_they_say() -> None:
    state = make_state(
        step("a", status=StepStatus.COMPLETED, number=1),
        step(
            "t1",
            kind=StepKind.TOOL,
            input={"tool": "multiply", "args": {"a": 12, "b": 7}},
            prev_step_ids=["a"],
        ),
        step(
            "t2",
            kind=StepKind.TOOL,
            input={"tool": "add", "args": {"a": 5, "b": 9}},
            prev_step_ids=["a"],
        ),
        step(
            "h",
            kind=StepKind.HUMAN,
            input="use  add\nplease",
            status=StepStatus.COMPLETED,
            number=2,
        ),
        outputs={"a": "", "h": "use add please"},
    )

    graph = build_dag(state)

    assert graph.nodes["a"]["label"] == "1 · llm: calls multiply, add"
    assert graph.nodes["t1"]["label"] == "multiply(12, 7)"
    assert graph.nodes["h"]["label"] == '2 · feedback: "use add please"'


def test_arguments_and_results_show_whole_numbers_without_a_decimal_point() -> None:
    state = make_state(step("a", status=StepStatus.COMPLETED, number=1))
    state.outputs["a"] = TaskStepOutput(
        task_step=state.steps["a"],
        output="Thought: x",
        tool_calls=[ToolOutput(tool_name="multiply", args={"a": 121.0, "b": 3.5}, content="363.0")],
    )

    node = build_dag(state).nodes["a"]

    assert node["label"] == "1 · multiply(121, 3.5) → 363"
    assert display_value({"a": [2.0, 1e300, float("nan")], "b": True}) == {
        "a": [2, 1e300, ANY_NAN],
        "b": True,
    }
    assert (format_result("363.0"), format_result("3.25"), format_result("x 1.0")) == (
        "363",
        "3.25",
        "x 1.0",
    )


class _AnyNan:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and other != other


ANY_NAN = _AnyNan()


def test_a_long_delegate_prompt_is_cut_to_a_short_label_that_keeps_its_number() -> None:
    state = make_state(
        step(
            "d",
            kind=StepKind.DELEGATE,
            input={"item": "x", "agent": "file", "prompt": "Write " + "very " * 40 + "long"},
            status=StepStatus.SKIPPED,
            number=12,
        )
    )

    label = build_dag(state).nodes["d"]["label"]

    assert label.startswith("12 · file agent: Write very") and label.endswith("… · skipped")
    assert len(label) <= 60


def test_a_handoff_to_an_agent_named_agent_says_agent_once() -> None:
    """Issue 32: an Agents SDK handoff read "Booking agent: Booking agent agent"."""
    state = make_state(
        step(
            "d",
            kind=StepKind.DELEGATE,
            name="Booking agent",
            input={"agent": "Booking agent"},
            status=StepStatus.COMPLETED,
            number=3,
        )
    )

    assert build_dag(state).nodes["d"]["label"] == "3 · Booking agent"


def test_a_rejected_call_is_drawn_as_rejected_not_as_edited(tmp_path: Path) -> None:
    runner, task_id = _demo_runner("arithmetic", tmp_path, tool_approval=True)
    runner.run_step(task_id)
    runner.reject_step(task_id, message="use add instead")

    graph = build_dag(runner.get_task_state(task_id))
    node = next(graph.nodes[n] for n in graph.nodes if graph.nodes[n]["number"] == 2)

    assert node["group"] == "rejected"
    assert node["edited"] is False
    assert node["rejection"] == "use add instead"
    assert node["label"] == "2 · multiply(121, 3) → rejected"
    assert node["input"] == '{"tool":"multiply","args":{"a":121,"b":3}}'  # No "rejected" key.
    vis = next(n for n in to_vis_data(graph)["nodes"] if n["group"] == "rejected")
    assert vis["color"]["background"] == STATUS_COLORS["rejected"] != STATUS_COLORS["completed"]
    assert vis["title"].endswith("rejected: use add instead")
    dot_nodes, _ = parse_dot(to_dot(graph))
    assert dot_nodes[vis["id"]]["fillcolor"] == STATUS_COLORS["rejected"]


def test_a_call_rejected_by_an_older_runtime_is_still_drawn_as_rejected() -> None:
    call = {"tool": "add", "args": {"a": 1, "b": 2}}
    rejected = step(
        "r",
        kind=StepKind.TOOL,
        input={**call, "rejected": "no"},
        proposed_input=call,
        edited=True,
        status=StepStatus.COMPLETED,
        number=2,
    )
    state = make_state(rejected, outputs={"r": "The user rejected the call of add: no"})

    node = build_dag(state).nodes["r"]

    assert (node["group"], node["label"], node["edited"]) == (
        "rejected",
        "2 · add(1, 2) → rejected",
        False,
    )
    assert rejection_of(rejected) == "no"


def test_calls_waiting_for_a_person_have_their_own_look(tmp_path: Path) -> None:
    runner, task_id = _demo_runner("arithmetic", tmp_path, tool_approval=True)
    runner.run_step(task_id)
    state = runner.get_task_state(task_id)
    held = step(
        "held",
        kind=StepKind.TOOL,
        input={"tool": "add", "args": {"a": 1, "b": 2}},
        step_state={"held": True},
    )
    state.steps["held"] = held

    graph = build_dag(state)
    pending = next(n for n in graph.nodes if graph.nodes[n]["kind"] == "tool" and n != "held")

    assert graph.nodes[pending]["group"] == "awaiting_approval"
    assert graph.nodes[pending]["status"] == "upcoming"
    assert graph.nodes[pending]["label"] == "multiply(121, 3) · awaiting approval"
    assert graph.nodes["held"]["group"] == "awaiting_approval"
    assert graph.nodes["held"]["label"] == "add(1, 2) · at breakpoint"
    colors = {n["id"]: n["color"] for n in to_vis_data(graph)["nodes"]}
    assert colors[pending]["background"] == STATUS_COLORS["awaiting_approval"]
    assert STATUS_COLORS["awaiting_approval"] != STATUS_COLORS["upcoming"]
    assert colors[pending]["border"] != colors[next(iter(graph.nodes))]["border"]


def test_a_skipped_step_in_history_is_drawn_as_skipped_with_its_number() -> None:
    state = make_state(
        step(
            "s",
            kind=StepKind.TOOL,
            input={"tool": "add", "args": {"a": 1}},
            status=StepStatus.SKIPPED,
            number=3,
        ),
        outputs={"s": None},
    )

    graph = build_dag(state)
    (vis,) = to_vis_data(graph)["nodes"]

    assert graph.nodes["s"]["label"] == "3 · add(1) · skipped"
    assert vis["group"] == "skipped"
    assert vis["shapeProperties"]["borderDashes"] == [2, 4]  # Dotted, unlike undone's dashes.
    dot_nodes, _ = parse_dot(to_dot(graph))
    assert "dotted" in dot_nodes["s"]["style"]


def test_the_legend_names_every_group_and_the_graph_carries_the_groups_it_uses() -> None:
    everything = legend()
    state = make_state(
        step("a", status=StepStatus.COMPLETED, number=1),
        step("b", prev_step_ids=["a"], status=StepStatus.UNDONE),
        outputs={"a": "x", "b": "y"},
    )
    graph = build_dag(state)

    assert [group for group, _, _ in everything] == [
        "upcoming",
        "awaiting_approval",
        "running",
        "completed",
        "rejected",
        "tool_error",
        "failed",
        "skipped",
        "undone",
        "collapsed",
    ]
    assert all(color == STATUS_COLORS[group] and meaning for group, color, meaning in everything)
    assert len({color for _, color, _ in everything}) == len(everything)
    assert (
        to_vis_data(graph)["legend"]
        == legend(graph)
        == [
            ("completed", STATUS_COLORS["completed"], "ran"),
            ("undone", STATUS_COLORS["undone"], "undone: a branch you went back from"),
        ]
    )
    drawn = parse_dot_legend(to_dot(graph))
    assert drawn == {
        "legend:completed": {
            "label": "completed: ran",
            "fillcolor": STATUS_COLORS["completed"],
            "style": "rounded,filled",
        },
        "legend:undone": {
            "label": "undone: undone: a branch you went back from",
            "fillcolor": STATUS_COLORS["undone"],
            "style": "rounded,filled,dashed",
        },
    }


def test_one_folded_step_is_one_earlier_step() -> None:
    window = collapse_older(build_dag(chain(2)), keep=1)

    assert window.nodes[COLLAPSED_NODE]["label"] == "… 1 earlier step"


def test_an_undone_call_and_its_rerun_count_once_in_the_step_that_asked_for_them() -> None:
    call = {"tool": "add", "args": {"a": 363, "b": 42}}
    state = make_state(
        step("a", input="What is 121 * 3?", status=StepStatus.COMPLETED, number=1),
        step("b", kind=StepKind.TOOL, input=call, prev_step_ids=["a"], status=StepStatus.UNDONE),
        step("b2", kind=StepKind.TOOL, input=call, prev_step_ids=["a"]),
        outputs={"a": "363", "b": 405},
    )
    assert build_dag(state).nodes["a"]["label"] == "1 · llm: calls add"


@pytest.mark.parametrize(
    ("state", "keep"),
    [
        (chain(10, status=StepStatus.COMPLETED), 3),
        (chain(3), 3),
        (
            make_state(
                step("plan", kind=StepKind.PLAN, status=StepStatus.COMPLETED),
                step("x", prev_step_ids=["plan"], status=StepStatus.COMPLETED),
                step("y", prev_step_ids=["plan"]),
                step("join", prev_step_ids=["y"], depends_on=["x", "y"]),
            ),
            2,
        ),
        (make_state(step("a", prev_step_ids=["c"]), step("b"), step("c")), 1),
    ],
)
def test_build_dag_window_draws_what_collapse_older_draws(state: TaskState, keep: int) -> None:
    """Issue 33: the window is built from its own steps, and is the folded full graph."""
    window = build_dag_window(state, keep=keep)
    expected = collapse_older(build_dag(state), keep=keep)

    assert list(window.nodes(data=True)) == list(expected.nodes(data=True))
    assert sorted(window.edges(data="relation")) == sorted(expected.edges(data="relation"))
