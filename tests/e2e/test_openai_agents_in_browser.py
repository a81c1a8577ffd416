"""An OpenAI Agents SDK agent in `stepwise ui`, in real headless Chromium.

The agent is examples/openai_agents_agent.py, copied into a tmp project and registered with
`--agent`, its model pointed at the tests' loopback OpenAI server through the environment the
example reads (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL). One Run step click per step: a
model turn, the word count, a turn, then the `needs_approval` save, approved with edited
arguments; that tool step is undone and approved again; the app is restarted on the same
database, from another folder without the flags, and the last turn answers there.
"""

from __future__ import annotations

import shutil

import pytest

from tests.llm_servers import OpenAIServer, Reply, ReplyToolCall

from ._your_agent import approve_edited, create_task, labels, reopen_elsewhere, run_one
from .conftest import ARTIFACTS, ROOT
from .test_stepper_in_browser import click, groups, wait_for_dag
from .test_user_code_in_browser import browser, open_page, server  # noqa: F401

DRAFT = "Llamas saw the sea today and would not leave the beach"
QUESTION = f"Keep this as a note: {DRAFT}"


@pytest.fixture
def model_server(monkeypatch, tmp_path):
    with OpenAIServer(api_key="test") as running:
        # The example reads these; the app's process inherits them (the root conftest cleared
        # them for the test itself).
        monkeypatch.setenv("OPENAI_BASE_URL", f"{running.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")
        monkeypatch.setenv("NOTES_DIR", str(tmp_path / "notes"))
        yield running
        assert running.remaining == 0, "the agent did not use every scripted reply"


def test_an_agents_sdk_agent_stepped_in_the_browser_across_a_restart(
    model_server,
    server,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    model_server.script(
        Reply(tool_calls=[ReplyToolCall("word_count", {"text": DRAFT}, id="w1")]),
        Reply(
            text="Saving it.",
            tool_calls=[ReplyToolCall("save_note", {"title": "Sea", "text": DRAFT}, id="s1")],
        ),
        Reply(text="Saved your 11-word note about llamas at the sea."),
    )
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "examples" / "openai_agents_agent.py", project)
    url = server.start(project, "--agent", "helper=openai_agents_agent.py:agent")
    page = open_page(browser, url)
    first = create_task(page, "helper", QUESTION)
    assert "Note taker turn 1" in first["label"]  # The agent's own words for the step.

    # A turn, then its word_count call, then the next turn, one click each.
    nodes = run_one(page, 1)
    assert any("word_count" in label for label in labels(nodes))
    run_one(page, 2)
    run_one(page, 3)

    # The save waits for approval: edit its arguments, then approve it.
    edited = {"title": "Llamas by the sea", "text": DRAFT}
    approve_edited(page, edited, screenshot=ARTIFACTS / "openai-agents-approval.png", done=4)
    page.get_by_text("saved llamas-by-the-sea.md (11 words)").first.wait_for(timeout=10_000)

    # Undo that tool step: it is upcoming again, awaiting approval; approve it as it was edited.
    click(page, "Undo")
    nodes = wait_for_dag(page, lambda n: "undone" in groups(n))
    assert groups(nodes) == ["awaiting_approval", *["completed"] * 3, "undone", "upcoming"]
    click(page, "Approve and run step")
    wait_for_dag(page, lambda n: groups(n).count("completed") == 4)
    assert (tmp_path / "notes" / "llamas-by-the-sea.md").exists()

    # Restart on the same database, elsewhere, without the flags: the task records its target.
    page = reopen_elsewhere(server, browser, tmp_path, page)
    wait_for_dag(page, lambda n: groups(n).count("completed") == 4)
    assert "Read only" not in page.content()
    nodes = run_one(page, 5)
    page.get_by_text("Saved your 11-word note about llamas at the sea.").first.wait_for(
        timeout=10_000
    )
    click(page, "Finalize")
    page.get_by_text("Task finished.").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "openai-agents-after-restart.png", full_page=True)

    # Every turn streamed (the app listens), and the last read the edited call's result, told
    # that the person changed it.
    assert [r.json.get("stream") for r in model_server.model_requests] == [True] * 3
    last = model_server.model_requests[-1].json["messages"][-1]
    assert last["role"] == "tool" and last["tool_call_id"] == "s1"
    assert last["content"].startswith("(The user changed this call to save_note with")
    assert last["content"].endswith("saved llamas-by-the-sea.md (11 words)")
