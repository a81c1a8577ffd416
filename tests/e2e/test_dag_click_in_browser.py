"""The DAG's click round trip in headless Chromium: a click on a node reaches Python, opens
that step's card, and "Undo to here" goes back to just after it; after a re-run, Compare
branches shows both runs side by side.

The graph panel is drawn by a small script in `tmp_path` (the panel alone, in the Stepper's
right-hand column) on a demo task prepared with a real runner and SQLite store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

from agent_core.demos import SCENARIOS
from agent_core.store import SQLiteStore
from agent_core.types import StepStatus

from .conftest import CHROMIUM_ARGS, serve_script

SHOTS = Path("/tmp/issue10/shots")
COMPONENT_PATH = "/component/stepwise.app.components.dag_view.stepwise_dag/"

_SCRIPT = """
import streamlit as st

from agent_core.demos import SCENARIOS
from agent_core.store import SQLiteStore
from stepwise.app.components.actions import show_notice
from stepwise.app.components.graph_panel import render_graph_panel

st.set_page_config(layout="wide")
spec = SCENARIOS["arithmetic"].spec.model_copy(update={{"workspace": {workspace!r}}})


@st.cache_resource
def runner():
    return spec.build_runner(store=SQLiteStore({db!r}))


show_notice()
left, right = st.columns([3, 2], gap="large")
left.caption("The Stepper's left column")
with right:
    render_graph_panel(runner(), runner().get_task_state({task_id!r}), active=True)
"""

_NODE_AT = """(id) => {
    const net = window.stepwiseDag.network;
    return net.canvasToDOM(net.getPositions([id])[id]);
}"""
_NODES = "() => window.stepwiseDag ? window.stepwiseDag.nodes.get().map(n => [n.id, n.status]) : []"


class Task:
    """The arithmetic demo task on a SQLite file in `tmp_path`."""

    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "click.db")
        self.workspace = str(tmp_path / "workspace")
        spec = SCENARIOS["arithmetic"].spec.model_copy(update={"workspace": self.workspace})
        self.runner = spec.build_runner(store=SQLiteStore(self.db))
        self.task_id = self.runner.create_task(SCENARIOS["arithmetic"].task).task_id

    def state(self):
        return SQLiteStore(self.db).load_task(self.task_id)


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


@pytest.fixture
def panel_url(chromium_path: str, task: Task, tmp_path: Path) -> Iterator[str]:
    """A Streamlit server running only the graph panel for `task`."""
    from stepwise.app.components.dag_view import ensure_static_assets

    ensure_static_assets()
    script = tmp_path / "panel.py"
    script.write_text(_SCRIPT.format(workspace=task.workspace, db=task.db, task_id=task.task_id))
    with serve_script(script, tmp_path) as url:
        yield url


@contextmanager
def browse(chromium_path: str, url: str) -> Iterator:
    """A Chromium page on `url` that records its requests (open it after preparing the task:
    Playwright's sync API runs an event loop, where the runner's sync calls refuse to run)."""
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.requests = []  # type: ignore[attr-defined]
        page.on("request", lambda r: page.requests.append(r.url))  # type: ignore[attr-defined]
        page.goto(url)
        try:
            yield page
        finally:
            browser.close()


def dag_frame(page, check, *, timeout: float = 30.0):
    """The component's frame once its nodes satisfy `check`."""
    deadline = time.monotonic() + timeout
    nodes: list = []
    while time.monotonic() < deadline:
        for frame in page.frames:
            if COMPONENT_PATH not in frame.url:
                continue
            try:
                nodes = frame.evaluate(_NODES)
            except Exception:  # Still loading.
                continue
            if nodes and check(nodes):
                page.wait_for_timeout(300)  # Let vis-network finish drawing.
                return frame
        page.wait_for_timeout(200)
    raise AssertionError(f"the DAG never matched; last seen: {nodes}")


def click_node(frame, step_id: str) -> None:
    at = frame.evaluate(_NODE_AT, step_id)
    frame.locator("#graph").click(position={"x": at["x"], "y": at["y"]})


def off_loop(action: Callable[[], object]) -> None:
    """Run a runner call from the test while Playwright's sync API holds this thread's event
    loop (where the runner's sync calls refuse to run)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(action).result()


def test_click_a_node_undo_to_it_rerun_and_compare_the_branches(chromium_path, panel_url, task):
    runner, task_id = task.runner, task.task_id
    runner.run_until(task_id)
    first, second, third = task.state().completed
    with browse(chromium_path, panel_url) as page:
        frame = dag_frame(page, lambda nodes: len(nodes) == 3)
        page.get_by_text("Click a step in the graph to open it here.").wait_for(timeout=10_000)

        click_node(frame, first)

        page.get_by_text("Step 1 · llm", exact=False).first.wait_for(timeout=10_000)
        undo = page.get_by_role("button", name="Undo to here")
        assert undo.is_enabled()
        page.screenshot(path=SHOTS / "c-dag-step-selected.png")

        undo.click()
        dag_frame(page, lambda nodes: [s for _, s in nodes].count("undone") == 2)
        page.get_by_text("Went back to just after step 1 (undid 2 steps).").wait_for(timeout=10_000)
        page.get_by_text("Step DAG").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=SHOTS / "c-dag-undone-to-step-1.png")
        state = task.state()
        assert state.completed == [first]
        assert [state.steps[s].status for s in (second, third)] == [StepStatus.UNDONE] * 2

        (again,) = state.queue
        off_loop(lambda: runner.edit_step(task_id, again, "Answer now, please."))
        off_loop(lambda: runner.run_until(task_id))  # Steps 2 and 3 again: a second run.
        page.reload()
        dag_frame(page, lambda nodes: len(nodes) == 5)
        page.get_by_role("button", name="Compare branches").click()

        dialog = page.get_by_role("dialog")
        dialog.get_by_text("Step 2 · llm · differs: input as run", exact=False).wait_for(
            timeout=10_000
        )
        dialog.get_by_text("Answer now, please.").first.wait_for(timeout=10_000)
        page.wait_for_timeout(300)
        page.screenshot(path=SHOTS / "c-compare-branches.png")

        outside = [u for u in page.requests if urlparse(u).hostname not in (None, "localhost")]
        assert [u for u in outside if not u.startswith(("data:", "blob:", "about:"))] == []
        assert any(u.endswith(COMPONENT_PATH + "vis-network.min.js") for u in page.requests)
