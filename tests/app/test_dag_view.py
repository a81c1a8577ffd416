"""The DAG: the click component's frontend and data, what `dag_html` writes, and how
`render_dag` falls back (no browser; the click round trip runs in Chromium in
tests/e2e/test_dag_click_in_browser.py).

States come from real runners (the demo scenarios, a scripted ReAct agent, a custom worker);
the page is read back the way a browser would get it: the node, edge and option JSON pyvis
embeds is parsed out of the page source, and the component's arguments out of its element.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import stepwise.app.components.dag_view as dag_view
from agent_core import AgentRunner, TaskState
from agent_core.dag import COLLAPSED_NODE, STATUS_COLORS
from agent_core.demos import SCENARIOS
from agent_core.errors import LLMError
from agent_core.llms import FunctionLLM, ScriptedLLM
from agent_core.store import InMemoryStore
from agent_core.tools import FunctionTool
from agent_core.workers import CustomSimpleAgentWorker, ReActAgentWorker
from stepwise.app.components.dag_view import MAX_DRAWN_STEPS, VIS_NETWORK_URL, dag_data, dag_html

# "href" matters: pyvis switches to a popup that sets innerHTML from any title containing it.
HOSTILE = "<img src=x onerror=alert(1)></script><script>alert(1)</script> \"q\" 'a' & <b>b</b> href"
SCRIPT_BLOCKS = 4  # vis-network from /app/static, pyvis's helpers, drawGraph(), our tooltips.


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def _react(tool: str, args: dict[str, Any], thought: str = "I use a tool.") -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {json.dumps(args)}"


def _demo(name: str, tmp_path: Path) -> tuple[AgentRunner, str]:
    scenario = SCENARIOS[name]
    agent = scenario.spec.model_copy(update={"workspace": str(tmp_path)}).build_runner()
    return agent, agent.create_task(scenario.task).task_id


def _embedded(page: str, marker: str) -> Any:
    start = page.index(marker) + len(marker)
    value, _ = json.JSONDecoder().raw_decode(page, start)
    return value


def nodes_of(page: str) -> dict[str, dict[str, Any]]:
    """The vis nodes embedded in the page, by id."""
    return {node["id"]: node for node in _embedded(page, "nodes = new vis.DataSet(")}


def edges_of(page: str) -> list[tuple[str, str]]:
    return [(edge["from"], edge["to"]) for edge in _embedded(page, "edges = new vis.DataSet(")]


def options_of(page: str) -> dict[str, Any]:
    return _embedded(page, "var options = ")


@pytest.fixture
def hostile_state() -> TaskState:
    """A task whose input, a steered step input, model output and tool output are hostile.

    It ends with an upcoming tool call that a person edited to name a hostile tool, so a
    label carries the text too.
    """
    llm = ScriptedLLM(
        [
            _react("echo", {"text": "hello"}, thought=HOSTILE),
            _react("echo", {"text": "again"}),
        ]
    )
    worker = ReActAgentWorker.from_tools(
        [FunctionTool.from_defaults(fn=echo)], llm=llm, tool_approval=True
    )
    agent = AgentRunner(worker)
    task_id = agent.create_task(HOSTILE).task_id
    agent.run_step(task_id)
    agent.run_step(task_id, input={"tool": "echo", "args": {"text": HOSTILE}})
    agent.add_feedback(task_id, HOSTILE)
    agent.run_step(task_id)
    (tool_call,) = agent.get_upcoming_steps(task_id)
    agent.edit_step(task_id, tool_call.step_id, {"tool": HOSTILE, "args": {}})
    assert llm.remaining == 0
    return agent.get_task_state(task_id)


def test_page_loads_scripts_only_from_the_app_static_folder(tmp_path: Path) -> None:
    agent, task_id = _demo("arithmetic", tmp_path)
    agent.run_until(task_id)

    page = dag_html(agent.get_task_state(task_id))

    assert re.findall(r"<script\b[^>]*\bsrc=\"([^\"]*)\"", page) == [VIS_NETWORK_URL]
    lowered = page.lower()
    for banned in ("http://", "https://", "//cdn", "<link", "bootstrap", "cdnjs", "jsdelivr"):
        assert banned not in lowered, banned
    assert "<h1>" not in lowered  # pyvis's empty heading is gone too.
    assert lowered.count("<script") == lowered.count("</script>") == SCRIPT_BLOCKS


def test_hostile_step_text_stays_text_and_cannot_leave_its_script(
    hostile_state: TaskState,
) -> None:
    page = dag_html(hostile_state, max_steps=1000)

    lowered = page.lower()
    assert "<img" not in lowered and "<b>b" not in lowered
    assert lowered.count("<script") == lowered.count("</script>") == SCRIPT_BLOCKS
    assert "\\u003cimg src=x onerror=alert(1)\\u003e" in page  # Escaped in the JSON instead.
    # Nothing in the page turns text into markup: not our tooltips, not pyvis's href popup.
    assert "innerhtml" not in lowered and "textContent" in page

    nodes = list(nodes_of(page).values())
    assert all("title" not in node for node in nodes)
    tips = "\n".join(node["tip"] for node in nodes)
    # The decoded text is the literal text the user sees: task input, steered step input,
    # model output (the thought), tool output and the human's feedback.
    assert tips.count(f"input: {HOSTILE}") == 2  # The first step's input and the feedback.
    assert f"output: Thought: {HOSTILE}" in tips
    assert f"output: {HOSTILE}" in tips  # The echo tool's result.
    assert json.dumps({"tool": "echo", "args": {"text": HOSTILE}}, separators=(",", ":")) in tips
    # The upcoming call a person edited to name a hostile tool: its label is that text.
    (label,) = [node["label"] for node in nodes if node["label"].startswith("<img")]
    assert label.startswith("<img src=x onerror=")


def test_labels_are_drawn_as_plain_text_not_vis_html_markup(tmp_path: Path) -> None:
    agent, task_id = _demo("arithmetic", tmp_path)
    agent.run_step(task_id)

    options = options_of(dag_html(agent.get_task_state(task_id)))

    # vis-network 9.1.2's "html" mode cannot show `&lt;` as "<" (it draws garbled text, and a
    # label with "&" and "(" throws): labels must not go through it.
    assert options["nodes"]["font"]["multi"] is False


def test_layout_is_hierarchical_with_physics_off(tmp_path: Path) -> None:
    agent, task_id = _demo("arithmetic", tmp_path)
    agent.run_until(task_id)

    page = dag_html(agent.get_task_state(task_id))

    options = options_of(page)
    assert options["layout"]["hierarchical"]["enabled"] is True
    assert options["layout"]["hierarchical"]["direction"] == "UD"
    assert options["physics"]["enabled"] is False
    nodes = list(nodes_of(page).values())
    assert [node["level"] for node in nodes] == [0, 1, 2]
    assert {node["shape"] for node in nodes} == {"box"}


def test_nodes_are_coloured_by_status_and_undone_ones_greyed_and_dashed(tmp_path: Path) -> None:
    agent, task_id = _demo("arithmetic", tmp_path)
    agent.run_step(task_id)
    agent.run_step(task_id)
    agent.undo_step(task_id)
    agent.run_step(task_id)  # Re-run the undone step: a second branch from step 1.
    state = agent.get_task_state(task_id)
    (root, undone, rerun, upcoming) = state.steps

    page = dag_html(state)

    nodes, edges = nodes_of(page), edges_of(page)
    assert set(nodes) == {root, undone, rerun, upcoming}
    assert (root, undone) in edges and (root, rerun) in edges  # Both branches drawn.
    assert nodes[undone]["color"]["background"] == STATUS_COLORS["undone"]
    assert nodes[undone]["shapeProperties"] == {"borderDashes": True}
    assert nodes[undone]["font"]["color"] != nodes[rerun]["font"]["color"]
    for step_id in (root, rerun):
        assert nodes[step_id]["color"]["background"] == STATUS_COLORS["completed"]
        assert nodes[step_id]["shapeProperties"] == {"borderDashes": False}
    assert nodes[upcoming]["color"]["background"] == STATUS_COLORS["upcoming"]
    assert nodes[undone]["level"] == nodes[rerun]["level"] == 1


def test_a_failed_step_is_drawn_red_with_its_error_in_the_tooltip() -> None:
    def down(messages: object, tools: object) -> str:
        raise LLMError("the model is down")

    agent = AgentRunner(ReActAgentWorker.from_tools([], llm=FunctionLLM(down)))
    task_id = agent.create_task("What is 2 + 2?").task_id
    assert agent.run_until(task_id).reason == "error"

    (node,) = nodes_of(dag_html(agent.get_task_state(task_id))).values()

    assert node["color"]["background"] == STATUS_COLORS["failed"]
    assert "failed" in node["label"]
    assert node["tip"].endswith("\ninput: What is 2 + 2?\nerror: the model is down")


def test_parallel_tool_steps_sit_side_by_side_on_one_level(tmp_path: Path) -> None:
    agent, task_id = _demo("parallel", tmp_path)
    agent.run_until(task_id)
    state = agent.get_task_state(task_id)

    nodes = nodes_of(dag_html(state))

    first, multiply, add = list(state.steps)[:3]
    assert nodes[multiply]["label"].startswith("2 · multiply(")
    assert nodes[add]["label"].startswith("3 · add(")
    assert nodes[multiply]["level"] == nodes[add]["level"] == nodes[first]["level"] + 1
    same_level = [node for node in nodes.values() if node["level"] == nodes[add]["level"]]
    assert len(same_level) == 2


class Forever(CustomSimpleAgentWorker):
    """Never says it is done."""

    def _run_step(self, state: dict[str, Any], task: Any, input: str | None) -> tuple[str, bool]:
        state["n"] = state.get("n", 0) + 1
        return f"step {state['n']}", False


def test_a_long_run_draws_a_window_of_recent_steps_and_one_collapsed_node() -> None:
    agent = AgentRunner(Forever(), store=InMemoryStore())
    task_id = agent.create_task("Count forever.").task_id
    assert len(agent.run_until(task_id, max_steps=300).outputs) == 300
    state = agent.get_task_state(task_id)

    page = dag_html(state)

    nodes = nodes_of(page)
    assert len(nodes) == MAX_DRAWN_STEPS + 1
    assert nodes[COLLAPSED_NODE]["label"] == f"… {301 - MAX_DRAWN_STEPS} earlier steps"
    assert nodes[COLLAPSED_NODE]["level"] == 0
    newest = list(state.steps)[-MAX_DRAWN_STEPS:]
    assert list(nodes) == [COLLAPSED_NODE, *newest]
    assert (COLLAPSED_NODE, newest[0]) in edges_of(page)
    assert nodes[newest[-2]]["label"].startswith("300 · custom")
    assert nodes[newest[-1]]["label"] == "custom"  # Upcoming: no number yet.
    assert len(page.encode()) < 200_000


def test_ensure_static_assets_copies_vis_network_and_repairs_a_stale_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    static = tmp_path / "static"
    monkeypatch.setattr(dag_view, "STATIC_DIR", static)
    bundle = dag_view.pyvis_bundle().read_bytes()

    target = dag_view.ensure_static_assets()

    assert target == static / "vis-network.min.js"
    assert target.read_bytes() == bundle
    assert b"vis-network" in bundle[:400]  # The real bundle, not an empty file.
    target.write_bytes(bundle[:1000])  # A copy cut short (an interrupted earlier copy).
    dag_view.ensure_static_assets()
    assert target.read_bytes() == bundle
    assert sorted(p.name for p in static.iterdir()) == ["vis-network.min.js"]


def test_the_component_ships_the_pinned_pyvis_bundle_of_vis_network() -> None:
    # Kept in the repository and shipped in the wheel, so an installed app writes nothing
    # beside its code: it must stay the bundle of the pyvis the lock pins.
    shipped = (dag_view.COMPONENT_DIR / "vis-network.min.js").read_bytes()
    assert shipped == dag_view.pyvis_bundle().read_bytes()
    assert b"@version 9.1.2" in shipped[:400]


def _app(steps: int) -> None:
    from agent_core.types import StepStatus, Task, TaskState, TaskStep
    from stepwise.app.components.dag_view import render_dag

    state = TaskState(task=Task(task_id="t1", input="What is (121 * 3) + 42?"))
    for n in range(1, steps + 1):
        step = TaskStep(task_id="t1", step_id=f"s{n}", status=StepStatus.COMPLETED, number=n)
        step.prev_step_ids = [f"s{n - 1}"] if n > 1 else []
        state.steps[step.step_id] = step
    render_dag(state)


def _run(steps: int) -> AppTest:
    app = AppTest.from_function(_app, args=(steps,), default_timeout=30).run()
    assert not app.exception
    return app


@pytest.fixture
def static_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(dag_view, "STATIC_DIR", tmp_path / "static")
    return tmp_path / "static"


def test_render_dag_draws_the_click_component_with_the_graph_as_data(static_dir: Path) -> None:
    app = _run(2)

    (graph,) = app.get("component_instance")
    assert graph.proto.component_name == "stepwise.app.components.dag_view.stepwise_dag"
    args = json.loads(graph.proto.json_args)
    drawn = json.loads(args["graph"])  # One string: no list for Streamlit to check for pandas.
    assert [n["id"] for n in drawn["nodes"]] == ["s1", "s2"]
    assert [(e["from"], e["to"]) for e in drawn["edges"]] == [("s1", "s2")]
    assert drawn["options"]["nodes"]["font"]["multi"] is False
    assert args["key"] == "dag-t1" and args["height"] == 420
    assert {item["label"] for item in drawn["legend"]} >= {"completed"}
    assert (dag_view.COMPONENT_DIR / "vis-network.min.js").exists()
    assert not app.get("iframe") and not app.get("graphviz_chart")


def test_render_dag_falls_back_to_graphviz_when_the_graph_cannot_be_built(
    static_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("the graph broke")

    monkeypatch.setattr(dag_view, "dag_data", broken)

    app = _run(2)

    assert not app.get("component_instance") and not app.get("iframe")
    (chart,) = app.get("graphviz_chart")
    assert '"s1" -> "s2"' in chart.proto.spec and '"2 · llm"' in chart.proto.spec
    assert [c.value for c in app.caption] == [
        "Interactive graph unavailable (RuntimeError); showing Graphviz."
    ]


def test_render_dag_falls_back_when_vis_network_cannot_be_served(
    static_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A broken installation: the component's folder without its copy of vis-network.
    broken = static_dir.parent / "component"
    broken.mkdir()
    (broken / "index.html").write_text("<html></html>")
    monkeypatch.setattr(dag_view, "COMPONENT_DIR", broken)

    app = _run(1)

    assert not app.get("component_instance")
    assert len(app.get("graphviz_chart")) == 1
    assert "FileNotFoundError" in app.caption[0].value


def test_render_dag_draws_only_a_caption_when_there_are_no_steps(static_dir: Path) -> None:
    app = _run(0)

    assert [c.value for c in app.caption] == ["No steps yet."]
    assert not app.get("component_instance") and not app.get("graphviz_chart")


COMPONENT_FILES = dag_view.COMPONENT_DIR


def test_the_component_loads_scripts_only_from_its_own_folder() -> None:
    page = (COMPONENT_FILES / "index.html").read_text()
    script = (COMPONENT_FILES / "dag.js").read_text()

    assert re.findall(r"<script\b[^>]*\bsrc=\"([^\"]*)\"", page) == ["vis-network.min.js", "dag.js"]
    for text in (page.lower(), script.lower()):
        for banned in ("http://", "https://", "//cdn", "<link", "import(", "fetch("):
            assert banned not in text, banned


def test_the_component_never_turns_step_text_into_markup() -> None:
    script = (COMPONENT_FILES / "dag.js").read_text()

    for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert banned not in script, banned
    assert "box.textContent = text" in script  # Tooltips.
    assert "label.textContent = String(item.label)" in script  # The legend.
    # Only the Streamlit page may drive it, and it answers only by the protocol's messages.
    assert "event.source !== window.parent" in script
    assert set(re.findall(r'"(streamlit:[A-Za-z]+)"', script)) == {
        "streamlit:componentReady",
        "streamlit:setFrameHeight",
        "streamlit:setComponentValue",
        "streamlit:render",
    }


def test_dag_data_carries_hostile_step_text_as_plain_data(hostile_state: TaskState) -> None:
    data = dag_data(hostile_state, max_steps=1000)

    nodes = data["nodes"]
    assert all("title" not in node for node in nodes)  # Tooltips are built from `tip` as text.
    tips = "\n".join(node["tip"] for node in nodes)
    assert tips.count(f"input: {HOSTILE}") == 2
    assert f"output: {HOSTILE}" in tips
    assert any(
        node["label"].startswith("<img src=x onerror") or "<img" in node["label"] for node in nodes
    )
    assert data["options"]["nodes"]["font"]["multi"] is False


def test_a_click_reaches_on_select_before_the_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    clicked: list[str | None] = []
    session: dict[str, Any] = {"dag-t1": {"step": "s2", "click": "1:a"}}
    monkeypatch.setattr(dag_view.st, "session_state", session)

    on_click = dag_view.on_node_click("dag-t1", clicked.append)
    on_click()
    session["dag-t1"] = {"step": None, "click": "2:b"}  # A click on empty space.
    on_click()

    assert clicked == ["s2", None]


def test_a_click_on_the_fold_unfolds_it_and_selects_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clicked: list[str | None] = []
    unfolded: list[bool] = []
    session: dict[str, Any] = {"dag-t1": {"step": COLLAPSED_NODE, "click": "1:a"}}
    monkeypatch.setattr(dag_view.st, "session_state", session)

    dag_view.on_node_click("dag-t1", clicked.append, lambda: unfolded.append(True))()

    assert unfolded == [True] and clicked == []
