"""What LangGraph Studio users look for, in the runtime: the graph's topology as data, a
breakpoint on a chosen node (`OnNode`), and the graph's state after each step.

The graphs are the user's file of `test_langgraph` (an "agent" node, a `ToolNode`,
`tools_condition`; a variant with a reviewer that calls `interrupt()`).
"""

from __future__ import annotations

import pytest

from agent_core import OnNode
from agent_core.adapters.langgraph import STATE_KEY
from agent_core.runtime.breakpoints import nodes_of
from agent_core.types import TaskStep
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401
from tests.agent_core.adapters.test_langgraph import GRAPH_FILE, QUESTION, runner_for

pytestmark = pytest.mark.usefixtures("isolated_imports")


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "project", {"graph.py": GRAPH_FILE})


def test_the_topology_is_the_graphs_nodes_and_edges_kept_once_per_task(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    runner.run_step(task.task_id)

    kept = runner.get_task(task.task_id).extra_state[STATE_KEY]["topology"]
    assert kept["nodes"] == ["__start__", "agent", "tools", "__end__"]
    edges = {(e["source"], e["target"], e["conditional"]) for e in kept["edges"]}
    assert edges == {
        ("__start__", "agent", False),
        ("agent", "tools", True),
        ("agent", "__end__", True),
        ("tools", "agent", False),
    }


def test_each_upcoming_step_names_the_nodes_it_runs(project):
    runner = runner_for(project, "reviewed")
    task = runner.create_task(QUESTION)
    seen = []
    for _ in range(8):
        (upcoming,) = runner.get_upcoming_steps(task.task_id)
        seen.append((upcoming.kind.value, nodes_of(upcoming)))
        if upcoming.kind.value == "human":
            break
        runner.run_step(task.task_id)
    assert seen[0] == ("llm", ["agent"])
    assert ("tool", ["tools"]) in seen  # A tool call's step names the tools node.
    assert seen[-1][1] == ["review"]  # So does the answer to a node's interrupt().


def test_run_until_stops_before_the_chosen_node_and_goes_on_past_it(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)

    result = runner.run_until(task.task_id, stop=[OnNode("tools")])
    assert result.reason == "breakpoint" and "'tools'" in result.detail
    assert [o.task_step.name for o in result.outputs] == ["agent"]
    (upcoming,) = runner.get_upcoming_steps(task.task_id)
    assert nodes_of(upcoming) == ["tools"]

    again = runner.run_until(task.task_id, stop=[OnNode("tools")], resume=True)
    assert [o.task_step.name for o in again.outputs] == ["tools", "agent"]
    assert runner.run_until(task.task_id, stop=[OnNode("nowhere")]).reason == "last_step"


def test_on_node_never_stops_a_step_that_names_no_node():
    step = TaskStep(task_id="t", input="hi", step_state={"nodes": "agent"})
    assert OnNode("agent")(None, step) is None  # type: ignore[arg-type]
    named = TaskStep(task_id="t", input="hi", step_state={"nodes": ["agent", "audit"]})
    assert OnNode("audit")(None, named) == "breakpoint: before node 'audit'"  # type: ignore[arg-type]


def test_each_step_keeps_the_graph_state_it_left_readable(project):
    runner = runner_for(project)
    task = runner.create_task(QUESTION)
    first = runner.run_step(task.task_id)
    second = runner.run_step(task.task_id)

    stored = runner.get_step(task.task_id, first.task_step.step_id).step_state["state_after"]
    assert [m["type"] for m in stored["messages"]] == ["human", "ai"]
    assert stored["messages"][0]["text"] == QUESTION
    assert stored["messages"][1]["tool_calls"] == [{"name": "multiply", "args": {"a": 121, "b": 3}}]
    after = second.task_step.step_state["state_after"]["messages"]
    assert [m["type"] for m in after] == ["human", "ai", "tool"] and after[2]["text"] == "363"
