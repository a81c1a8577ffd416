"""A task an attached program left mid-run, opened in the app (issue 31, attach).

`stepwise.session` records which program started a task and whether another face can rebuild
its agent (`ATTACHED`). An agent object nothing names cannot be rebuilt: the app says so, in
its own words from the error's code, instead of running the task's next step with the demo
agent.
"""

from __future__ import annotations

from pathlib import Path

from agent_core.host import Session
from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.tools import FunctionTool
from agent_core.workers import ReActAgentWorker


def refund(order: int) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _left_mid_run(db_path: Path, agent: object) -> str:
    """Run `agent` as a user's program does, pausing before step 1; nobody comes, it returns."""
    with Session(db_path, wait_timeout=0.3) as session:
        result = session.run(agent, "Refund order 42", pause_before=["step:1"])
    assert result.reason == "abandoned", result
    return result.task_id


def test_a_task_whose_agent_lives_in_its_program_says_so_and_runs_nothing(app, db_path):
    llm = ScriptedLLM(['Thought: refund.\nAction: refund\nAction Input: {"order": 42}'])
    worker = ReActAgentWorker([FunctionTool.from_defaults(fn=refund)], llm)
    task_id = _left_mid_run(db_path, worker)

    app.query_params["task"] = task_id
    app.run()

    assert not app.exception, app.exception
    shown = " ".join(w.value for w in app.warning)
    assert "lives in the program that started it" in shown, shown
    assert "ReActAgentWorker" in shown and "Run that program again" in shown
    assert "NAME\\=FILE\\:FUNCTION" in shown  # --agent NAME=FILE:FUNCTION, escaped.
    assert not [b for b in app.button if (b.key or "").startswith("run-")]  # Nothing to run.
    assert any("the program that started it runs it" in c.value for c in app.caption)


def test_a_task_whose_agent_is_a_spec_is_carried_on_in_the_app(app, db_path):
    task_id = _left_mid_run(db_path, AgentSpec())

    app.query_params["task"] = task_id
    app.run()

    assert not app.exception, app.exception
    assert not [w for w in app.warning if "lives in the program" in w.value]
    assert [b for b in app.button if (b.key or "").startswith("run-")]
