"""A program attached with `stepwise.session` waits at `pause_before`; a person approves the held
call with edited arguments in the app, in Chromium, and the program resumes with them (issue 31).

The program is a real process of its own on the app's SQLite file: the demo agent asked "What is
(121 * 3) + 42?" pauses before `multiply`. In the app the person edits the call to
`multiply(100, 3)` and approves it; the program sees the step done through its host's change feed,
runs on, and answers 342, not 405.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from agent_core.host import Host
from agent_core.types import StepKind, StepStatus

from .conftest import ARTIFACTS
from .test_stepper_in_browser import click

PROGRAM = """
import json, sys
import stepwise
from agent_core.spec import AgentSpec

with stepwise.session(db=sys.argv[1]) as s:
    result = s.run(AgentSpec(), "What is (121 * 3) + 42?", pause_before=["tool:multiply"])
print(json.dumps({"reason": result.reason, "response": result.response}))
"""


def _held_task(db: Path, program: subprocess.Popen, timeout: float = 60.0) -> str:
    """The program's task, once its `multiply` call waits as a tool step of its own."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert program.poll() is None, program.communicate()
        if db.exists():
            with Host(db) as host:
                for summary in host.store.list_tasks():
                    state = host.reader().get_task_state(summary.task_id)
                    held = [s for s in state.step_queue if s.kind is StepKind.TOOL]
                    if held and held[0].status is StepStatus.UPCOMING:
                        return summary.task_id
        time.sleep(0.3)
    raise AssertionError("the program never paused before multiply")


def test_a_program_paused_before_a_tool_resumes_with_the_arguments_approved_in_the_app(
    page, app_url: str, tmp_path: Path
) -> None:
    db = tmp_path / "e2e.db"  # The app's database (the `app_url` fixture's).
    program = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, str(db)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        task_id = _held_task(db, program)
        page.goto(f"{app_url}/?task={task_id}")
        arguments = page.get_by_label("Arguments").first
        arguments.wait_for(timeout=30_000)
        arguments.fill(json.dumps({"a": 100, "b": 3}))
        arguments.press("Control+Enter")
        page.wait_for_timeout(500)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "attach-held-call.png"), full_page=True)
        click(page, "Approve and run step")
        out, err = program.communicate(timeout=90)
    finally:
        if program.poll() is None:
            program.kill()
    assert program.returncode == 0, err[-2000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["reason"] == "answered"
    assert "342" in result["response"], result  # 100 * 3 + 42: the person's arguments ran.
