"""A long task's DAG in headless Chromium: the node of folded steps ("… 180 earlier steps")
unfolds when clicked, and the steps it held are drawn (issue 22, item 5: it did nothing).

The graph panel is drawn alone by a small script in `tmp_path` on a demo ReAct task of 300
completed steps, made with a real runner, a `ScriptedLLM` and a SQLite store.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_core.dag import COLLAPSED_NODE
from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components.dag_view import MAX_DRAWN_STEPS
from stepwise.app.components.graph_panel import UNFOLD_STEPS

from .conftest import serve_script
from .test_dag_click_in_browser import SHOTS, browse, click_node, dag_frame

STEPS = 300
_ACTION = 'Thought: again.\nAction: add\nAction Input: {"a": 1, "b": 2}'
_SCRIPT = """
import streamlit as st

from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from stepwise.app.components.graph_panel import render_graph_panel

st.set_page_config(layout="wide")
spec = AgentSpec.model_validate_json({spec!r})


@st.cache_resource
def runner():
    return spec.build_runner(store=SQLiteStore({db!r}))


left, right = st.columns([3, 2], gap="large")
left.caption("The Stepper's left column")
with right:
    render_graph_panel(runner(), runner().snapshot_task_state({task_id!r}), active=True)
"""


class LongTask:
    """A demo ReAct task of `STEPS` completed steps on a SQLite file in `tmp_path`."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "fold.db")
        self.spec = AgentSpec(
            worker="react",
            tools=("arithmetic",),
            max_iterations=1000,
            workspace=str(tmp_path / "workspace"),
        )
        store = SQLiteStore(self.db)
        runner = self.spec.build_runner(store=store)
        runner.agent_worker.llm = ScriptedLLM([_ACTION] * STEPS)  # type: ignore[attr-defined]
        self.task_id = runner.create_task("Add 1 and 2, again and again.").task_id
        while len(runner.get_task_state(self.task_id).completed) < STEPS:
            runner.run_step(self.task_id)
        self.steps = list(runner.get_task_state(self.task_id).steps)
        store.close()


@pytest.fixture
def long_task(tmp_path: Path) -> LongTask:
    return LongTask(tmp_path)


@pytest.fixture
def panel_url(chromium_path: str, long_task: LongTask, tmp_path: Path) -> Iterator[str]:
    """A Streamlit server running only the graph panel for `long_task`."""
    script = tmp_path / "panel.py"
    spec = long_task.spec.model_dump_json()
    script.write_text(_SCRIPT.format(spec=spec, db=long_task.db, task_id=long_task.task_id))
    with serve_script(script, tmp_path) as url:
        yield url


def _drawn(frame) -> list[str]:
    """The ids of the nodes drawn, oldest first."""
    return frame.evaluate("() => window.stepwiseDag.nodes.getIds()")


def _in_view(frame, step_id: str) -> bool:
    """Whether the step's node is inside the graph's visible frame."""
    return frame.evaluate(
        """(id) => {
            const net = window.stepwiseDag.network;
            const at = net.canvasToDOM(net.getPositions([id])[id]);
            const box = document.getElementById("graph");
            return at.x >= 0 && at.y >= 0 && at.x <= box.clientWidth && at.y <= box.clientHeight;
        }""",
        step_id,
    )


def _pan_to(frame, step_id: str) -> None:
    """Move the view onto the node, as a person dragging the graph down to it would."""
    frame.evaluate(
        """(id) => {
            const net = window.stepwiseDag.network;
            net.moveTo({ position: net.getPositions([id])[id], scale: net.getScale() });
        }""",
        step_id,
    )
    frame.page.wait_for_timeout(200)


def test_clicking_the_fold_shows_the_earlier_steps_chunk_by_chunk(
    chromium_path: str, panel_url: str, long_task: LongTask
) -> None:
    steps = long_task.steps
    shown = MAX_DRAWN_STEPS + UNFOLD_STEPS
    assert shown < len(steps) == STEPS + 1  # The next step is queued. Two clicks: all.
    with browse(chromium_path, panel_url) as page:
        frame = dag_frame(page, lambda nodes: len(nodes) == MAX_DRAWN_STEPS + 1)
        assert _drawn(frame)[0] == COLLAPSED_NODE
        assert not _in_view(frame, COLLAPSED_NODE)  # Drawn at the top, the newest in view.
        button = page.get_by_role("button", name=f"Show {UNFOLD_STEPS} earlier steps in the graph")
        assert button.is_visible()  # The same, one click away.
        _pan_to(frame, COLLAPSED_NODE)
        page.screenshot(path=SHOTS / "f-dag-folded.png")

        click_node(frame, COLLAPSED_NODE)

        frame = dag_frame(page, lambda nodes: len(nodes) == shown + 1)
        ids = _drawn(frame)
        assert ids == [COLLAPSED_NODE, *steps[-shown:]]  # The fold, then the newest steps.
        newest_unfolded = steps[-MAX_DRAWN_STEPS - 1]
        assert _in_view(frame, newest_unfolded)  # The view stays where the fold was.
        assert page.get_by_text("Click a step in the graph to open it here.").is_visible()
        page.screenshot(path=SHOTS / "f-dag-unfolded-once.png")

        _pan_to(frame, COLLAPSED_NODE)
        click_node(frame, COLLAPSED_NODE)

        frame = dag_frame(page, lambda nodes: len(nodes) == len(steps))
        assert _drawn(frame) == steps  # Every step, no fold.
        assert not page.get_by_role("button", name="earlier steps in the graph").count()
        assert _in_view(frame, steps[-shown - 1])
        page.screenshot(path=SHOTS / "f-dag-unfolded-all.png")
