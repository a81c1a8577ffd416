"""A pydantic-ai agent in `stepwise ui`, in real headless Chromium.

The agent lives in a tmp project file: pydantic-ai's `FunctionModel`, answering from what each
request holds, with an `add` tool and a `multiply` tool that `requires_approval`. It is
registered with `--agent` (the command hands it to the app as STEPWISE_AGENTS). One Run step
click per step: the model request, the add call, the next request, then multiply, approved with
edited arguments; that tool step is undone and approved again; the app is restarted on the same
database, from another folder without the flags, and the last model request answers there.
The agent's file logs what its model and tools did (the app runs it in another process), so
the test sees that every scripted reply was used and that multiply got the edited arguments.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._your_agent import approve_edited, create_task, labels, reopen_elsewhere, run_one
from .conftest import ARTIFACTS
from .test_stepper_in_browser import click, groups, wait_for_dag
from .test_user_code_in_browser import browser, open_page, server  # noqa: F401

QUESTION = "What is (2 + 3) * 10?"

AGENT = '''
import json
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

LOG = Path(__file__).with_name("log.jsonl")


def _log(**entry):
    with LOG.open("a") as log:
        log.write(json.dumps(entry) + "\\n")


def model(messages, info: AgentInfo):
    returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if not returns:
        _log(reply="add")
        return ModelResponse(parts=[
            TextPart("First I add 2 and 3."),
            ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c-add"),
        ])
    if returns[-1].tool_name == "add":
        _log(reply="multiply")
        return ModelResponse(parts=[
            ToolCallPart("multiply", {"a": returns[-1].content, "b": 10}, tool_call_id="c-mul")
        ])
    _log(reply="answer")
    return ModelResponse(parts=[TextPart(f"The answer is {returns[-1].content}.")])


agent = Agent(FunctionModel(model), system_prompt="You are a careful calculator.")


@agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two integers."""
    _log(tool="add", args=[a, b])
    return a + b


@agent.tool_plain(requires_approval=True)
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    _log(tool="multiply", args=[a, b])
    return a * b
'''


def log_of(project: Path) -> list[dict]:
    return [json.loads(line) for line in (project / "log.jsonl").read_text().splitlines()]


def test_a_pydantic_ai_agent_stepped_in_the_browser_across_a_restart(
    server,  # noqa: F811
    browser,  # noqa: F811
    tmp_path,
):
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc_agent.py").write_text(AGENT, encoding="utf-8")
    url = server.start(project, "--agent", f"pa={project / 'calc_agent.py'}:agent")
    page = open_page(browser, url)
    first = create_task(page, "pa", QUESTION)
    assert "model request" in first["label"]  # pydantic-ai's own word for the node.

    # The model request, its add call, the next request: one click each.
    nodes = run_one(page, 1)
    assert "add(2, 3)" in labels(nodes)  # The call it queued, not run yet.
    page.get_by_text("First I add 2 and 3.").first.wait_for(timeout=10_000)
    run_one(page, 2)
    # What the model sees next is the request pydantic-ai builds, its system prompt included.
    page.get_by_text("What the model sees next").click()
    page.get_by_text("You are a careful calculator.").first.wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "pydantic-ai-next-request.png", full_page=True)
    run_one(page, 3)

    # multiply requires approval: edit its arguments, then approve it.
    approve_edited(
        page, {"a": 5, "b": 7}, screenshot=ARTIFACTS / "pydantic-ai-approval.png", done=4
    )
    assert log_of(project)[-1] == {"tool": "multiply", "args": [5, 7]}

    # Undo that tool step: it waits for approval again, as edited; approve it once more.
    click(page, "Undo")
    nodes = wait_for_dag(page, lambda n: "undone" in groups(n))
    assert groups(nodes) == ["awaiting_approval", *["completed"] * 3, "undone"]
    click(page, "Approve and run step")
    wait_for_dag(page, lambda n: groups(n).count("completed") == 4)

    # Restart on the same database, elsewhere, without the flags: the task records its target.
    page = reopen_elsewhere(server, browser, tmp_path, page)
    wait_for_dag(page, lambda n: groups(n).count("completed") == 4)
    assert "Read only" not in page.content()
    run_one(page, 5)
    page.get_by_text("The answer is 35.").first.wait_for(timeout=10_000)
    click(page, "Finalize")
    page.get_by_text("Task finished.").wait_for(timeout=10_000)
    page.screenshot(path=ARTIFACTS / "pydantic-ai-after-restart.png", full_page=True)

    log = log_of(project)
    assert [entry["reply"] for entry in log if "reply" in entry] == ["add", "multiply", "answer"]
    assert [entry for entry in log if "tool" in entry] == [
        {"tool": "add", "args": [2, 3]},
        {"tool": "multiply", "args": [5, 7]},
        {"tool": "multiply", "args": [5, 7]},
    ]
