"""A user's compiled LangGraph graph in `stepwise ui`, in real headless Chromium.

The graph is what a user writes (tests/agent_core/adapters/test_langgraph.py's `reviewed`):
an "agent" node on a LangChain chat model, a prebuilt `ToolNode` with two tools, and a
reviewer node that calls `interrupt()`. One Run step click runs one super-step; the last tool
step is undone and run again; the server is restarted on the same database from another
folder, without the flags, and the interrupt is answered there.
"""

from __future__ import annotations

from tests.agent_core._user_projects import write_project
from tests.agent_core.adapters.test_langgraph import GRAPH_FILE, QUESTION

from ._your_agent import create_task, reopen_elsewhere, run_one
from .conftest import ARTIFACTS
from .test_stepper_in_browser import click, groups, wait_for_dag
from .test_user_code_in_browser import browser, open_page, server  # noqa: F401


def completed_labels(nodes) -> list[str]:
    """The completed steps' DAG labels in step order (each label starts with its number)."""
    done = [node["label"] for node in nodes if node["status"] == "completed"]
    return sorted(done, key=lambda label: int(label.split(" · ")[0]))


def test_a_langgraph_agent_stepped_in_the_browser_across_a_restart(server, browser, tmp_path):  # noqa: F811
    project = write_project(tmp_path / "project", {"graph.py": GRAPH_FILE})
    url = server.start(project, "--agent", "lg=graph.py:reviewed")
    page = open_page(browser, url)
    first = create_task(page, "lg", QUESTION)
    assert first["label"].startswith("agent")  # The node's own name.

    # One click per super-step: agent, tools, agent, tools.
    for done in range(1, 5):
        run_one(page, done)
    page.get_by_text("add -> 405").first.wait_for(timeout=10_000)

    # Undo the last tool step: one checkpoint back; the undone branch stays drawn.
    click(page, "Undo")
    nodes = wait_for_dag(page, lambda n: "undone" in groups(n))
    assert groups(nodes) == ["completed"] * 3 + ["undone", "upcoming"]
    run_one(page, 4)  # The tools node again, then the model answers.
    run_one(page, 5)
    page.get_by_text("The answer is 405.").first.wait_for(timeout=10_000)
    run_one(page, 6)  # The reviewer asks.
    page.get_by_text("Send this answer?").first.wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "langgraph-interrupt.png", full_page=True)

    # Restart on the same database, elsewhere, without the flags: the task records its target.
    page = reopen_elsewhere(server, browser, tmp_path, page)
    # The first page run after a start imports the user's graph (and LangGraph): slow.
    nodes = wait_for_dag(page, lambda n: groups(n).count("completed") == 6, timeout=120)
    assert "Read only" not in page.content()
    page.get_by_text("Send this answer?").first.wait_for(timeout=10_000)

    answer = page.get_by_placeholder("(your answer)")
    answer.fill("Yes, send it.")
    answer.press("Control+Enter")
    page.wait_for_timeout(500)
    click(page, "Run step")
    nodes = wait_for_dag(page, lambda n: groups(n).count("completed") == 7)
    assert "upcoming" not in groups(nodes)
    steps = completed_labels(nodes)
    assert steps[0].startswith("1 · agent: llm: calls multiply")
    assert steps[1] == "2 · multiply(121, 3) → 363"
    assert steps[3] == "4 · add(363, 42) → 405"
    assert steps[4] == "5 · agent: llm: The answer is 405."
    assert steps[5].startswith("6 · review: ") and "asks" in steps[5]
    assert steps[6] == '7 · review: answer: "Yes, send it."'
    click(page, "Finalize")
    page.get_by_text("Task finished.").wait_for(timeout=10_000)
    page.get_by_text("Sent. The reviewer said: Yes, send it.").first.wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "langgraph-after-restart.png", full_page=True)
