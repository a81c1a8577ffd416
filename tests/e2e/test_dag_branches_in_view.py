"""The DAG keeps undone branches in view: siblings of the newest step are not cut off.

Several undo-and-rerun rounds put branches side by side, wider than the Stepper's graph
column; when the graph zooms in to keep labels readable, every step on the newest step's
row must stay inside the frame (centring on the newest step alone cut them off on the left).
"""

from __future__ import annotations

from .test_dag_click_in_browser import Task, browse, dag_frame, panel_url, task  # noqa: F401

_ROW_IN_VIEW = """() => {
    const dag = window.stepwiseDag, net = dag.network;
    const ids = dag.nodes.getIds();
    const newest = ids[ids.length - 1];
    const y = net.getPositions([newest])[newest].y;
    const width = document.getElementById("graph").clientWidth;
    const row = ids.filter((id) => Math.abs(net.getPositions([id])[id].y - y) < 1);
    return row.map((id) => {
        const box = net.getBoundingBox(id);
        const left = net.canvasToDOM({x: box.left, y: y}).x;
        const right = net.canvasToDOM({x: box.right, y: y}).x;
        return [id, left >= -1 && right <= width + 1, left, right, width];
    });
}"""


def test_undone_branches_beside_the_newest_step_stay_in_view(chromium_path, panel_url, task):  # noqa: F811
    runner, task_id = task.runner, task.task_id
    runner.run_until(task_id)
    first = task.state().completed[0]
    for _ in range(4):  # Four more runs from step 1: five branches side by side.
        while task.state().completed != [first]:
            runner.undo_step(task_id)
        runner.run_until(task_id)
    with browse(chromium_path, panel_url) as page:
        frame = dag_frame(page, lambda nodes: len(nodes) == 11)
        page.wait_for_timeout(500)
        page.get_by_text("Step DAG").scroll_into_view_if_needed()
        page.screenshot(path="tests/e2e/artifacts/dag-branches-in-view.png")
        row = frame.evaluate(_ROW_IN_VIEW)
        assert len(row) >= 5, row  # the branches do share the newest step's row
        assert all(inside for _, inside, *_ in row), row
