"""LangGraph Studio's views in the app (AppTest): the graph drawn beside the step DAG, its
upcoming node lit and the nodes run marked, the node choices for a breakpoint, and the graph
state each step left. The task is a real LangGraph task (the user's file of
`test_langgraph`) on a SQLite file; the views read it from the store, without its code.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.store import SQLiteStore
from stepwise.app.components.langgraph_view import graph_dot, node_names, topology_of
from tests.agent_core._user_projects import isolated_imports, write_project  # noqa: F401
from tests.agent_core.adapters.test_langgraph import GRAPH_FILE, QUESTION, runner_for

pytestmark = pytest.mark.usefixtures("isolated_imports")

TIMEOUT = 30


def _views(db: str, task_id: str) -> None:
    from agent_core.store import SQLiteStore
    from stepwise.app.components.langgraph_view import render_graph_view, render_state_after

    task_state = SQLiteStore(db).load_task(task_id)
    render_graph_view(task_state)
    for step_id in task_state.completed:
        render_state_after(task_state.steps[step_id])


@pytest.fixture
def task(tmp_path):
    """A LangGraph task two steps in (the model asked for a tool; the tool ran): db, id."""
    project = write_project(tmp_path / "project", {"graph.py": GRAPH_FILE})
    db = tmp_path / "lg.db"
    runner = runner_for(project, db=db)
    task_id = runner.create_task(QUESTION).task_id
    runner.run_step(task_id)
    runner.run_step(task_id)
    return str(db), task_id


def _dot(app: AppTest) -> str:
    (chart,) = app.get("graphviz_chart")
    return chart.proto.spec


def test_the_graph_view_draws_the_topology_with_the_upcoming_node_lit(task):
    db, task_id = task
    app = AppTest.from_function(_views, args=(db, task_id), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert [s.value for s in app.subheader] == ["Graph"]
    dot = _dot(app)
    assert '"__start__" -> "agent"' in dot and '"tools" -> "agent"' in dot
    assert '"agent" -> "tools" [style=dashed]' in dot  # tools_condition: a conditional edge.
    agent = next(line for line in dot.splitlines() if line.strip().startswith('"agent" ['))
    tools = next(line for line in dot.splitlines() if line.strip().startswith('"tools" ['))
    assert "#ffd54f" in agent  # Up next: the model reads the tool's result.
    assert "#c8e6c9" in tools  # Already run.
    assert "Next: agent." in app.caption[0].value


def test_each_step_shows_the_graph_state_it_left(task):
    db, task_id = task
    app = AppTest.from_function(_views, args=(db, task_id), default_timeout=TIMEOUT).run()
    states = [c.value for c in app.code]
    assert len(states) == 2
    assert '"text": "363"' in states[1] and '"text": "363"' not in states[0]
    assert '"name": "multiply"' in states[0]
    assert [m.value for m in app.markdown].count("**Graph state after this step**") == 2


def test_the_breakpoint_choices_are_the_graphs_own_nodes(task):
    db, task_id = task
    topology = topology_of(SQLiteStore(db).load_task(task_id))
    assert node_names(topology) == ["agent", "tools"]


def test_every_label_is_escaped_for_dot():
    topology = {
        "nodes": ["__start__", 'say "hi"\\', "a\nb", "__end__"],
        "edges": [{"source": 'say "hi"\\', "target": "a\nb", "conditional": True, "label": '"'}],
    }
    dot = graph_dot(topology, upcoming=["a\nb"], ran=[])
    assert '"say \\"hi\\"\\\\" [label="say \\"hi\\"\\\\"' in dot
    assert '"a\\nb" -> ' not in dot.splitlines()[2]  # The quoted newline stays one line.
    assert '"say \\"hi\\"\\\\" -> "a\\nb" [style=dashed label="\\""];' in dot
    assert len(dot.splitlines()) == 8  # header, node style, 4 nodes, 1 edge, "}"


def test_the_stepper_of_a_langgraph_task_draws_its_graph_and_offers_its_nodes(
    task, monkeypatch: pytest.MonkeyPatch
):
    from pathlib import Path

    import streamlit as st

    db, task_id = task
    st.cache_resource.clear()
    st.cache_data.clear()
    monkeypatch.setenv("STEPWISE_DB", db)
    monkeypatch.chdir(Path(db).parent)
    app = AppTest.from_file(
        str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=TIMEOUT
    )
    app.session_state["stepwise.task_id"] = task_id
    app.run()
    assert not app.exception
    assert "Graph" in [s.value for s in app.subheader]
    (picker,) = [m for m in app.multiselect if m.label == "Before the graph node"]
    assert picker.options == ["agent", "tools"]
    st.cache_resource.clear()
    st.cache_data.clear()
