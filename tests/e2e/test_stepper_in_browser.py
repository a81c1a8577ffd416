"""The stepper in real headless Chromium: the seed task step by step, with the DAG checked
after every action, no request leaving localhost, and hostile text shown as text."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlparse

from playwright.sync_api import expect

from .conftest import ARTIFACTS

Nodes = list[dict]

_READ_DAG = """() => window.stepwiseDag ? window.stepwiseDag.nodes.get().map(n => ({
    id: n.id, status: n.status, label: n.label,
    title: n.title && n.title.textContent !== undefined ? n.title.textContent : n.title
})) : null"""


def in_dag_frame(page, script: str):
    """What `script` gives in the DAG component's frame: the first frame not giving None."""
    for frame in page.frames:
        try:
            found = frame.evaluate(script)
        except Exception:  # A frame being replaced by a rerun.
            continue
        if found is not None:
            return found
    return None


def dag_nodes(page) -> Nodes:
    """The nodes vis-network holds in the DAG component's frame (empty if not drawn yet)."""
    return in_dag_frame(page, _READ_DAG) or []


def wait_for_dag(page, check: Callable[[Nodes], bool], *, timeout: float = 30.0) -> Nodes:
    deadline = time.monotonic() + timeout
    nodes: Nodes = []
    while time.monotonic() < deadline:
        nodes = dag_nodes(page)
        if nodes and check(nodes):
            return nodes
        page.wait_for_timeout(250)
    raise AssertionError(f"the DAG never matched; last seen: {nodes}")


def groups(nodes: Nodes) -> list[str]:
    return sorted(node["status"] for node in nodes)


def click(page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).first.click()


def test_seed_task_step_by_step_with_the_dag_after_each_action(page):
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    page.get_by_role("button", name="Start").first.click()
    wait_for_dag(page, lambda n: groups(n) == ["upcoming"])

    click(page, "Run step")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "upcoming"])
    click(page, "Run step")
    wait_for_dag(page, lambda n: groups(n) == ["completed", "completed", "upcoming"])

    steer = page.get_by_placeholder("(no input: the agent continues; type here to steer it)")
    # The DAG can show the new step while the page still draws: the last run's box lingers.
    expect(steer).to_have_count(1, timeout=15_000)
    steer.fill("Answer now, please.")
    steer.press("Control+Enter")
    page.wait_for_timeout(500)
    click(page, "Run step")
    wait_for_dag(page, lambda n: groups(n) == ["completed"] * 3)
    page.get_by_text("edited", exact=False).first.wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "stepper-finished.png", full_page=True)

    click(page, "Undo")
    nodes = wait_for_dag(page, lambda n: "undone" in groups(n))
    assert groups(nodes) == ["completed", "completed", "undone", "upcoming"]
    page.wait_for_timeout(500)  # Let vis-network finish drawing before the README's picture.
    page.screenshot(path=ARTIFACTS / "stepper-after-undo.png")

    click(page, "Abandon")
    click(page, "Abandon for good")
    page.get_by_text("This task was abandoned").first.wait_for(timeout=10_000)
    page.keyboard.press("Escape")  # Close the popover, so the picture shows the page.
    page.wait_for_timeout(300)
    page.screenshot(path=ARTIFACTS / "stepper-abandoned.png", full_page=True)

    outside = [u for u in page.requests if urlparse(u).hostname not in (None, "localhost")]
    assert [u for u in outside if not u.startswith(("data:", "blob:", "about:"))] == []
    vis = "/component/stepwise.app.components.dag_view.stepwise_dag/vis-network.min.js"
    assert any(u.endswith(vis) for u in page.requests)


def test_hostile_task_text_is_shown_as_text(page):
    hostile = "<img src=x onerror=alert(1)>"
    page.get_by_text("Demo scenarios").wait_for(timeout=30_000)
    task = page.get_by_placeholder("What should the agent do?")
    task.fill(hostile)
    task.press("Control+Enter")
    page.wait_for_timeout(500)
    click(page, "Create task")
    wait_for_dag(page, lambda n: groups(n) == ["upcoming"])
    click(page, "Run step")  # Off-script, the demo model answers at once: the last step.
    (node,) = wait_for_dag(page, lambda n: groups(n) == ["completed"])
    assert f"input: {hostile}" in node["title"]  # The characters typed, not entities.
    page.get_by_text(hostile).first.wait_for(timeout=10_000)  # The card shows it as text.
    page.screenshot(path=ARTIFACTS / "stepper-hostile.png", full_page=True)
    assert page.dialogs == []  # No script ran.
