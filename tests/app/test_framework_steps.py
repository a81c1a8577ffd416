"""How the Stepper shows a framework's steps: their own names, the controls a framework cannot
honour greyed with the reason, a question the agent asks, and where a step's code raised."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.user_code.imports import forget_user_modules
from agent_core.user_code.registry import AGENTS_ENV, TOOLS_ENV
from tests.agent_core._user_projects import write_project

ROOT = Path(__file__).resolve().parents[2]
TASK_KEY = "stepwise.task_id"
REASON = "the graph runs its queued calls as they are"

# A worker as an adapter writes one: named steps, a locked tool call, then a node that asks
# the person a question (LangGraph's interrupt), then a node that raises in the user's code.
AGENT = """
from agent_core.types import INTERRUPT_KEY, StepAction, StepKind, TaskStep, TaskStepOutput
from agent_core.workers.base import BaseAgentWorker

LOCKED = {action: "the graph runs its queued calls as they are" for action in StepAction}


def check_stock(count):
    if count < 0:
        raise ValueError(f"stock cannot be {count}")
    return count


class Graph(BaseAgentWorker):
    def initialize_step(self, task, **kwargs):
        return TaskStep(task_id=task.task_id, input=task.input, name="plan <node>")

    async def arun_step(self, step, task, **kwargs):
        if step.name == "plan <node>":
            call = {"tool": "lookup", "args": {"sku": 7}}
            follow = step.get_next_step(
                kind=StepKind.TOOL, input=call, name="tools", cannot=LOCKED, needs_approval=True
            )
            return TaskStepOutput(output="planned", task_step=step, next_steps=[follow])
        if step.name == "tools":
            ask = step.get_next_step(
                kind=StepKind.HUMAN, name="confirm", step_state={INTERRUPT_KEY: {"q": "Ship it?"}}
            )
            return TaskStepOutput(output="looked up", task_step=step, next_steps=[ask])
        if step.name == "confirm":
            stock = step.get_next_step(name="stock", input=str(step.input))
            return TaskStepOutput(output=f"heard {step.input}", task_step=step, next_steps=[stock])
        check_stock(-1 if step.input == "yes" else 1)
        return TaskStepOutput(output="shipped", task_step=step, is_last=True)


agent = Graph()
"""


@pytest.fixture
def graph_app(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AppTest]:
    write_project(app_env, {"graph.py": AGENT})
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv(AGENTS_ENV, json.dumps({"graph": "graph.py:agent"}))
    monkeypatch.delenv(TOOLS_ENV, raising=False)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=60)
    yield at
    forget_user_modules()


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def button(at: AppTest, prefix: str):
    (found,) = [b for b in at.button if b.key and b.key.startswith(prefix)]
    return found


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_a_frameworks_steps_show_their_names_limits_question_and_traceback(graph_app):
    at = ok(graph_app.run())
    at.selectbox(key="form-worker").set_value("agent:graph").run()
    at.text_area(key="form-task").input("Ship order 7")
    ok(at.button(key="form-create").click().run())
    assert "Upcoming llm step · plan \\<node\\>" in markdown(at)  # Named, and escaped.

    ok(button(at, "run-").click().run())
    assert "Upcoming tool step · tools · tool call awaiting your approval" in markdown(at)
    (args,) = [t for t in at.text_area if t.key and t.key.startswith("args-")]
    assert args.disabled and REASON in args.help
    for prefix in ("reject-", "skip-"):
        found = button(at, prefix)
        assert found.disabled and found.help == f"Not for this step: {REASON}"
    assert not [t for t in at.text_input if t.key and t.key.startswith("reason-")]
    assert any(REASON in c.value for c in at.caption)  # Add feedback says why it is not here.
    assert not [t for t in at.text_input if t.key == "feedback-text"]

    ok(button(at, "run-").click().run())
    assert "Upcoming human step · confirm" in markdown(at)
    assert any(c.value == json.dumps({"q": "Ship it?"}, indent=2) for c in at.code)
    (answer,) = [t for t in at.text_area if t.key and t.key.startswith("input-")]
    answer.input("yes")
    ok(button(at, "run-").click().run())
    captions = [c.value for c in at.caption]
    assert {"The agent asked", "Your answer", "What the agent did with it"} <= set(captions)
    assert "Proposed by the agent" not in captions  # An answer is not an edit of a proposal.
    assert any(c.value == "heard yes" for c in at.code)

    ok(button(at, "run-").click().run())  # The stock node raises in the user's code.
    traces = [c.value for c in at.code if "Traceback" in c.value]
    assert len(traces) == 1 and "in check_stock" in traces[0]
    assert traces[0].rstrip().endswith("ValueError: stock cannot be -1")
    assert "agent_core/runtime" not in traces[0]
    assert at.session_state[TASK_KEY]


def test_the_form_says_a_frameworks_agent_runs_on_its_own_model(app_env, monkeypatch):
    write_project(app_env, {"calc.py": (ROOT / "examples" / "pydantic_ai_agent.py").read_text()})
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv(AGENTS_ENV, json.dumps({"calc": "calc.py:agent"}))
    monkeypatch.delenv(TOOLS_ENV, raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    try:
        ok(at.run())
        at.selectbox(key="form-worker").set_value("agent:calc").run()
        shown = [t.value for t in at.text]
        assert "Model: the pydantic-ai agent's own" in shown
        assert any("pydantic-ai agent runs on its own model" in c.value for c in at.caption)
        assert at.checkbox(key="form-approval")  # Offered for a framework's agent.
    finally:
        forget_user_modules()


def test_an_empty_answer_to_the_agents_question_is_refused_in_the_form(graph_app):
    """Issue 32: an empty interrupt answer became a failed attempt."""
    at = ok(graph_app.run())
    at.selectbox(key="form-worker").set_value("agent:graph").run()
    at.text_area(key="form-task").input("Ship order 7")
    ok(at.button(key="form-create").click().run())
    ok(button(at, "run-").click().run())
    ok(button(at, "run-").click().run())
    assert "Upcoming human step · confirm" in markdown(at)

    ok(button(at, "run-").click().run())  # Nothing typed.

    assert any("Type your answer" in str(e.value) for e in at.error)
    assert "failed" not in markdown(at) and "Upcoming human step · confirm" in markdown(at)


def test_a_step_that_failed_in_the_users_code_offers_reload_my_code_there(graph_app):
    """Issue 32: the failure said "Edit its input"; Reload my code was in New task only."""
    at = ok(graph_app.run())
    at.selectbox(key="form-worker").set_value("agent:graph").run()
    at.text_area(key="form-task").input("Ship order 7")
    ok(at.button(key="form-create").click().run())
    for _ in range(2):
        ok(button(at, "run-").click().run())
    (answer,) = [t for t in at.text_area if t.key and t.key.startswith("input-")]
    answer.input("yes")
    ok(button(at, "run-").click().run())
    ok(button(at, "run-").click().run())  # The stock node raises in the user's code.

    said = " ".join(str(e.value) for e in at.error)
    assert "failed in your code" in said and "Reload my code" in said
    assert "Edit its input and run it again" not in said
    ok(button(at, "reload-").click().run())
    shown = [str(e.value) for kind in ("success", "toast", "info") for e in at.get(kind)]
    assert any("Reloaded your agents and tools" in text for text in shown), shown
