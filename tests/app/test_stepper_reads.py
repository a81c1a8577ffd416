"""What a Run step costs the Stepper in reads (issue 22, item 10): the task is not loaded from
the store again after its own runner ran the step (a 500-step task took 30-100 ms a load)."""

from __future__ import annotations

from pathlib import Path

from agent_core.llms import ScriptedLLM
from agent_core.spec import AgentSpec
from agent_core.store import SQLiteStore

_ACTION = 'Thought: again.\nAction: add\nAction Input: {"a": 1, "b": 2}'


def _task(db_path: Path, workspace: Path) -> str:
    """A demo ReAct task of 20 steps whose spec is not the reader's (its own runner)."""
    spec = AgentSpec(worker="react", tools=("arithmetic",), max_iterations=100)
    spec = spec.model_copy(update={"name": "own-runner", "workspace": str(workspace)})
    store = SQLiteStore(db_path)
    runner = spec.build_runner(store=store)
    runner.agent_worker.llm = ScriptedLLM([_ACTION] * 20)  # type: ignore[attr-defined]
    task_id = runner.create_task("Add 1 and 2, again and again.").task_id
    while len(runner.get_task_state(task_id).completed) < 20:
        runner.run_step(task_id)
    store.close()
    return task_id


def test_run_step_loads_no_task_from_the_store(app, db_path, tmp_path, monkeypatch):
    task_id = _task(db_path, tmp_path / "workspaces")
    app.query_params["task"] = task_id
    app.run()
    assert not app.exception, app.exception
    loads: list[str] = []
    real = SQLiteStore.load_task

    def counted(self: SQLiteStore, task: str):
        loads.append(task)
        return real(self, task)

    monkeypatch.setattr(SQLiteStore, "load_task", counted)

    run = next(b for b in app.button if (b.key or "").startswith("run-"))
    run.click().run()

    assert not app.exception, app.exception
    assert loads == []  # Its runner's copy was current: no reload of the whole task.
    ran = SQLiteStore(db_path).load_task(task_id)
    assert loads == [task_id]  # The count works: the load just above was counted.
    assert ran is not None and len(ran.completed) == 21  # The step ran.
