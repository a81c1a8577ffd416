"""Re-run on save: the user's agent file changes on disk, the watcher sees it, the registry
reloads, and the task re-runs from step N: steps before N from the recording, N on live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_core import AgentRunner
from agent_core.errors import UserError
from agent_core.llms import ScriptedLLM
from agent_core.recordings.rerun import rerun_from
from agent_core.spec import AgentSpec
from agent_core.store import InMemoryStore
from agent_core.user_code import UserCodeRegistry
from agent_core.user_code.watch import CodeWatcher, registry_files
from tests.agent_core._user_projects import isolated_imports  # noqa: F401 - a fixture
from tests.agent_core.conftest import action, answer
from tests.agent_core.recordings._projects import write_agent

pytestmark = pytest.mark.usefixtures("isolated_imports")


def _save(path: Path, old: str, new: str) -> None:
    """Save an edit as an editor would; the clock moves on so the mtime surely differs."""
    stat = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def _recorded(project: Path, store: InMemoryStore) -> tuple[UserCodeRegistry, str, str]:
    target = write_agent(project)
    registry = UserCodeRegistry(project=project, agents={"calc": target})
    llm = ScriptedLLM(
        [action("add", '{"a": 1, "b": 2}'), action("add", '{"a": 3, "b": 0}'), answer("3")]
    )
    spec = AgentSpec.from_registry(registry, agent="calc")
    worker = registry.build_agent("calc", llm=llm, target=target)
    runner = AgentRunner(worker, store=store, spec=spec.model_dump(mode="json"))
    task_id = runner.create_task("What is 1 + 2?").task_id
    runner.run_until(task_id)
    return registry, target, task_id


def _results(runner: AgentRunner, task_id: str) -> list[str]:
    return [call.content for o in runner.get_completed_steps(task_id) for call in o.tool_calls]


def test_the_watcher_sees_a_saved_agent_file_and_the_reload_takes_the_new_code(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    registry, _, _ = _recorded(tmp_path, store)
    reloads: list[list[Path]] = []

    def on_change(files: list[Path]) -> None:
        reloads.append(files)
        registry.reload()

    watcher = CodeWatcher(lambda: registry_files(registry), on_change)
    assert watcher.check() == []  # The first poll learns the files.
    assert watcher.check() == []
    generation = registry.generation

    _save(tmp_path / "agent.py", "return a + b\n", "return a + b + 1\n")

    assert watcher.check() == [(tmp_path / "agent.py").resolve()]
    assert reloads and registry.generation != generation
    assert watcher.check() == []  # Once per save.
    # After the reload the user modules are forgotten: the file stays watched all the same.
    _save(tmp_path / "agent.py", "return a + b + 1\n", "return a + b + 2\n")
    assert watcher.check() == [(tmp_path / "agent.py").resolve()]


def test_rerun_from_step_2_answers_step_1_from_the_recording_and_runs_step_2_on_the_new_code(
    tmp_path: Path,
) -> None:
    store = InMemoryStore()
    registry, target, task_id = _recorded(tmp_path, store)
    _save(tmp_path / "agent.py", "return a + b\n", "return a + b + 1\n")
    registry.reload()

    rerun = rerun_from(store, task_id, 2, store=store, registry=registry, project=tmp_path)

    assert (rerun.from_step, rerun.replayed) == (2, 1)
    live = ScriptedLLM([action("add", '{"a": 3, "b": 0}'), answer("4")])
    worker = registry.build_agent("calc", llm=live, target=target)
    runner = AgentRunner(worker, store=store)
    # Step 1 is the recording's, though add now returns 4 for it: no tool ran, no model call.
    assert _results(runner, rerun.task_id) == ["3"]
    runner.run_until(rerun.task_id)
    assert _results(runner, rerun.task_id) == ["3", "4"]  # Step 2 ran add as it is now.
    assert live.exhausted  # Both live replies went to steps 2 and 3, none to step 1.
    assert runner.get_task(rerun.task_id).spec["agent"] == "calc"  # Built from the new code.


def test_rerun_from_a_step_the_task_lacks_is_refused(tmp_path: Path) -> None:
    store = InMemoryStore()
    registry, _, task_id = _recorded(tmp_path, store)
    with pytest.raises(UserError) as caught:
        rerun_from(store, task_id, 9, store=store, registry=registry, project=tmp_path)
    assert caught.value.code == "rerun_step_invalid"
