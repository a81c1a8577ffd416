"""Re-run on save in the app: the user's agent file changes on disk, the Stepper offers
"Re-run from step N", and the new task has step 1 from the recording and step N upcoming,
run on the new code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_core import user_code
from agent_core.demos import ARITHMETIC_TASK
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore
from agent_core.user_code.registry import AGENTS_ENV
from stepwise.app.components.code_watch import RELOAD_ENV
from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.recordings._projects import write_agent

from .conftest import stored
from .test_stepper import TASK_KEY, ok

pytestmark = pytest.mark.usefixtures("isolated_imports")


def _save(path: Path, old: str, new: str) -> None:
    """Save an edit as an editor would; the clock moves on so the mtime surely differs."""
    stat = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def _recorded(project: Path, db_path: Path) -> str:
    """Two steps of the arithmetic task on the project's agent: multiply, then add."""
    registry = user_code.default_registry()
    spec = AgentSpec.from_registry(registry, agent="calc")
    store = SQLiteStore(db_path)
    try:
        runner = spec.build_runner(store=store, registry=registry)
        task_id = runner.create_task(ARITHMETIC_TASK).task_id
        runner.run_until(task_id, max_steps=2)
    finally:
        store.close()
    return task_id


def _results(db_path: Path, task_id: str) -> list[str]:
    state = stored(db_path, task_id)
    return [call.content for s in state.completed for call in state.outputs[s].tool_calls]


@pytest.fixture
def project(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose agent file is registered as with `stepwise ui --agent`, reload on."""
    target = write_agent(app_env)
    monkeypatch.setenv(AGENTS_ENV, json.dumps({"calc": target}))
    monkeypatch.setenv(RELOAD_ENV, "1")
    return app_env


def test_a_saved_agent_file_offers_a_rerun_whose_step_2_runs_on_the_new_code(
    project: Path, db_path: Path
) -> None:
    task = _recorded(project, db_path)
    assert _results(db_path, task) == ["363", "405"]
    app = AppTest.from_file(str(Path(__file__).parents[2] / "app.py"), default_timeout=30)
    app.session_state[TASK_KEY] = task
    ok(app.run())
    assert not [b for b in app.button if b.key == f"rerun-{task}"]  # Nothing saved yet.

    _save(project / "agent.py", "return a + b\n", "return a + b + 1\n")
    ok(app.run())

    assert "agent.py" in [t.value for t in app.text]
    assert app.number_input(key=f"rerun-step-{task}").value == 1  # Step 1 called multiply.
    app.number_input(key=f"rerun-step-{task}").set_value(2).run()
    app.button(key=f"rerun-{task}").click().run()
    ok(app)

    rerun = app.session_state[TASK_KEY]
    assert rerun != task
    state = stored(db_path, rerun)
    assert len(state.completed) == 1 and len(state.queue) == 1  # Step 2 is upcoming.
    assert _results(db_path, rerun) == ["363"]  # From the recording: no tool ran.
    assert not [b for b in app.button if b.key == f"rerun-{rerun}"]  # Its steps are new.

    (run,) = [b for b in app.button if b.key and b.key.startswith("run-")]  # Step 2's Run.
    ok(run.click().run())

    assert _results(db_path, rerun) == ["363", "406"]  # add as saved: a + b + 1.
    assert _results(db_path, task) == ["363", "405"]  # The recorded task is as it was.
